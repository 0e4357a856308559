//go:build kube_ge_1_36

package oracle

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
)

// addGroupPods feeds the Pods of objs to c, the scheduler cache serving as PodGroupManager
// (v1.36 and later), as kube-scheduler's Pod informer feeds it: assigned Pods added, pending
// ones as members of their pod groups. groupOptions of each release builds c.
func addGroupPods(ctx context.Context, c internalcache.Cache, objs []runtime.Object) {
	for _, o := range objs {
		if p, ok := o.(*v1.Pod); ok {
			if p.Spec.NodeName != "" {
				_ = c.AddPod(klog.FromContext(ctx), p)
			} else {
				c.AddPodGroupMember(p)
			}
		}
	}
}
