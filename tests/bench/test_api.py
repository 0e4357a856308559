"""The benchmark's API server (the simulator's, without kubelets: deletes, counts) and the
scheduler's client."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import objects as api
from kubesched.bench.api import SchedulerClient, TokenBucket
from kubesched.sim.apiserver import ApiError, SimApiServer
from kubesched.sim.engine import WallClock
from kubesched.testing import make_node, make_pod


class Recorder:
    """A watcher that records what it hears."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def on_node_add(self, node: api.Node) -> None:
        self.events.append(f"node+ {node.name}")

    def on_node_update(self, old: api.Node, new: api.Node) -> None:
        self.events.append(f"node~ {new.name}")

    def on_node_delete(self, node: api.Node) -> None:
        self.events.append(f"node- {node.name}")

    def on_pod_add(self, pod: api.Pod) -> None:
        self.events.append(f"pod+ {pod.key}")

    def on_pod_update(self, old: api.Pod, new: api.Pod) -> None:
        self.events.append(f"pod~ {new.key} {new.node_name}")

    def on_pod_delete(self, pod: api.Pod) -> None:
        self.events.append(f"pod- {pod.key}")

    def on_object(self, obj: dict[str, Any], *, deleted: bool = False) -> None:
        self.events.append(f"{obj['kind']}{'-' if deleted else '+'} {obj['metadata']['name']}")


def _pod(name: str, grace: int | None = None, **kw: Any) -> api.Pod:
    pod = make_pod(name, "ns").obj()
    pod.termination_grace_period_seconds = grace
    for k, v in kw.items():
        setattr(pod, k, v)
    return pod


@pytest.fixture
def server() -> tuple[SimApiServer, Recorder]:
    rec = Recorder()
    srv = SimApiServer(WallClock(lambda: 0.0), lifecycle=False)
    srv.watch(rec)
    srv.create_node(make_node("n1").obj())
    return srv, rec


@pytest.mark.parametrize(
    ("grace", "bound", "gone"),
    [
        (0, True, True),
        (None, True, False),
        (30, True, False),
        (None, False, True),
        (30, False, True),
    ],
)
def test_deletes_follow_an_api_server_without_kubelet(
    server: tuple[SimApiServer, Recorder], grace: int | None, bound: bool, gone: bool
) -> None:
    srv, rec = server
    pod = _pod("p", grace)
    srv.create_pod(pod)
    if bound:
        srv.bind(pod, "n1")
    srv.delete_pod(pod)
    assert (pod.key not in srv.pods) is gone
    assert (f"pod- {pod.key}" in rec.events) is gone
    assert srv.count("ns", "Scheduled") == (0 if gone or not bound else 1)
    assert (pod.key in srv.terminating) is (not gone)


def test_grace_override_deletes_a_bound_pod_at_once(server: tuple[SimApiServer, Recorder]) -> None:
    srv, _ = server
    pod = _pod("p")
    srv.create_pod(pod)
    srv.bind(pod, "n1")
    srv.delete_pod(pod, grace=0)
    assert not srv.pods and srv.count("ns", "Scheduled") == 0


def test_binds_and_conditions_count_as_attempted(server: tuple[SimApiServer, Recorder]) -> None:
    srv, rec = server
    gated = _pod("gated", scheduling_gates=("example.com/hold",))
    plain, failing = _pod("plain"), _pod("failing")
    for p in (gated, plain, failing):
        srv.create_pod(p)
    assert srv.attempted == {gated.key} and not srv.conditions
    assert srv.count("ns", "Attempted") == 1
    srv.bind(plain, "n1")
    srv.pod_scheduling_failed(failing, "Unschedulable", "0/1 nodes are available")
    srv.pod_scheduling_failed(failing, "Unschedulable", "again")  # counted once
    assert (srv.count("ns", "Attempted"), srv.count("ns", "Scheduled")) == (3, 1)
    assert srv.count("ns", "Scheduled", {"missing": "label"}) == 0
    assert f"pod~ {plain.key} n1" in rec.events


@pytest.mark.parametrize(
    ("call", "code"),
    [
        (lambda s, p: s.bind(p, "n1"), 409),  # already bound
        (lambda s, p: s.bind(_pod("ghost"), "n1"), 404),
        (lambda s, p: s.bind(_pod("other"), "n9"), 404),
        (lambda s, p: s.create_pod(_pod("p")), 409),
        (lambda s, p: s.create_node(make_node("n1").obj()), 409),
    ],
)
def test_conflicts_are_refused(server: tuple[SimApiServer, Recorder], call: Any, code: int) -> None:
    srv, _ = server
    pod = _pod("p")
    srv.create_pod(pod)
    srv.create_pod(_pod("other"))
    srv.bind(pod, "n1")
    with pytest.raises(ApiError) as err:
        call(srv, pod)
    assert err.value.code == code


