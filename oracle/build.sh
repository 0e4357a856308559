#!/usr/bin/env bash
# Builds upstream Kubernetes into oracle/bin/, one kube-oracle per supported minor release:
#   vV/kube-oracle     upstream's framework answering kubesched's explain (JSON on stdin), for
#                      every V in ORACLE_VERSIONS (default: 1.34 1.35 1.36 1.37)
#   vV/kube-apiserver  k8s.io/kubernetes/cmd/kube-apiserver (a `tool` line in go.mod keeps its deps)
#   vV/kube-scheduler  k8s.io/kubernetes/cmd/kube-scheduler (likewise), upstream's scheduler behind
#                      the API server for benchmarks/upstream_side_by_side.py
#   vV/kube-controller-manager
#                      k8s.io/kubernetes/cmd/kube-controller-manager (likewise): its PV binder
#                      binds the claims `kubesched run` picks a node for in the control-plane
#                      tests (oracle/controlplane.sh with CONTROLLER_MANAGER=1)
#   vV/etcd            oracle/cmd/etcd: go.etcd.io/etcd/server/v3/embed at the etcd version
#                      k8s.io/kubernetes vV's own go.mod requires (v3.6.4 for v1.34.4, v3.7.0
#                      for v1.37.2; its client speaks to it).  Not Debian's etcd-server:
#                      bookworm ships 3.4.23, older than the 3.4.31 / 3.5.13 whose watch progress
#                      notifications the default-on consistent reads from the watch cache rely
#                      on; and a package would tie CI to apt.
#                      The control plane (these four) for every V in ORACLE_CONTROLPLANE_VERSIONS
#                      (default: 1.34 1.37, the oldest and the newest).
#   kube-oracle, kube-apiserver, kube-scheduler, kube-controller-manager, etcd
#                      the default version's (v1.34: oracle/go.mod), hard links to bin/v1.34/.
# oracle/controlplane.sh runs etcd and kube-apiserver on loopback (tests/controlplane;
# ORACLE_KUBERNETES_VERSION=1.37 picks bin/v1.37/).
#
# One Go module, one set of sources (cmd/, internal/), a go.mod per version: oracle/go.mod is
# the default version's; oracle/versions/vV/go.mod (with its go.sum) every other version's,
# the same module path pinning k8s.io/kubernetes vV.N and replacing each k8s.io staging module
# by its v0.V.N (as upstream's own go.mod points them at ./staging).  A version builds with
# `go build -modfile=versions/vV/go.mod` (go vet likewise), so only the dependencies differ.
# Where upstream's API differs between versions, the few files that differ carry a build tag
# from this script's `-tags` (tags_of below): `kube_ge_1_35` for v1.35 and newer, and so on.
# `go mod tidy -modfile=versions/vV/go.mod` refreshes a version's go.mod after a source change.
#
# Reuses the Go module and build caches; a fresh machine downloads each version's modules once.
# kube-apiserver takes minutes on 2 cores the first time (per version); `go build` skips what
# did not change.  ORACLE_SKIP_CONTROLPLANE=1 builds kube-oracle only.  kube-apiserver,
# kube-scheduler and kube-controller-manager are stamped with the version upstream's release
# build gives them (/version, kubectl's skew check).
# --vet runs go vet over the sources against each version (its go.mod and tags) instead.
# --cover builds only bin/cover/kube-oracle (the default version; with ORACLE_VERSIONS,
# bin/cover/vV/kube-oracle for each other V listed): kube-oracle with Go's
# coverage instrumentation over upstream's pkg/scheduler/... (and its own main package, which
# installs the hook that writes the counters into $GOCOVERDIR at exit), for
# `oracle/diff.py --coverage`; ~20 s once the normal build is cached, and slower to run, so the
# normal one stays uninstrumented.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p bin
default=1.34
# modfile_of V: the go.mod of minor release V (relative to oracle/).
modfile_of() {
    if [ "$1" = "$default" ]; then echo go.mod; else echo "versions/v$1/go.mod"; fi
}

