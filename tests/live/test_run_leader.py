"""``kubesched run`` replicas and the Lease: a lost Lease stops scheduling within the renew
deadline; two replicas never both schedule; a standby takes over and rebuilds from the API."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from pathlib import Path

from kubesched.live.client import connect
from kubesched.live.informer import Timing
from kubesched.live.runner import LiveScheduler
from kubesched.testing import VirtualClock
from tests.live.conftest import Api, Replica, make_config, node, pod
from tests.live.conftest import wait_for as wait
from tests.live.fakeapi import FakeApiServer


def bound(api: Api, *names: str) -> bool:
    return all(api.node_of(n) for n in names)


def test_lost_lease_stops_scheduling_at_the_renew_deadline(api: Api, kubeconfig: Path) -> None:
    api.create(node("n1"))
    r = Replica(kubeconfig, "a")
    assert r.live.elector is not None
    clock = r.live.elector.clock = VirtualClock()  # the Lease's clock moves only when told
    r.start()
    try:
        api.create(pod("before"))
        wait(lambda: bound(api, "before"))
        api.server.fail(r"leases/kubesched", 500, times=100_000)
        deadline = r.live.config.leader_election.renew_deadline_seconds
        renewed = r.live.elector.renewed_at  # every renewal stamped the standing clock
        clock.now = renewed + deadline - 0.001
        assert r.live.leading()  # renewals failing, but not yet for a whole renew deadline
        clock.now = renewed + deadline
        assert not r.live.leading()  # the scheduling loop stops here, not a moment later
        api.create(pod("after"))
        r.thread.join(5)
        assert r.code == 1  # as kube-scheduler: a replica that lost the Lease exits
        assert api.node_of("after") == ""
    finally:
        if r.thread.is_alive():
            r.stop()


class Overlap:
    """Samples both replicas' leadership every few milliseconds on a thread."""

    def __init__(self, a: Replica, b: Replica) -> None:
        self.both = 0
        self.samples = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, args=(a, b), daemon=True)
        self.thread.start()

    def _watch(self, a: Replica, b: Replica) -> None:
        while not self.done.wait(0.005):
            self.samples += 1
            self.both += a.live.leading() and b.live.leading()

    def end(self) -> int:
        self.done.set()
        self.thread.join(2)
        assert self.samples > 10
        return self.both


def test_two_replicas_never_both_schedule(api: Api, replicas: Callable[..., Replica]) -> None:
    for i in range(3):
        api.create(node(f"n{i}"))
    a = replicas("replica-a")
    b = replicas("replica-b")
    overlap = Overlap(a, b)
    first = [f"a-{i}" for i in range(15)]
    for name in first:
        api.create(pod(name))
    wait(lambda: bound(api, *first))
    leader, standby = (a, b) if a.live.leading() else (b, a)
    assert not standby.live.leading() and standby.live.cycles == 0
    t_handover = time.monotonic()
    assert leader.stop() == 0  # graceful: releases the Lease
    second = [f"b-{i}" for i in range(15)]
    for name in second:
        api.create(pod(name))
    wait(lambda: bound(api, *second), timeout=15)
    binds = api.store.stats.binds
    assert sorted(api.store.stats.binds_per_pod.values()) == [1] * 30  # none bound twice
    assert api.store.stats.bind_conflicts == 0
    by_leader = [t for t, _, _, ua in binds if ua == f"kubesched-test ({leader.live.identity})"]
    by_standby = [t for t, _, _, ua in binds if ua == f"kubesched-test ({standby.live.identity})"]
    assert len(by_leader) == 15 and len(by_standby) == 15
    assert max(by_leader) < t_handover < min(by_standby)
    assert overlap.end() == 0


def test_standby_takes_over_from_a_failed_leader(
    api: Api, replicas: Callable[..., Replica]
) -> None:
    api.create(node("n1"))
    a = replicas("replica-a", make_config())  # the 1 s Lease: b takes over within seconds
    wait(a.live.leading)
    b = replicas("replica-b", make_config())
    overlap = Overlap(a, b)
    api.create(pod("early"))
    wait(lambda: bound(api, "early"))
    # The leader's API connection breaks for Lease writes: it must stop, b must take over
    # after the lease duration, rebuild from fresh lists and schedule what arrived meanwhile.
    api.server.fail(r"leases/kubesched .*replica-a", 500, times=100_000)
    a.thread.join(20)
    assert a.code == 1
    api.create(pod("orphan"))
    wait(b.live.leading, timeout=20)
    wait(lambda: bound(api, "orphan"), timeout=20)
    agents = {ua for _, key, _, ua in api.store.stats.binds if key == "default/orphan"}
    assert agents <= {"kubesched-test (replica-b)"}
    assert api.store.stats.binds_per_pod["default/orphan"] == 1
    assert overlap.end() == 0


def test_delay_cache_until_active_keeps_a_standby_cold(
    api: Api, replicas: Callable[..., Replica]
) -> None:
    api.create(node("n1"))
    # A lease a loaded machine's renewals keep (a stopping leader releases it at once).
    lease = ("6s", "4s", "100ms")
    a = replicas("replica-a", make_config(lease=lease))
    wait(a.live.leading)
    cold = dataclasses.replace(make_config(lease=lease), delay_cache_until_active=True)
    b = replicas("replica-b", cold)
    time.sleep(0.5)
    assert not b.live.leading() and all(i.lists == 0 for i in b.live.informers)
    a.stop()
    api.create(pod("p"))
    wait(b.live.leading, timeout=20)
    wait(lambda: bound(api, "p"), timeout=20)
    assert all(i.lists >= 1 for i in b.live.informers)


def test_a_new_leader_does_not_wait_for_absent_custom_resources(
    server: FakeApiServer, api: Api, kubeconfig: Path
) -> None:
    """Found against the real API server (tests/controlplane): without the scheduler-plugins
    CRDs, PodGroup and ElasticQuota lists 404 and their informers retry after backoff_max
    (30 s by default).  The Lease's first holder asks every listed informer to relist, and
    must not wait for those two: they are empty, nothing to reconcile."""
    absent = r"GET /apis/scheduling.x-k8s.io/v1alpha1/(podgroups|elasticquotas)"
    server.fail(absent, 404, times=1_000)
    api.create(node("n1"))
    slow_retries = Timing(backoff_initial=0.05, backoff_max=30.0, watch_timeout=5.0)
    client = connect(kubeconfig=str(kubeconfig), user_agent="kubesched-test (absent)")
    live = LiveScheduler(
        make_config(lease=("2s", "1500ms", "100ms")),
        client,
        identity="a",
        timing=slow_retries,
        election_client=client.sibling(0, 1),
    )
    thread = threading.Thread(target=live.run, daemon=True)
    thread.start()
    try:
        api.create(pod("p"))
        wait(lambda: api.node_of("p") == "n1", timeout=10)
    finally:
        live.stop()
        thread.join(10)
        client.close()


def test_replicas_in_one_process_give_back_its_collector_thresholds(
    api: Api, replicas: Callable[..., Replica]
) -> None:
    """Each loop raises the process's collector thresholds while it runs; two overlapping
    in one process, ending first-started first, leave the process's own behind."""
    import gc

    saved = gc.get_threshold()
    gc.set_threshold(701, 11, 12)
    try:
        a = replicas("replica-a")
        wait(a.live.leading)
        b = replicas("replica-b")
        wait(lambda: b.live.loop_alive)
        a.stop()
        b.stop()
        after = gc.get_threshold()
    finally:
        gc.set_threshold(*saved)
    assert after == (701, 11, 12)