def test_objects_and_namespaces_reach_the_watcher(server: tuple[SimApiServer, Recorder]) -> None:
    srv, rec = server
    srv.create_namespace("a")
    srv.create_namespace("a")  # idempotent
    svc = {"kind": "Service", "metadata": {"name": "web", "namespace": "a"}}
    srv.create_object(svc)
    with pytest.raises(ApiError):
        srv.create_object(svc)
    srv.delete_object("Service", "a", "web")
    assert rec.events[1:] == ["Namespace+ a", "Service+ web", "Service- web"]
    assert srv.namespaces == {"a"}


def test_token_bucket_allows_a_burst_then_the_rate() -> None:
    bucket = TokenBucket(qps=10.0, burst=3, now=0.0)
    starts = [bucket.reserve(0.0) for _ in range(5)]
    assert starts == pytest.approx([0.0, 0.0, 0.0, 0.1, 0.2])
    assert bucket.reserve(10.0) == 10.0  # refilled (up to the burst)


def test_in_memory_client_applies_calls_at_once(server: tuple[SimApiServer, Recorder]) -> None:
    srv, _ = server
    client = SchedulerClient(srv, lambda: 0.0)
    pod = _pod("p")
    srv.create_pod(pod)
    client.submit_binding(lambda: client.bind(pod, "n1"))
    assert srv.pods[pod.key].node_name == "n1"
    assert client.pending == 0 and client.calls == 1


def test_modelled_client_delays_calls_by_the_rate_limit_and_latency(
    server: tuple[SimApiServer, Recorder],
) -> None:
    srv, _ = server
    now = [0.0]
    client = SchedulerClient(srv, lambda: now[0], modelled=True, latency=0.5, qps=2.0, burst=1)
    pods = [_pod(f"p{i}") for i in range(3)]

    def binding(pod: api.Pod) -> Any:
        return lambda: client.bind(pod, "n1")

    for p in pods:
        srv.create_pod(p)
        client.submit_binding(binding(p))
    client.pod_scheduling_failed(pods[0], "Unschedulable", "x")
    assert client.next_due() == pytest.approx(0.5)
    ran = [client.pending, client.run_due(0.49), client.run_due(0.5), client.run_due(1.0)]
    assert ran == [4, 0, 1, 1]  # the second token comes at 0.5 s, its bind at 1.0 s
    assert client.run_due(2.0) == 2
    assert srv.stats.binds == 3 and client.throttled_calls == 3
    assert client.max_wait == pytest.approx(1.5)


def test_a_deleted_node_leaves_its_pods_bound_and_terminating_pods_stay() -> None:
    """Without kubelets or controllers (upstream's integration cluster): the Pods of a deleted
    Node stay bound, and a terminating Pod is never gone, even after its grace period."""
    now = [0.0]
    clock, rec = WallClock(lambda: now[0]), Recorder()
    srv = SimApiServer(clock, lifecycle=False)
    srv.watch(rec)
    srv.create_node(make_node("n1").obj())
    kept, terminating = _pod("kept"), _pod("terminating", 30)
    for p in (kept, terminating):
        srv.create_pod(p)
        srv.bind(p, "n1")
    srv.delete_pod(terminating)
    srv.delete_node("n1")
    srv.delete_pod(terminating)  # its node is gone: still no kubelet, still terminating
    assert set(srv.pods) == {kept.key, terminating.key}
    assert srv.pods[kept.key].node_name == "n1" and set(srv.terminating) == {terminating.key}
    assert srv.count("ns", "Scheduled") == 2 and "node- n1" in rec.events
    now[0] = 100.0
    assert clock.run_due(now[0]) == 0 and terminating.key in srv.pods  # no kubelet timer


def test_the_benchmark_server_keeps_counts_but_no_per_pod_records() -> None:
    """``record=False`` (what the benchmark runs): the counts stay, the per-Pod times and
    bind counts of the simulator's summaries are not kept."""
    srv = SimApiServer(WallClock(lambda: 1.0), lifecycle=False, record=False)
    srv.create_node(make_node("n1").obj())
    pod = _pod("p")
    srv.create_pod(pod)
    srv.bind(pod, "n1")
    stats = srv.stats
    assert (stats.creates, stats.binds, srv.count("ns", "Scheduled")) == (1, 1, 1)
    assert not (stats.created_at or stats.ungated_at or stats.bound_at or stats.binds_per_pod)