# tags_of V: the build tags of minor release V: kube_ge_1_35 ... for every release after
# v1.34 up to V (a version-specific file says `//go:build kube_ge_1_37` or its negation).
tags_of() {
    local minor="${1#1.}" m tags=""
    for ((m = 35; m <= minor; m++)); do tags="$tags${tags:+,}kube_ge_1_$m"; done
    echo "$tags"
}

# build_version V CONTROLPLANE: bin/vV/kube-oracle, and with CONTROLPLANE=1 its etcd,
# kube-apiserver, kube-scheduler and kube-controller-manager.
build_version() {
    local v="$1" out="bin/v$1" t0=$SECONDS modfile
    modfile="$(modfile_of "$v")"
    local flags=(-trimpath -modfile="$modfile" -tags "$(tags_of "$v")")
    mkdir -p "$out"
    go build "${flags[@]}" -o "$out/kube-oracle" ./cmd/kube-oracle
    echo "oracle: built $("$out/kube-oracle" version) into $(pwd)/$out ($((SECONDS - t0)) s)"
    [ "$2" = 1 ] || return 0
    t0=$SECONDS
    go build "${flags[@]}" -o "$out/etcd" ./cmd/etcd
    local ver major minor pkg=k8s.io/component-base/version
    ver="$(go list -modfile="$modfile" -m -f '{{.Version}}' k8s.io/kubernetes)"
    major="${ver#v}"; major="${major%%.*}"
    minor="${ver#v*.}"; minor="${minor%%.*}"
    for cmd in kube-apiserver kube-scheduler kube-controller-manager; do
        go build "${flags[@]}" -o "$out/$cmd" -ldflags "-X $pkg.gitVersion=$ver \
            -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean" \
            "k8s.io/kubernetes/cmd/$cmd"
    done
    echo "oracle: built etcd, $("$out/kube-apiserver" --version), $("$out/kube-scheduler" --version) and $("$out/kube-controller-manager" --version) into $(pwd)/$out ($((SECONDS - t0)) s)"
}

if [ "${1:-}" = --cover ]; then
    # bin/cover/kube-oracle is the default version's; ORACLE_VERSIONS="1.37" (or several)
    # builds bin/cover/vV/kube-oracle for each instead (oracle/diff.py --coverage
    # --kubernetes-version V).
    for v in ${ORACLE_VERSIONS:-$default}; do
        [ -f "$(modfile_of "$v")" ] || { echo "oracle: no go.mod for Kubernetes $v" >&2; exit 2; }
        out=bin/cover/v$v
        [ "$v" != "$default" ] || out=bin/cover
        mkdir -p "$out"
        t0=$SECONDS
        go build -trimpath -modfile="$(modfile_of "$v")" -tags "$(tags_of "$v")" -cover \
            -covermode=set -coverpkg=k8s.io/kubernetes/pkg/scheduler/...,./cmd/kube-oracle \
            -o "$out/kube-oracle" ./cmd/kube-oracle
        echo "oracle: built $("$out/kube-oracle" version) with coverage of k8s.io/kubernetes/pkg/scheduler/... into $(pwd)/$out ($((SECONDS - t0)) s)"
    done
    exit 0
fi

versions="${ORACLE_VERSIONS:-1.34 1.35 1.36 1.37}"
if [ "${1:-}" = --vet ]; then
    for v in $versions; do
        go vet -trimpath -modfile="$(modfile_of "$v")" -tags "$(tags_of "$v")" ./...
        echo "oracle: go vet clean against Kubernetes $v"
    done
    exit 0
fi
controlplane="${ORACLE_CONTROLPLANE_VERSIONS:-1.34 1.37}"
[ "${ORACLE_SKIP_CONTROLPLANE:-}" != 1 ] || controlplane=""
for v in $versions; do
    [ -f "$(modfile_of "$v")" ] || { echo "oracle: no go.mod for Kubernetes $v" >&2; exit 2; }
    cp=0
    for c in $controlplane; do [ "$c" != "$v" ] || cp=1; done
    build_version "$v" "$cp"
    if [ "$v" = "$default" ]; then
        for b in kube-oracle etcd kube-apiserver kube-scheduler kube-controller-manager; do
            [ ! -f "bin/v$v/$b" ] || ln -f "bin/v$v/$b" "bin/$b"
        done
    fi
done
