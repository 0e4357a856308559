"""Live startup in four segments: from the Pods' own timestamps and conditions to
``kubesched_pod_startup_segment_duration_seconds{segment}``."""

from __future__ import annotations

import copy
import datetime
from collections.abc import Callable
from typing import Any

from kubesched.live.informer import ADDED, DELETED, MODIFIED, Delta
from kubesched.live.startup import StartupTracker
from kubesched.metrics import STARTUP_SEGMENT_METRIC, STARTUP_TOTAL_METRIC, SchedulerMetrics
from kubesched.testing import VirtualClock
from tests.live.conftest import Api, Replica, node, pod
from tests.live.conftest import wait_for as wait
from tests.live.fakestore import by_plural

T0 = 1_800_000_000.0  # whole seconds, as the API server writes timestamps


def rfc3339(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def manifest(name: str, *, gated: bool = False, scheduler: str = "kubesched") -> dict[str, Any]:
    p = pod(name, scheduler=scheduler)
    p["metadata"].update(uid=f"uid-{name}", creationTimestamp=rfc3339(T0))
    if gated:
        p["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
    p["status"] = {"phase": "Pending"}
    return p


def changed(obj: dict[str, Any], fn: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    new = copy.deepcopy(obj)
    fn(new)
    return new


def condition(kind: str, at: float) -> dict[str, Any]:
    return {"type": kind, "status": "True", "lastTransitionTime": rfc3339(at)}


def bind(obj: dict[str, Any], scheduled_at: float | None = None) -> None:
    obj["spec"]["nodeName"] = "n1"
    conds = obj["status"].setdefault("conditions", [])
    if scheduled_at is not None:
        conds.append(condition("PodScheduled", scheduled_at))


def ready(at: float) -> Callable[[dict[str, Any]], None]:
    def fn(obj: dict[str, Any]) -> None:
        obj["status"]["phase"] = "Running"
        obj["status"].setdefault("conditions", []).append(condition("Ready", at))

    return fn


def series(m: SchedulerMetrics) -> dict[str, tuple[float, float]]:
    """segment -> (count, sum); ``total`` for created to Ready."""
    s = m.samples()
    out = {}
    for seg in ("admission", "scheduling", "binding", "node"):
        labels = (("segment", seg),)
        out[seg] = (
            s[(f"{STARTUP_SEGMENT_METRIC}_count", labels)],
            s[(f"{STARTUP_SEGMENT_METRIC}_sum", labels)],
        )
    out["total"] = (
        s[(f"{STARTUP_TOTAL_METRIC}_count", ())],
        s[(f"{STARTUP_TOTAL_METRIC}_sum", ())],
    )
    return out


def tracker() -> tuple[StartupTracker, VirtualClock, SchedulerMetrics]:
    clock = VirtualClock(T0)
    m = SchedulerMetrics()
    return StartupTracker(["kubesched"], m, now=clock), clock, m


def test_every_segment_series_starts_at_zero() -> None:
    m = SchedulerMetrics()
    assert all(v == (0.0, 0.0) for v in series(m).values())
    text = m.exposition().decode()
    assert f'{STARTUP_SEGMENT_METRIC}_bucket{{le="+Inf",segment="node"}} 0.0' in text


def test_a_gated_pod_is_split_into_its_four_segments() -> None:
    t, clock, m = tracker()
    p0 = manifest("a", gated=True)
    t.observe(Delta("Pod", ADDED, None, p0))
    clock.now = T0 + 3.0
    p1 = changed(p0, lambda o: o["spec"].pop("schedulingGates"))
    t.observe(Delta("Pod", MODIFIED, p0, p1))  # the gates were removed (admitted)
    clock.now = T0 + 5.0

    def binding_cycle() -> None:
        clock.now = T0 + 5.25  # PreBind, the Binding call
        t.bound("uid-a")

    t.binding_cycle(binding_cycle)()
    p2 = changed(p1, lambda o: bind(o, T0 + 5))
    t.observe(Delta("Pod", MODIFIED, p1, p2))
    assert series(m)["total"] == (0.0, 0.0)  # not Ready yet
    p3 = changed(p2, ready(T0 + 12))
    t.observe(Delta("Pod", MODIFIED, p2, p3))
    got = series(m)
    assert got == {
        "admission": (1.0, 3.0),
        "scheduling": (1.0, 2.0),
        "binding": (1.0, 0.25),
        "node": (1.0, 6.75),
        "total": (1.0, 12.0),
    }
    t.observe(Delta("Pod", MODIFIED, p3, changed(p3, ready(T0 + 30))))  # Ready again: once
    assert series(m) == got and not t.pods


def test_a_pod_bound_by_another_replica_ends_scheduling_at_podscheduled() -> None:
    t, _, m = tracker()
    p0 = manifest("b")
    t.observe(Delta("Pod", ADDED, None, p0))
    p1 = changed(p0, lambda o: bind(o, T0 + 4))
    t.observe(Delta("Pod", MODIFIED, p0, p1))
    t.observe(Delta("Pod", MODIFIED, p1, changed(p1, ready(T0 + 9))))
    got = series(m)
    assert got["admission"] == (1.0, 0.0)  # created without gates
    assert got["scheduling"] == (1.0, 4.0) and got["binding"] == (0.0, 0.0)
    assert got["node"] == (1.0, 5.0) and got["total"] == (1.0, 9.0)


def test_ready_seen_before_the_worker_reports_the_bind_keeps_the_binding_segment() -> None:
    # Binding runs on a worker thread: the Pod's bound and Ready events may be handled on
    # the scheduling thread before the worker calls ``bound``.
    t, clock, m = tracker()
    p0 = manifest("a")
    t.observe(Delta("Pod", ADDED, None, p0))
    clock.now = T0 + 2.0
    p2 = changed(changed(p0, lambda o: bind(o, T0 + 3)), ready(T0 + 8))

    def binding_cycle() -> None:
        clock.now = T0 + 3.0  # the POST was accepted, the worker not back yet
        t.observe(Delta("Pod", MODIFIED, p0, p2))  # bound and Ready, on the other thread
        assert series(m)["total"] == (0.0, 0.0)  # held: this cycle may be binding it
        t.bound("uid-a")

    t.binding_cycle(binding_cycle)()
    assert series(m) == {
        "admission": (1.0, 0.0),
        "scheduling": (1.0, 2.0),
        "binding": (1.0, 1.0),
        "node": (1.0, 5.0),
        "total": (1.0, 8.0),
    }
    assert not t.pods


def test_a_ready_pod_held_for_cycles_that_did_not_bind_it_is_recorded_when_they_end() -> None:
    t, clock, m = tracker()
    p0 = manifest("b")
    t.observe(Delta("Pod", ADDED, None, p0))
    clock.now = T0 + 1.0
    other = t.binding_cycle(lambda: None)  # in flight, binding some other Pod
    failed = t.binding_cycle(lambda: None)  # in flight, its bind will fail
    p1 = changed(changed(p0, lambda o: bind(o, T0 + 4)), ready(T0 + 9))
    t.observe(Delta("Pod", MODIFIED, p0, p1))  # bound by another replica, Ready
    other()
    assert series(m)["total"] == (0.0, 0.0)  # `failed` may still be binding it
    failed()
    got = series(m)
    assert got["scheduling"] == (1.0, 4.0) and got["binding"] == (0.0, 0.0)
    assert got["node"] == (1.0, 5.0) and got["total"] == (1.0, 9.0)
    assert not t.pods
    t.binding_cycle(lambda: t.bound("uid-b"))()  # a late report changes nothing
    assert series(m) == got


def test_pods_not_followed_from_their_start_observe_nothing() -> None:
    t, _, m = tracker()
    running = changed(manifest("c"), lambda o: (bind(o, T0 + 1), ready(T0 + 2)(o)))
    t.observe(Delta("Pod", ADDED, None, running))  # a restart's list: already running
    other = manifest("d", scheduler="default-scheduler")
    t.observe(Delta("Pod", ADDED, None, other))
    t.observe(
        Delta("Pod", MODIFIED, other, changed(other, lambda o: (bind(o, T0), ready(T0 + 1)(o))))
    )
    t.observe(Delta("Pod", ADDED, None, {"metadata": {"uid": "x"}, "spec": ["not", "a map"]}))
    gone = manifest("e")
    t.observe(Delta("Pod", ADDED, None, gone))
    t.observe(Delta("Pod", DELETED, gone, gone))
    assert all(v == (0.0, 0.0) for v in series(m).values())
    assert not t.pods


def test_a_listed_batch_is_followed_as_its_added_deltas() -> None:
    objs = [
        manifest("a"),
        manifest("b", gated=True),
        changed(manifest("c"), lambda o: (bind(o, T0 + 1), ready(T0 + 2)(o))),  # running
        manifest("d", scheduler="default-scheduler"),
        {"metadata": {"uid": "x"}, "spec": ["not", "a map"]},
        changed(manifest("odd"), lambda o: o["spec"].update(schedulerName=["a", "list"])),
        manifest("e"),  # after the manifest that cannot be followed
    ]
    one, _, _ = tracker()
    for obj in objs:
        one.observe(Delta("Pod", ADDED, None, obj))
    listed, _, _ = tracker()
    listed.observe_listed("Pod", objs)
    listed.observe_listed("Node", [manifest("f")])  # other kinds are ignored
    assert listed.pods == one.pods and set(listed.pods) == {"uid-a", "uid-b", "uid-e"}


def test_run_exports_the_segments_of_a_pod_it_scheduled(
    api: Api, replicas: Callable[..., Replica]
) -> None:
    api.create(node("n1"))
    r = replicas("a")
    gated = pod("web")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
    api.create(gated)
    wait(lambda: r.live.scheduler.queue.pending_pods().get("gated") == 1)
    pods = by_plural("pods")
    current = api.pod("web")
    current["spec"].pop("schedulingGates")
    api.store.update(pods, "default", "web", current, status_only=False)
    wait(lambda: api.node_of("web") == "n1")
    assert "uid" in api.pod("web")["metadata"]
    bound = api.pod("web")
    ready_at = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    bound["status"]["conditions"].append(
        {"type": "Ready", "status": "True", "lastTransitionTime": ready_at}
    )
    api.store.update(pods, "default", "web", bound, status_only=True)  # the kubelet
    m = r.live.scheduler.metrics
    wait(lambda: series(m)["total"][0] == 1.0)
    got = series(m)
    assert {k: v[0] for k, v in got.items()} == dict.fromkeys(got, 1.0)
    assert 0.0 <= got["binding"][1] < 5.0
    text = m.exposition().decode()
    assert f'{STARTUP_SEGMENT_METRIC}_count{{segment="scheduling"}} 1.0' in text
