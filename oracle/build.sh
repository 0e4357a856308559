#!/usr/bin/env bash
# Builds upstream kube-scheduler v1.34 (the module pinned in go.mod) into oracle/bin/:
#   kube-oracle   upstream's framework answering kubesched's explain (JSON on stdin)
# Reuses the Go module and build caches; a fresh machine downloads the modules once.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p bin
go build -trimpath -o bin/kube-oracle ./cmd/kube-oracle
echo "oracle: built $(bin/kube-oracle version) into $(pwd)/bin"
