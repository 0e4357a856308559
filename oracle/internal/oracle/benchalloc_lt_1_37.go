//go:build !kube_ge_1_37

package oracle

// allocResourceClaims is run by v1.37's kube-oracle only (benchalloc_1_37.go): the op is
// v1.37's scheduler_perf's, and the structured allocator's options differ per release.

import (
	"context"
	"errors"
)

// allocResourceClaimsSupported: this release's kube-oracle refuses allocResourceClaims.
const allocResourceClaimsSupported = false

func (w *benchWorld) allocResourceClaims(context.Context, *BenchOp) error {
	return errors.New("allocResourceClaims is run by kube-oracle v1.37 only")
}
