"""Graceful deletion in the simulated API server, and what it does to preemption: a victim
keeps its node's resources for its ``terminationGracePeriodSeconds`` while its preemptor
waits nominated (upstream v1.34); 0 grace, unbound Pods and Pods of a gone node go at once."""

from __future__ import annotations

from typing import Any

import kubesched
from kubesched.api import objects as api
from kubesched.api.parse import parse_node, parse_pod
from kubesched.config.load import load_config
from kubesched.plugins.registry import known_plugin_names
from kubesched.sim.apiserver import SimApiServer
from kubesched.sim.driver import SimCluster
from kubesched.sim.engine import EventLoop
from tests.explainer.test_explain import as_list, node, pod

TERMINATING = "preemption: not eligible due to a terminating pod on the nominated node."


class _Seen:
    """A watcher that records the Pod events it hears."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, float | None]] = []

    def on_pod_update(self, old: api.Pod, new: api.Pod) -> None:
        self.events.append(("update", new.key, new.deletion_timestamp))

    def on_pod_delete(self, pod: api.Pod) -> None:
        self.events.append(("delete", pod.key, pod.deletion_timestamp))

    def __getattr__(self, name: str) -> Any:
        return lambda *a, **k: None


def _server(*pods: dict[str, Any]) -> tuple[EventLoop, SimApiServer, _Seen]:
    loop = EventLoop()
    server = SimApiServer(loop)
    server.create_node(parse_node(node("n0")))
    for p in pods:
        server.create_pod(parse_pod(p))
    seen = _Seen()
    server.watchers.append(seen)
    return loop, server, seen


def test_a_bound_pod_terminates_for_its_grace_period_then_goes() -> None:
    loop, server, seen = _server(pod("v", node_name="n0", terminationGracePeriodSeconds=30))
    loop.call_at(5.0, lambda: server.delete_pod(server.pods["default/v"]))
    loop.run(until=34.0)
    v = server.pods["default/v"]
    assert v.deletion_timestamp == 35.0 and v.node_name == "n0"  # now + grace, still bound
    assert v.raw["metadata"]["deletionGracePeriodSeconds"] == 30
    assert seen.events == [("update", "default/v", 35.0)]
    assert server.terminating == {"default/v": 35.0}
    server.delete_pod(v)  # a second delete changes nothing
    loop.run(until=40.0)
    assert "default/v" not in server.pods and not server.terminating
    assert seen.events == [("update", "default/v", 35.0), ("delete", "default/v", 35.0)]


def test_default_grace_is_30_seconds_and_zero_grace_deletes_at_once() -> None:
    _, server, seen = _server(
        pod("default-grace", node_name="n0"),
        pod("zero", node_name="n0", terminationGracePeriodSeconds=0),
        pod("forced", node_name="n0"),
        pod("pending"),
    )
    for key in ("default-grace", "zero", "pending"):
        server.delete_pod(server.pods[f"default/{key}"])
    server.delete_pod(server.pods["default/forced"], grace=0)  # DeleteOptions override
    assert set(server.pods) == {"default/default-grace"}
    assert server.pods["default/default-grace"].deletion_timestamp == 30.0
    assert [e[0] for e in seen.events] == ["update", "delete", "delete", "delete"]


def test_pods_of_a_deleted_node_go_at_once_even_when_terminating() -> None:
    _, server, _ = _server(pod("v", node_name="n0"), pod("w", node_name="n0"))
    server.delete_pod(server.pods["default/v"])
    server.delete_node("n0")
    assert not server.pods and not server.terminating


def test_preempt_pod_marks_the_victim_then_deletes_it_gracefully() -> None:
    _, server, seen = _server(pod("v", node_name="n0"))
    server.preempt_pod(server.pods["default/v"], parse_pod(pod("p")), "n0", "PreemptionByScheduler")
    v = server.pods["default/v"]
    assert v.deletion_timestamp == 30.0
    assert v.raw["status"]["conditions"] == [
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": "default-scheduler: preempting to accommodate a higher priority pod",
        }
    ]
    assert seen.events == [("update", "default/v", None), ("update", "default/v", 30.0)]
    assert server.stats.preempted_at == {"default/p": 0.0}


def _preemption(grace: int) -> dict[str, Any]:
    low = pod("low", cpu="1500m", node_name="n0", terminationGracePeriodSeconds=grace)
    high = pod("high", cpu="1", priority=100)
    return kubesched.schedule(as_list(node("n0", cpu="2")), as_list(low, high))


def test_a_victims_grace_period_delays_its_preemptors_bind() -> None:
    out = _preemption(30)
    high = out["pods"]["default/high"]
    assert high["result"] == "Scheduled" and high["node"] == "n0"
    assert high["victims"] == ["default/low"]
    latency = out["summary"]["preemptionLatencySeconds"]
    assert latency["preemptors"] == 1 and latency["bound"] == 1
    assert 30.0 <= latency["p50"] < 31.0 and latency["p99"] == latency["p50"]
    assert out["summary"]["virtualSeconds"] >= 30.0
    assert out["pods"]["default/low"]["result"] == "Preempted"


def test_a_victim_with_zero_grace_frees_its_node_at_once() -> None:
    out = _preemption(0)
    assert out["pods"]["default/high"]["node"] == "n0"
    assert out["summary"]["preemptionLatencySeconds"]["p50"] < 1.0


def test_a_victim_still_terminating_when_the_what_if_gives_up_counts_as_preempted() -> None:
    out = _preemption(3600)  # beyond the what-if's 900 virtual seconds
    assert out["pods"]["default/low"]["result"] == "Preempted"
    high = out["pods"]["default/high"]
    assert high["result"] == "Unschedulable" and high["nominatedNode"] == "n0"
    latency = out["summary"]["preemptionLatencySeconds"]
    assert latency == {"preemptors": 1, "bound": 0, "p50": None, "p99": None}


def _sim() -> SimCluster:
    return SimCluster(load_config(None, known_plugins=known_plugin_names()))


def test_the_preemptor_waits_nominated_and_does_not_preempt_again() -> None:
    """While its victim terminates, the preemptor is retried (a node is added) and fails;
    ``PodEligibleToPreemptOthers`` refuses a second preemption, though the new node has a
    cheaper victim; the preemptor is bound to its nominated node once the victim is gone,
    never earlier (no overcommit at any step)."""
    sim = _sim()
    sim.api.create_node(parse_node(node("n0", cpu="2")))
    sim.api.create_pod(parse_pod(pod("w", cpu="2", node_name="n0", priority=5)))
    sim.api.create_pod(parse_pod(pod("p", cpu="2", priority=100)))

    def add_cheaper_victim() -> None:
        sim.api.create_node(parse_node(node("n2", cpu="2")))
        sim.api.create_pod(parse_pod(pod("z", cpu="2", node_name="n2", priority=1)))

    seen: dict[str, Any] = {}

    def just_before_the_victim_goes() -> None:
        s = sim.scheduler
        seen["attempts"] = s.pod_attempts["default/p"]
        seen["w"] = sim.api.pods["default/w"].deletion_timestamp
        seen["message"] = s.failures["default/p"][1]
        seen["nominated"] = s.queue.nominator.node_of("default/p")

    sim.loop.call_at(5.0, add_cheaper_victim)
    sim.loop.call_at(29.0, just_before_the_victim_goes)
    while sim.loop.now <= 120 and sim.loop.step():
        assert sim.api.overcommitted() == [] and not sim.scheduler.cluster.overcommitted_nodes()
        if sim.api.pods["default/p"].node_name:
            assert "default/w" not in sim.api.pods  # bound only once the victim is gone
    assert seen["attempts"] >= 2  # retried during the grace period
    assert seen["w"] == 30.0 and seen["nominated"] == "n0"
    # DynamicResources' PostFilter reason comes first, as in upstream's default profile
    assert seen["message"].startswith(f"0/2 nodes are available: 2 Insufficient cpu. {TERMINATING}")
    assert sim.api.pods["default/p"].node_name == "n0"
    assert sim.api.stats.bound_at["default/p"] >= 30.0
    z = sim.api.pods["default/z"]
    assert z.node_name == "n2" and z.deletion_timestamp is None  # never a second victim
    assert sim.scheduler.preemptions["default/p"] == ("n0", ("default/w",))


def test_a_terminating_pod_still_holds_resources_and_counts_for_anti_affinity() -> None:
    """Upstream's NodeInfo keeps a terminating Pod (NodeResourcesFit counts it, so does
    InterPodAffinity); only PodTopologySpread skips it.  A guard: this held before."""
    old = pod("old", cpu="1500m", node_name="n0")
    old["metadata"]["labels"] = {"app": "web"}
    old["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:30Z"
    term = {
        "labelSelector": {"matchLabels": {"app": "web"}},
        "topologyKey": "kubernetes.io/hostname",
    }
    away = pod(
        "away",
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    )
    cluster = as_list(node("n0", cpu="2"), node("n1", cpu="2"), old)
    verdict = kubesched.explain(cluster, away)["nodes"]["n0"]
    assert verdict["plugin"] == "InterPodAffinity"
    big = kubesched.explain(cluster, pod("big", cpu="1"))["nodes"]["n0"]
    assert big["plugin"] == "NodeResourcesFit" and big["reasons"] == ["Insufficient cpu"]
