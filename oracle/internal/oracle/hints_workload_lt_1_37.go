//go:build !kube_ge_1_37

package oracle

import (
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
)

// workloadResource: before v1.37 the hints verb takes no Workload API object (v1.35's
// Workload and v1.36's v1alpha2 PodGroup events are not drawn yet).
func workloadResource(runtime.Object) (fwk.EventResource, bool) {
	return "", false
}
