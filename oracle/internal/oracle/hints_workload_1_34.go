//go:build !kube_ge_1_35

package oracle

import (
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
)

// workloadResource: v1.34 serves no Workload API (scheduling.k8s.io/v1alpha1 Workload
// arrives in v1.35), so the hints verb takes no such object.
func workloadResource(runtime.Object) (fwk.EventResource, bool) {
	return "", false
}

// unscheduledPodAddMoves: v1.34's addPodToSchedulingQueue raises no event for an unbound
// Pod's add.
func unscheduledPodAddMoves() bool {
	return false
}
