//go:build kube_ge_1_35

package oracle

import (
	"k8s.io/client-go/informers"
	"k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// wireExtendedResources feeds the DRA manager's extended-resource cache (DRAExtendedResource,
// v1.35+) from the DeviceClass informer, as scheduler.New's addAllEventHandlers does: without
// it the explain verb's frameworks would see no DeviceClass behind any extended resource.
func wireExtendedResources(m *dynamicresources.DefaultDRAManager, factory informers.SharedInformerFactory) error {
	if !utilfeature.DefaultFeatureGate.Enabled(features.DRAExtendedResource) {
		return nil
	}
	c, ok := m.DeviceClassResolver().(*extendedresourcecache.ExtendedResourceCache)
	if !ok || c == nil {
		return nil
	}
	_, err := factory.Resource().V1().DeviceClasses().Informer().AddEventHandler(c)
	return err
}
