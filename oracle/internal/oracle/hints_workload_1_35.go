//go:build kube_ge_1_35 && !kube_ge_1_36

package oracle

import (
	schedulingv1alpha1 "k8s.io/api/scheduling/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
)

// workloadResource is the event resource of a Workload API object as v1.35's scheduler
// informs on it (eventhandlers.go: buildEvtResHandler on scheduling.k8s.io/v1alpha1
// Workloads, GenericWorkload on), false for any other object.
func workloadResource(obj runtime.Object) (fwk.EventResource, bool) {
	if _, ok := obj.(*schedulingv1alpha1.Workload); ok {
		return fwk.Workload, true
	}
	return "", false
}

// unscheduledPodAddMoves tells whether addPodToSchedulingQueue moves the unschedulable Pods
// on an unbound Pod's add (framework.EventUnscheduledPodAdd): under GangScheduling (a
// member may complete its gang).
func unscheduledPodAddMoves() bool {
	return utilfeature.DefaultFeatureGate.Enabled(features.GangScheduling)
}
