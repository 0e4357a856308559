#!/usr/bin/env bash
# A real Kubernetes control plane on loopback for tests and demos: etcd (embedded, oracle/cmd/etcd)
# and kube-apiserver (k8s.io/kubernetes), both built by oracle/build.sh.  By default v1.34.4's
# (oracle/bin/, etcd v3.6.4); ORACLE_KUBERNETES_VERSION=1.37 runs oracle/bin/v1.37/'s instead
# (kube-apiserver v1.37.2, etcd v3.7.0), any version build.sh built a control plane of
# (ORACLE_CONTROLPLANE_VERSIONS); ORACLE_BIN=DIR names the binaries' folder outright.
#
#   bash oracle/controlplane.sh start DIR    # prints the kubeconfig path; DIR/admin.kubeconfig
#   bash oracle/controlplane.sh stop DIR     # SIGTERM each (pid files), SIGKILL after 10 s
#   ORACLE_KUBERNETES_VERSION=1.37 bash oracle/controlplane.sh start DIR
#   CONTROLLER_MANAGER=1 bash oracle/controlplane.sh start DIR   # and kube-controller-manager
#   APISERVER_EXTRA_ARGS="--feature-gates=GenericWorkload=true --runtime-config=..." \
#       bash oracle/controlplane.sh start DIR    # extra kube-apiserver flags (split on spaces)
#
# With CONTROLLER_MANAGER=1, kube-controller-manager (built by build.sh with the others) runs
# too, with only the controllers CONTROLLER_MANAGER_CONTROLLERS names (a comma list of v1.34's
# and v1.37's names; default: the PV binder, persistentvolume-binder-controller, which binds
# the claims a scheduler's VolumeBinding PreBind prepared, WaitForFirstConsumer ones
# included, and the two protection controllers, without which a deleted PV or claim keeps
# the finalizer admission gave it and never goes away).  It runs as admin
# through DIR/admin.kubeconfig (no ServiceAccount credentials, no leader election, no serving
# port); its log is DIR/controller-manager.log.
#
# Everything lives in DIR: pki/ (openssl: a CA, the serving cert for 127.0.0.1/localhost, the
# service-account key pair), tokens.csv (a static admin token in group system:masters),
# etcd/ (data), *.log, *.pid, ports (ETCD_PORT, ETCD_PEER_PORT, APISERVER_PORT).
# Ports: free ports picked at start (bind to port 0) unless ETCD_PORT / ETCD_PEER_PORT /
# APISERVER_PORT are set in the environment.  Only 127.0.0.1 is ever listened on.
# Authorization is Node,RBAC, as a real cluster; authentication is the token file and
# service-account tokens (`kubectl create token`).  No kubelet runs, nor (unless asked for,
# above, and then only its volume controllers) a controller-manager, so two admission
# plugins that need them are off: ServiceAccount (nobody creates a
# namespace's `default` ServiceAccount) and TaintNodesByCondition (nobody would lift the
# not-ready taint it puts on every new Node).  Everything else is the default set.
# No endpoint reconciler: nothing reaches the API server through the `kubernetes` Service
# here, and v1.37 refuses to advertise a loopback address into its Endpoints.
# READY_TIMEOUT (seconds, default 120) bounds the wait for /readyz.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="${ORACLE_KUBERNETES_VERSION:-}"
bin="${ORACLE_BIN:-$here/bin${version:+/v${version#v}}}"

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd="$1"
mkdir -p "$2"
dir="$(cd "$2" && pwd)"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

stop_one() {  # stop_one NAME: SIGTERM the pid in DIR/NAME.pid, SIGKILL after 10 s
    local pidfile="$dir/$1.pid" pid
    [ -f "$pidfile" ] || return 0
    pid="$(cat "$pidfile")"
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$pid" 2>/dev/null; then
            echo "controlplane: $1 ($pid) ignored SIGTERM; killing" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    rm -f "$pidfile"
}

certs() {
    local pki="$dir/pki"
    mkdir -p "$pki"
    [ -f "$pki/apiserver.crt" ] && return 0
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=kubesched-test-ca" \
        -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
        -keyout "$pki/apiserver.key" -out "$pki/apiserver.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' \
        > "$pki/apiserver.ext"
    openssl x509 -req -in "$pki/apiserver.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
        -CAcreateserial -days 30 -extfile "$pki/apiserver.ext" -out "$pki/apiserver.crt" 2>/dev/null
    openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
    openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
}

