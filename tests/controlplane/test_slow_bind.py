"""The slow-bind fault against the real kube-apiserver: a delaying proxy of ours holds the
first bind past the client's timeout and then forwards it, so the API server writes it after
kubesched gave up waiting.  kubesched must keep the Pod's capacity assumed and settle the
bind (issue 17): a second Pod that fits only in that capacity stays pending."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.controlplane.conftest import ControlPlane, config
from tests.controlplane.proxy import DelayingProxy
from tests.live.conftest import Replica, node, pod
from tests.live.conftest import wait_for as wait

pytestmark = pytest.mark.controlplane
T = 30.0


@pytest.fixture
def proxy(cp: ControlPlane) -> Iterator[DelayingProxy]:
    p = DelayingProxy(cp.server, str(cp.dir / "pki" / "ca.crt"))
    try:
        yield p
    finally:
        p.close()


def test_a_bind_written_after_the_client_timed_out_never_overcommits(
    cp: ControlPlane, proxy: DelayingProxy
) -> None:
    cp.apply(node("n1", cpu="1"))
    kubeconfig = cp.write_sa_kubeconfig(cp.dir / "via-proxy.kubeconfig", proxy.url)
    r = Replica(kubeconfig, "slow", config()).start()  # bind timeout 6 s - 4 s = 2 s
    try:
        assert r.live.api.bind_timeout == 2.0
        proxy.slow(r"POST /api/v1/namespaces/default/pods/first/binding", 3.0)
        cp.apply(pod("first", cpu="600m"))
        wait(lambda: r.live.scheduler.cluster.is_assumed("default/first"), T)
        time.sleep(2.2)  # the client gave up; the write is still to come
        cp.apply(pod("second", cpu="600m"))
        wait(lambda: cp.node_of("first") == "n1", T)
        time.sleep(2.0)  # time for a wrong second bind
        assert cp.node_of("second") == "", "both Pods were bound: n1 is overcommitted"
        assert r.live.api.unknown_binds >= 1
        wait(lambda: r.live.scheduler.attempts["scheduled"] == 1, T)
        wait(lambda: not r.live.scheduler.cluster.is_assumed("default/first"), T)
        assert r.live.scheduler.cluster.overcommitted_nodes() == []
    finally:
        r.stop()
