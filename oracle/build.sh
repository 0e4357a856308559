#!/usr/bin/env bash
# Builds upstream Kubernetes v1.34 (the modules pinned in go.mod) into oracle/bin/:
#   kube-oracle     upstream's framework answering kubesched's explain (JSON on stdin)
#   kube-apiserver  k8s.io/kubernetes/cmd/kube-apiserver (a `tool` line in go.mod keeps its deps)
#   kube-scheduler  k8s.io/kubernetes/cmd/kube-scheduler (likewise), upstream's scheduler behind
#                   the API server for benchmarks/upstream_side_by_side.py
#   etcd            oracle/cmd/etcd: go.etcd.io/etcd/server/v3/embed v3.6.4, the etcd version
#                   k8s.io/kubernetes v1.34.4's own go.mod requires (its client speaks to it).
#                   Not Debian's etcd-server: bookworm ships 3.4.23, older than the 3.4.31 /
#                   3.5.13 whose watch progress notifications v1.34's default-on consistent
#                   reads from the watch cache rely on; and a package would tie CI to apt.
# oracle/controlplane.sh runs the last two on loopback (tests/controlplane).
# Reuses the Go module and build caches; a fresh machine downloads the modules once.
# The kube-apiserver build takes minutes on 2 cores the first time; `go build` skips it when
# nothing changed.  ORACLE_SKIP_CONTROLPLANE=1 builds kube-oracle only.  Both binaries are
# stamped with the version upstream's release build gives them (/version, kubectl's skew check).
# --cover builds only bin/cover/kube-oracle: kube-oracle with Go's coverage instrumentation
# over upstream's pkg/scheduler/... (and its own main package, which installs the hook that
# writes the counters into $GOCOVERDIR at exit), for `oracle/diff.py --coverage`; ~20 s once
# the normal build is cached, and slower to run, so the normal one stays uninstrumented.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p bin
if [ "${1:-}" = --cover ]; then
    mkdir -p bin/cover
    go build -trimpath -cover -covermode=set \
        -coverpkg=k8s.io/kubernetes/pkg/scheduler/...,./cmd/kube-oracle \
        -o bin/cover/kube-oracle ./cmd/kube-oracle
    echo "oracle: built kube-oracle with coverage of k8s.io/kubernetes/pkg/scheduler/... into $(pwd)/bin/cover"
    exit 0
fi
go build -trimpath -o bin/kube-oracle ./cmd/kube-oracle
echo "oracle: built $(bin/kube-oracle version) into $(pwd)/bin"
if [ "${ORACLE_SKIP_CONTROLPLANE:-}" != 1 ]; then
    go build -trimpath -o bin/etcd ./cmd/etcd
    ver="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)"
    major="${ver#v}"; major="${major%%.*}"
    minor="${ver#v*.}"; minor="${minor%%.*}"
    pkg=k8s.io/component-base/version
    for cmd in kube-apiserver kube-scheduler; do
        go build -trimpath -o "bin/$cmd" -ldflags "-X $pkg.gitVersion=$ver \
            -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean" \
            "k8s.io/kubernetes/cmd/$cmd"
    done
    echo "oracle: built etcd, $(bin/kube-apiserver --version) and $(bin/kube-scheduler --version) into $(pwd)/bin"
fi
