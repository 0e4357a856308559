//go:build kube_ge_1_35

package oracle

import (
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
)

// setGateOverrides sets the gates as scheduler_perf's setupTestCase does from v1.35 on
// (SetFeatureGatesDuringTest, all at once), after the emulation version the release picks
// for them (benchEmulationVersion: v1.37 emulates v1.36 when NodeDeclaredFeatures, locked
// on at v1.37, is turned off).
func setGateOverrides(s *gateScope, gates map[featuregate.Feature]bool) {
	if v := benchEmulationVersion(gates); v != nil {
		featuregatetesting.SetFeatureGateEmulationVersionDuringTest(s, utilfeature.DefaultFeatureGate, v)
	}
	featuregatetesting.SetFeatureGatesDuringTest(s, utilfeature.DefaultFeatureGate, gates)
}
