//go:build !kube_ge_1_35

package oracle

import (
	"k8s.io/client-go/informers"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
)

// wireExtendedResources does nothing at v1.34 (its DRA manager has no extended-resource
// cache; DRAExtendedResource is alpha there).
func wireExtendedResources(*dynamicresources.DefaultDRAManager, informers.SharedInformerFactory) error {
	return nil
}
