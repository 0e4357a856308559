//go:build kube_ge_1_36 && !kube_ge_1_37

package oracle

import (
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
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
