package oracle

// The feature gates of a `kube-oracle bench` workload: its case's featureGates overridden
// by its own, set on upstream's default feature gate before the workload's scheduler is
// built and restored after it, as scheduler_perf's setupTestCase does with
// featuregatetesting (the same package here, driven through gateScope in place of a
// testing.TB, so AllAlpha/AllBeta, dependencies and locked gates behave as upstream's).

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/pkg/features"
)

// gateScope is the part of testing.TB featuregatetesting uses: its Cleanup functions are
// kept to restore the gates, its errors collected, Fatal ends the setting (recovered by
// setGates).
type gateScope struct {
	cleanups []func()
	errs     []string
}

type gateFatal struct{}

func (s *gateScope) Cleanup(f func())    { s.cleanups = append(s.cleanups, f) }
func (s *gateScope) Logf(string, ...any) {}
func (s *gateScope) Error(args ...any)   { s.errs = append(s.errs, fmt.Sprint(args...)) }
func (s *gateScope) Errorf(format string, a ...any) {
	s.errs = append(s.errs, fmt.Sprintf(format, a...))
}
func (s *gateScope) Fatal(args ...any)              { s.Error(args...); panic(gateFatal{}) }
func (s *gateScope) Fatalf(format string, a ...any) { s.Errorf(format, a...); panic(gateFatal{}) }
func (s *gateScope) Helper()                        {}
func (s *gateScope) Name() string                   { return "kube-oracle bench" }
func (s *gateScope) restore() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
	s.cleanups = nil
}

// checkGates rejects a gate upstream's default feature gate does not know (an input error,
// found before any workload runs).
func checkGates(gates map[string]bool) error {
	known := sets.New[string]("AllAlpha", "AllBeta")
	for f := range utilfeature.DefaultFeatureGate.(featuregate.MutableFeatureGate).GetAll() {
		known.Insert(string(f))
	}
	var unknown []string
	for g := range gates {
		if !known.Has(g) {
			unknown = append(unknown, g)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("featureGates: unknown to this release: %s", strings.Join(unknown, ", "))
	}
	return nil
}

// setGates sets gates (with the emulation version the release's scheduler_perf picks for
// them, if any) and returns what restores the previous ones.
func setGates(gates map[string]bool) (restore func(), err error) {
	s := &gateScope{}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(gateFatal); !ok {
				panic(r)
			}
		}
		if len(s.errs) > 0 {
			s.restore()
			restore, err = nil, errors.New("featureGates: "+strings.Join(s.errs, "; "))
		}
	}()
	if len(gates) == 0 {
		return s.restore, nil
	}
	overrides := map[featuregate.Feature]bool{}
	for g, v := range gates {
		overrides[featuregate.Feature(g)] = v
	}
	setGateOverrides(s, overrides)
	return s.restore, nil
}

// draEnabled tells whether DynamicResourceAllocation is on (scheduler_perf then runs the
// resourceclaim controller).
func draEnabled() bool {
	return utilfeature.DefaultFeatureGate.Enabled(features.DynamicResourceAllocation)
}
