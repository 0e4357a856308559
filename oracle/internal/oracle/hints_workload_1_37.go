//go:build kube_ge_1_37

package oracle

import (
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
)

// workloadResource is the event resource of a Workload API object as v1.37's scheduler
// informs on it (eventhandlers.go: addPodGroup / updatePodGroup / deletePodGroup on
// scheduling.k8s.io/v1beta1 PodGroups, the CompositePodGroup handlers on v1alpha3), false
// for any other object.
func workloadResource(obj runtime.Object) (fwk.EventResource, bool) {
	switch obj.(type) {
	case *schedulingv1beta1.PodGroup:
		return fwk.PodGroup, true
	case *schedulingv1alpha3.CompositePodGroup:
		return fwk.CompositePodGroup, true
	}
	return "", false
}

// unscheduledPodAddMoves tells whether addPodToSchedulingQueue moves the unschedulable Pods
// on an unbound Pod's add (framework.EventUnscheduledPodAdd): under GenericWorkload.
func unscheduledPodAddMoves() bool {
	return utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload)
}
