//go:build !kube_ge_1_35

package oracle

import (
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
)

// setGateOverrides sets each gate as v1.34's scheduler_perf does (SetFeatureGateDuringTest
// one gate at a time).
func setGateOverrides(s *gateScope, gates map[featuregate.Feature]bool) {
	for f, v := range gates {
		featuregatetesting.SetFeatureGateDuringTest(s, utilfeature.DefaultFeatureGate, f, v)
	}
}