start() {
    for b in etcd kube-apiserver; do
        [ -x "$bin/$b" ] || { echo "controlplane: $bin/$b is missing: run bash oracle/build.sh" >&2; exit 1; }
    done
    if [ -f "$dir/apiserver.pid" ] && kill -0 "$(cat "$dir/apiserver.pid")" 2>/dev/null; then
        echo "controlplane: already running in $dir" >&2; exit 1
    fi
    certs
    local token
    token="$(openssl rand -hex 16)"
    echo "$token,admin,admin,system:masters" > "$dir/tokens.csv"
    local ep="${ETCD_PORT:-$(free_port)}" pp="${ETCD_PEER_PORT:-$(free_port)}"
    local ap="${APISERVER_PORT:-$(free_port)}"
    printf 'ETCD_PORT=%s\nETCD_PEER_PORT=%s\nAPISERVER_PORT=%s\n' "$ep" "$pp" "$ap" > "$dir/ports"
    rm -rf "$dir/etcd"
    "$bin/etcd" --data-dir "$dir/etcd" --client-port "$ep" --peer-port "$pp" \
        > "$dir/etcd.log" 2>&1 &
    echo $! > "$dir/etcd.pid"
    "$bin/kube-apiserver" \
        --etcd-servers="http://127.0.0.1:$ep" \
        --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$ap" \
        --tls-cert-file="$dir/pki/apiserver.crt" --tls-private-key-file="$dir/pki/apiserver.key" \
        --client-ca-file="$dir/pki/ca.crt" \
        --token-auth-file="$dir/tokens.csv" \
        --authorization-mode=Node,RBAC \
        --service-account-issuer=https://kubernetes.default.svc.cluster.local \
        --service-account-key-file="$dir/pki/sa.pub" \
        --service-account-signing-key-file="$dir/pki/sa.key" \
        --service-cluster-ip-range=10.96.0.0/16 \
        --disable-admission-plugins=ServiceAccount,TaintNodesByCondition \
        --endpoint-reconciler-type=none \
        --profiling=false --v=1 \
        ${APISERVER_EXTRA_ARGS:-} \
        > "$dir/apiserver.log" 2>&1 &
    echo $! > "$dir/apiserver.pid"
    local server="https://127.0.0.1:$ap"
    cat > "$dir/admin.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kubesched-test
  cluster:
    server: $server
    certificate-authority: $dir/pki/ca.crt
users:
- name: admin
  user:
    token: $token
contexts:
- name: admin
  context: {cluster: kubesched-test, user: admin}
current-context: admin
EOF
    local deadline=$((SECONDS + ${READY_TIMEOUT:-120}))
    until curl -sf --cacert "$dir/pki/ca.crt" -H "Authorization: Bearer $token" \
        "$server/readyz" > /dev/null 2>&1; do
        for p in etcd apiserver; do
            if ! kill -0 "$(cat "$dir/$p.pid")" 2>/dev/null; then
                echo "controlplane: $p exited; last lines of $dir/$p.log:" >&2
                tail -20 "$dir/$p.log" >&2
                stop_one apiserver; stop_one etcd
                exit 1
            fi
        done
        if [ $SECONDS -ge $deadline ]; then
            echo "controlplane: $server/readyz not ready after ${READY_TIMEOUT:-120} s" >&2
            tail -20 "$dir/apiserver.log" >&2
            stop_one apiserver; stop_one etcd
            exit 1
        fi
        sleep 0.2
    done
    [ "${CONTROLLER_MANAGER:-}" != 1 ] || controller_manager
    echo "$dir/admin.kubeconfig"
}

pv_controllers=persistentvolume-binder-controller,persistentvolume-protection-controller
pv_controllers=$pv_controllers,persistentvolumeclaim-protection-controller

controller_manager() {  # kube-controller-manager with only the controllers asked for
    [ -x "$bin/kube-controller-manager" ] || {
        echo "controlplane: $bin/kube-controller-manager is missing: run bash oracle/build.sh" >&2
        stop_one apiserver; stop_one etcd
        exit 1
    }
    "$bin/kube-controller-manager" \
        --kubeconfig="$dir/admin.kubeconfig" \
        --controllers="${CONTROLLER_MANAGER_CONTROLLERS:-$pv_controllers}" \
        --leader-elect=false --use-service-account-credentials=false \
        --secure-port=0 --profiling=false --v=1 \
        > "$dir/controller-manager.log" 2>&1 &
    echo $! > "$dir/controller-manager.pid"
    sleep 1
    if ! kill -0 "$(cat "$dir/controller-manager.pid")" 2>/dev/null; then
        echo "controlplane: kube-controller-manager exited; last lines of $dir/controller-manager.log:" >&2
        tail -20 "$dir/controller-manager.log" >&2
        stop_one controller-manager; stop_one apiserver; stop_one etcd
        exit 1
    fi
}

case "$cmd" in
    start) start ;;
    stop) stop_one controller-manager; stop_one apiserver; stop_one etcd ;;
    *) usage ;;
esac
