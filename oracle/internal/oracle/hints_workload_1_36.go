//go:build kube_ge_1_36 && !kube_ge_1_37

package oracle

import (
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
)

// workloadResource is the event resource of a Workload API object as v1.36's scheduler
// informs on it (eventhandlers.go: buildEvtResHandler on scheduling.k8s.io/v1alpha2
// PodGroups, GenericWorkload on), false for any other object.
func workloadResource(obj runtime.Object) (fwk.EventResource, bool) {
	if _, ok := obj.(*schedulingv1alpha2.PodGroup); ok {
		return fwk.PodGroup, true
	}
	return "", false
}

// unscheduledPodAddMoves tells whether addPodToSchedulingQueue moves the unschedulable Pods
// on an unbound Pod's add (framework.EventUnscheduledPodAdd): under GangScheduling (a
// member may complete its gang).
func unscheduledPodAddMoves() bool {
	return utilfeature.DefaultFeatureGate.Enabled(features.GangScheduling)
}
