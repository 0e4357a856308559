"""Leader election on a Lease: acquire, exclusion, takeover after expiry, release, loss."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesched.config.types import LeaderElection
from kubesched.live.client import KubeClient, connect
from kubesched.live.leader import LeaderElector
from kubesched.testing import VirtualClock
from tests.live.conftest import Api, wait_for
from tests.live.fakestore import by_plural

SETTINGS = LeaderElection(
    lease_duration_seconds=1.0,
    renew_deadline_seconds=0.6,
    retry_period_seconds=0.1,
    resource_name="kubesched",
    resource_namespace="kube-system",
)


class Campaign:
    def __init__(self, client: KubeClient, identity: str) -> None:
        self.elector = LeaderElector(client, SETTINGS, identity)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.elector.run, args=(self.stop,), daemon=True)
        self.thread.start()

    def end(self) -> None:
        self.stop.set()
        self.thread.join(5)
        assert not self.thread.is_alive()


@pytest.fixture
def client(kubeconfig: Path) -> Iterator[KubeClient]:
    c = connect(kubeconfig=str(kubeconfig), qps=0, burst=1)
    yield c
    c.close()


@pytest.fixture
def campaign(client: KubeClient) -> Iterator[type[Campaign]]:
    made: list[Campaign] = []

    class Made(Campaign):
        def __init__(self, identity: str) -> None:
            super().__init__(client, identity)
            made.append(self)

    yield Made
    for c in made:
        c.stop.set()
    for c in made:
        c.thread.join(5)


def lease(api: Api) -> dict:
    spec: dict = api.store.get(by_plural("leases"), "kube-system", "kubesched")["spec"]
    return spec


def test_first_replica_creates_and_holds_the_lease(api: Api, campaign: type[Campaign]) -> None:
    a = campaign("a")
    wait_for(a.elector.leading)
    spec = lease(api)
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 1 and spec["leaseTransitions"] == 0
    first_renew = spec["renewTime"]
    wait_for(lambda: lease(api)["renewTime"] != first_renew)  # renewed every retryPeriod


def test_second_replica_waits_and_release_hands_over(api: Api, campaign: type[Campaign]) -> None:
    a = campaign("a")
    wait_for(a.elector.leading)
    b = campaign("b")
    time.sleep(SETTINGS.lease_duration_seconds * 1.5)  # a keeps renewing: b must not take it
    assert not b.elector.leading() and lease(api)["holderIdentity"] == "a"
    t0 = time.monotonic()
    a.end()  # graceful: releases the Lease
    assert lease(api).get("holderIdentity") != "a"  # released (b may already hold it)
    wait_for(b.elector.leading, timeout=3)
    assert time.monotonic() - t0 < SETTINGS.lease_duration_seconds + 1.0
    assert lease(api)["holderIdentity"] == "b" and lease(api)["leaseTransitions"] == 1


def test_a_silent_holder_is_replaced_only_after_the_lease_duration(
    api: Api, client: KubeClient
) -> None:
    crashed = LeaderElector(client, SETTINGS, "crashed")
    assert crashed.try_acquire_or_renew()  # took the Lease, then never renewed again
    clock = VirtualClock()
    b = LeaderElector(client, SETTINGS, "b", clock=clock)
    t0 = clock.now
    assert not b.try_acquire_or_renew()  # b starts observing the record here
    clock.now = t0 + SETTINGS.lease_duration_seconds - 0.001
    assert not b.try_acquire_or_renew() and lease(api)["holderIdentity"] == "crashed"
    clock.now = t0 + SETTINGS.lease_duration_seconds  # unchanged for a whole lease duration
    assert b.try_acquire_or_renew()
    assert lease(api)["holderIdentity"] == "b" and lease(api)["leaseTransitions"] == 1


def test_failed_renewals_lose_leadership_at_the_renew_deadline(
    api: Api, client: KubeClient
) -> None:
    clock = VirtualClock()
    a = LeaderElector(client, SETTINGS, "a", clock=clock)
    stop = threading.Event()
    thread = threading.Thread(target=a.run, args=(stop,), daemon=True)
    thread.start()
    try:
        wait_for(a.leading)
        api.server.fail(r"leases/kubesched", 500, times=10_000)
        renewed = a.renewed_at  # the clock stands still: every renewal so far stamped it
        assert renewed == clock.now
        clock.now = renewed + SETTINGS.renew_deadline_seconds - 0.001
        assert a.leading() and not a.lost.is_set()  # failing, but not for a whole deadline
        clock.now = renewed + SETTINGS.renew_deadline_seconds
        assert not a.leading()  # at the deadline, from the caller's own clock reading
        wait_for(a.lost.is_set, timeout=3)  # the election thread's next failed renewal
        thread.join(3)
        assert not thread.is_alive()  # a replica that lost the Lease stops campaigning
    finally:
        stop.set()
        thread.join(5)


def test_lease_taken_by_another_holder_is_lost(api: Api, campaign: type[Campaign]) -> None:
    a = campaign("a")
    wait_for(a.elector.leading)
    obj = api.store.get(by_plural("leases"), "kube-system", "kubesched")
    obj["spec"]["holderIdentity"] = "usurper"
    api.store.update(by_plural("leases"), "kube-system", "kubesched", obj, status_only=False)
    wait_for(lambda: not a.elector.leading(), timeout=3)
    assert lease(api)["holderIdentity"] == "usurper"
