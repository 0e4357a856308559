"""Scheduler extenders end to end: a real HTTP extender on loopback decides placements."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kubesched.config.load import load_config
from kubesched.plugins.registry import known_plugin_names
from kubesched.scheduler import Scheduler
from kubesched.scheduler.extenders import EXTENDER_NAME
from kubesched.testing import FakeApi, make_node, make_pod
from tests.scheduler.extender_server import ExtenderServer, keep_only, prefer

GPU = "example.com/gpu"


def scheduler(*extenders: dict[str, Any], nodes: int = 3) -> tuple[Scheduler, FakeApi]:
    cfg = load_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "extenders": list(extenders),
        },
        known_plugins=known_plugin_names(),
    )
    fake = FakeApi()
    s = Scheduler(cfg, clock=lambda: 0.0, api_client=fake)
    for i in range(nodes):
        s.on_node_add(make_node(f"n{i}").cap(cpu="4", memory="8Gi", pods=20).obj())
    return s, fake


def drain(s: Scheduler) -> None:
    while s.schedule_one():
        pass
    if s.extenders is not None:
        s.extenders.close()


def error_count(s: Scheduler, **labels: str) -> float:
    key = ("scheduler_extender_errors_total", tuple(sorted(labels.items())))
    return s.metrics.samples().get(key, 0.0)


@pytest.fixture
def server() -> Iterator[ExtenderServer]:
    with ExtenderServer(filter=keep_only("n2"), prioritize=prefer({"n1": 10})) as srv:
        yield srv


def test_placements_follow_the_filter_answers_with_one_call_per_cycle(
    server: ExtenderServer,
) -> None:
    s, fake = scheduler({"urlPrefix": server.url, "filterVerb": "filter"}, nodes=40)
    for i in range(5):
        s.on_pod_add(make_pod(f"p{i}").req(cpu="100m").obj())
    drain(s)
    assert set(fake.binds.values()) == {"n2"}
    calls = server.calls("filter")
    assert len(calls) == 5  # once per cycle with every candidate, never per node
    assert all(len(c["Nodes"]["items"]) == 40 for c in calls)
    assert s.batch.attempts["unsignable"] == 5  # result reuse is off for such Pods


def test_prioritize_scores_are_weighted_and_added(server: ExtenderServer) -> None:
    s, fake = scheduler(
        {"urlPrefix": server.url, "prioritizeVerb": "prioritize", "weight": 5}, nodes=3
    )
    for i in range(3):
        s.on_pod_add(make_pod(f"p{i}").req(cpu="100m").obj())
    drain(s)
    assert set(fake.binds.values()) == {"n1"}  # 10 * 5 * 10 = 500 outweighs the plugins
    assert len(server.calls("prioritize")) == 3


def test_extender_rejection_is_diagnosed_and_requeues_on_any_event() -> None:
    reject = keep_only(reason="no licence")
    with ExtenderServer(filter=reject) as srv:
        s, fake = scheduler({"urlPrefix": srv.url, "filterVerb": "filter"})
        s.on_pod_add(make_pod("p").req(cpu="100m").obj())
        drain(s)
    reason, message = fake.failures["default/p"]
    assert reason == "Unschedulable"
    assert message.startswith("0/3 nodes are available: 3 no licence.")
    (qp,) = s.queue.pending_pod_infos()
    assert EXTENDER_NAME in qp.unschedulable_plugins


@pytest.mark.parametrize("ignorable", [False, True])
@pytest.mark.parametrize("failure", ["status", "timeout"])
def test_failure_semantics(failure: str, ignorable: bool) -> None:
    with ExtenderServer(filter=keep_only("n0")) as srv:
        if failure == "status":
            srv.status["filter"] = 500
        else:
            srv.delay["filter"] = 1.0
        s, fake = scheduler(
            {
                "urlPrefix": srv.url,
                "filterVerb": "filter",
                "httpTimeout": "100ms",
                "ignorable": ignorable,
            }
        )
        s.on_pod_add(make_pod("p").req(cpu="100m").obj())
        drain(s)
    reason = "timeout" if failure == "timeout" else "error"
    counted = error_count(
        s, extender=srv.url, verb="filter", reason=reason, ignored=str(ignorable).lower()
    )
    assert counted == 1
    if ignorable:  # skipped: scheduled by the plugins alone, on any node
        assert "default/p" in fake.binds and s.attempts["error"] == 0
    else:  # the attempt fails as an error and the Pod waits for a retry
        assert fake.binds == {}
        assert s.attempts["error"] == 1
        assert fake.failures["default/p"][0] == "SchedulerError"


def test_bind_extender_replaces_the_default_binder() -> None:
    with ExtenderServer(bind=lambda args: {"Error": ""}) as srv:
        s, fake = scheduler({"urlPrefix": srv.url, "bindVerb": "bind"})
        s.on_pod_add(make_pod("p").req(cpu="100m").obj())
        drain(s)
    (call,) = srv.calls("bind")
    assert call["PodName"] == "p" and call["Node"] in {"n0", "n1", "n2"}
    assert fake.binds == {}  # the extender bound it, not the API client
    assert s.attempts["scheduled"] == 1


def test_failed_bind_extender_undoes_the_assumption() -> None:
    with ExtenderServer(bind=lambda args: {"Error": "refused"}) as srv:
        s, fake = scheduler({"urlPrefix": srv.url, "bindVerb": "bind"})
        s.on_pod_add(make_pod("p").req(cpu="100m").obj())
        drain(s)
    assert fake.failures["default/p"] == ("SchedulerError", "refused")
    assert not s.cluster.is_assumed("default/p") and "default/p" not in s.cluster.pods


def test_managed_resources_limit_calls_and_ignored_resources_skip_fit() -> None:
    with ExtenderServer(filter=keep_only("n0")) as srv:
        s, fake = scheduler(
            {
                "urlPrefix": srv.url,
                "filterVerb": "filter",
                "managedResources": [{"name": GPU, "ignoredByScheduler": True}],
            }
        )
        s.on_pod_add(make_pod("plain").req(cpu="100m").obj())
        s.on_pod_add(make_pod("gpu").req(cpu="100m").res({GPU: 1}).obj())
        drain(s)
    assert len(srv.calls("filter")) == 1  # only the Pod asking for the managed resource
    assert fake.binds["default/gpu"] == "n0"  # no node has example.com/gpu: Fit ignores it
    assert "default/plain" in fake.binds
