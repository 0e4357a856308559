"""``kubesched run`` end to end against the fake API server (in-process replicas)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from kubesched.live.client import connect
from kubesched.live.runner import LiveScheduler
from tests.live.conftest import (
    FAST,
    Api,
    Replica,
    kubectl,
    make_config,
    needs_kubectl,
    node,
    pod,
)
from tests.live.conftest import wait_for as wait
from tests.live.fakeapi import FakeApiServer

POD_YAML = """apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  schedulerName: %s
  containers: [{name: c, image: nginx, resources: {requests: {cpu: 500m}}}]
"""


def bound(api: Api, *names: str) -> bool:
    return all(api.node_of(n) for n in names)


@needs_kubectl
def test_pods_created_with_kubectl_get_bound(
    server: FakeApiServer, api: Api, replicas: Callable[..., Replica]
) -> None:
    api.create(node("n1"))
    r = replicas("a")
    docs = "---\n".join(POD_YAML % (f"web-{i}", "kubesched") for i in range(3))
    kubectl(server, "apply", "--validate=false", "-f", "-", stdin=docs)
    kubectl(
        server,
        "apply",
        "--validate=false",
        "-f",
        "-",
        stdin=POD_YAML % ("other", "default-scheduler"),
    )
    wait(lambda: bound(api, "web-0", "web-1", "web-2"))
    listed = kubectl(
        server, "get", "pods", "-o", "custom-columns=N:.metadata.name,NODE:.spec.nodeName"
    )
    assert "web-0   n1" in listed
    time.sleep(0.3)
    assert api.node_of("other") == ""  # another scheduler's Pod is left alone
    wait(lambda: len(api.events("Scheduled")) == 3)
    ev = api.events("Scheduled")[0]
    assert ev["type"] == "Normal" and ev["reportingController"] == "kubesched"
    assert ev["note"].startswith("Successfully assigned default/web-") and ev["note"].endswith(
        " to n1"
    )
    assert r.live.scheduler.attempts["scheduled"] == 3


def test_unschedulable_pod_gets_condition_and_event(
    api: Api, replicas: Callable[..., Replica]
) -> None:
    api.create(node("n1", cpu="1"))
    replicas("a")
    api.create(pod("huge", cpu="2"))
    message = "0/1 nodes are available: 1 Insufficient cpu."

    def condition() -> dict | None:
        for c in api.pod("huge").get("status", {}).get("conditions", []):
            if c["type"] == "PodScheduled":
                return c
        return None

    cond = wait(condition)
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert cond["message"].startswith(message)
    (ev,) = wait(lambda: api.events("FailedScheduling"))
    assert (ev["type"], ev["note"], ev["action"]) == ("Warning", cond["message"], "Scheduling")
    assert ev["regarding"]["name"] == "huge"
    # The Pod fits once a bigger node arrives (a Node add requeues it).
    api.create(node("n2", cpu="4"))
    wait(lambda: api.node_of("huge") == "n2")


def test_dropped_watches_are_resumed(api: Api, replicas: Callable[..., Replica]) -> None:
    api.create(node("n1"))
    r = replicas("a")
    api.create(pod("first"))
    wait(lambda: bound(api, "first"))
    lists = [i.lists for i in r.live.informers]
    api.store.drop_watches()
    api.create(pod("second"))
    wait(lambda: bound(api, "second"))
    assert [i.lists for i in r.live.informers] == lists  # resumed, not relisted


def test_without_leader_election_the_first_lists_are_not_repeated(
    api: Api, kubeconfig: Path
) -> None:
    class Listed(LiveScheduler):
        def _start_informers(self) -> None:  # every first list in before the loop starts
            super()._start_informers()
            wait(self.synced)

    api.create(node("n1"))
    api.create(pod("p"))
    client = connect(kubeconfig=str(kubeconfig), user_agent="kubesched-test (listed)")
    live = Listed(make_config(leader=False), client, identity="a", timing=FAST)
    thread = threading.Thread(target=live.run, daemon=True)
    thread.start()
    try:
        wait(lambda: bound(api, "p"))
        assert [i.lists for i in live.informers] == [1] * len(live.informers)
    finally:
        live.stop()
        thread.join(10)
        client.close()


def test_gone_relists_and_scheduling_continues(api: Api, replicas: Callable[..., Replica]) -> None:
    api.create(node("n1"))
    r = replicas("a")
    api.create(pod("first"))
    wait(lambda: bound(api, "first"))
    pods_informer = next(i for i in r.live.informers if i.kind.kind == "Pod")
    before = pods_informer.lists
    with api.store.outage():
        api.create(pod("during-outage"))
    wait(lambda: pods_informer.lists > before)
    wait(lambda: bound(api, "during-outage"))


def test_conflict_on_bind_forgets_and_requeues(api: Api, replicas: Callable[..., Replica]) -> None:
    api.create(node("n1"))
    api.server.fail(r"POST /api/v1/namespaces/default/pods/p/binding", 409)
    r = replicas("a")
    api.create(pod("p"))
    wait(lambda: r.live.api.bind_errors == 1)
    wait(lambda: bound(api, "p"), timeout=15)  # retried after the 1 s backoff
    assert api.store.stats.binds_per_pod["default/p"] == 1
    wait(lambda: r.live.scheduler.attempts["scheduled"] == 1)
    assert r.live.scheduler.attempts["error"] == 1
    wait(lambda: not r.live.scheduler.cluster.is_assumed("default/p"))  # confirmed by the watch


def test_without_leader_election_a_single_replica_schedules(
    api: Api, replicas: Callable[..., Replica]
) -> None:
    api.create(node("n1"))
    r = replicas("solo", make_config(leader=False))
    api.create(pod("p"))
    wait(lambda: bound(api, "p"))
    assert r.live.elector is None and r.live.healthy()
    assert api.store.stats.requests["POST leases"] == 0
