//go:build !kube_ge_1_37

package oracle

import (
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// podSchedulingPropertiesChange is upstream's PodSchedulingPropertiesChange (before v1.37 it
// does not tell the queue's target Pod apart: target is unused).
func podSchedulingPropertiesChange(newPod, oldPod *v1.Pod, target bool) []fwk.ClusterEvent {
	return framework.PodSchedulingPropertiesChange(newPod, oldPod)
}
