//go:build kube_ge_1_37

package oracle

import (
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// podSchedulingPropertiesChange is upstream's PodSchedulingPropertiesChange; target: the
// update is the queue's own Pod's (the TargetPod resource from v1.37).
func podSchedulingPropertiesChange(newPod, oldPod *v1.Pod, target bool) []fwk.ClusterEvent {
	return framework.PodSchedulingPropertiesChange(newPod, oldPod, target)
}
