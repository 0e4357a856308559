"""Deltas to scheduler calls; Event and condition writing; health probes (no threads)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kubesched.api import objects as api
from kubesched.api.pods import parse_pod
from kubesched.live.dispatch import Dispatcher
from kubesched.live.health import probe
from kubesched.live.informer import ADDED, DELETED, MODIFIED, Delta
from kubesched.live.recorder import (
    MAX_QUEUED_EVENTS,
    NOTE_LIMIT,
    SPAM_BURST,
    Recorder,
    SpamFilter,
    cap_note,
    has_condition,
    pod_condition_patch,
)
from kubesched.scheduler import Scheduler
from tests.live.conftest import make_config, node, pod


def raw_pod(
    name: str, rv: str, uid: str = "u1", phase: str = "Pending", node_name: str = ""
) -> dict:
    obj = pod(name)
    obj["metadata"].update(resourceVersion=rv, uid=uid)
    obj["spec"]["nodeName"] = node_name
    obj["status"] = {"phase": phase}
    return obj


@pytest.fixture
def dispatch() -> Dispatcher:
    s = Scheduler(make_config(leader=False), clock=time.monotonic)
    d = Dispatcher(s)
    d.apply(Delta("Node", ADDED, None, node("n1")))
    return d


def pending(d: Dispatcher) -> int:
    return sum(d.scheduler.queue.pending_pods().values())


def test_pods_flow_into_queue_and_cache(dispatch: Dispatcher) -> None:
    d = dispatch
    d.apply(Delta("Pod", ADDED, None, raw_pod("p", "1")))
    assert pending(d) == 1
    bound = raw_pod("p", "2", node_name="n1")
    d.apply(Delta("Pod", MODIFIED, raw_pod("p", "1"), bound))
    assert pending(d) == 0 and d.scheduler.cluster.pods["default/p"].pod.node_name == "n1"
    d.apply(Delta("Pod", MODIFIED, bound, bound))  # a resync: same resourceVersion, dropped
    d.apply(Delta("Pod", MODIFIED, bound, raw_pod("p", "3", phase="Succeeded", node_name="n1")))
    assert "default/p" not in d.scheduler.cluster.pods and "default/p" not in d.pods


def test_recreated_pod_is_delete_then_add(dispatch: Dispatcher) -> None:
    d = dispatch
    d.apply(Delta("Pod", ADDED, None, raw_pod("p", "1", uid="old", node_name="n1")))
    d.apply(Delta("Pod", MODIFIED, None, raw_pod("p", "5", uid="new")))
    assert "default/p" not in d.scheduler.cluster.pods and pending(d) == 1
    assert d.pods["default/p"].uid == "new"
    d.apply(Delta("Pod", DELETED, None, raw_pod("p", "6", uid="new")))
    assert pending(d) == 0 and not d.pods


def test_bad_objects_are_skipped_not_fatal(dispatch: Dispatcher) -> None:
    d = dispatch
    bad = raw_pod("bad", "1")
    bad["spec"]["containers"] = []
    d.apply(Delta("Pod", ADDED, None, bad))
    d.apply(Delta("Node", ADDED, None, {"kind": "Node", "metadata": {}}))
    assert d.skipped == 2 and pending(d) == 0


def test_nodes_and_other_objects(dispatch: Dispatcher) -> None:
    d = dispatch
    d.apply(Delta("Node", MODIFIED, node("n1"), node("n1", zone="a")))
    assert d.nodes["n1"].labels["zone"] == "a"
    ns = {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "t", "labels": {"x": "y"}}}
    d.apply(Delta("Namespace", ADDED, None, ns))
    assert d.scheduler.cluster.namespaces.labels["t"] == {"x": "y"}
    d.apply(Delta("Node", DELETED, None, node("n1")))
    assert len(d.scheduler.cluster.nodes) == 0


@pytest.mark.parametrize(
    ("size", "capped"), [(10, False), (NOTE_LIMIT, False), (NOTE_LIMIT + 1, True)]
)
def test_note_is_capped_at_1024_bytes(size: int, capped: bool) -> None:
    out = cap_note("é" * (size // 2) + "x" * (size % 2))
    assert len(out.encode()) <= NOTE_LIMIT and out.endswith(" ...") == capped


def test_spam_filter_burst_then_refill() -> None:
    t = [0.0]
    f = SpamFilter(clock=lambda: t[0])
    assert all(f.allow(("u", "FailedScheduling")) for _ in range(SPAM_BURST))
    assert not f.allow(("u", "FailedScheduling"))
    assert f.allow(("u", "Scheduled")) and f.allow(("other", "FailedScheduling"))
    t[0] += 300.0
    assert f.allow(("u", "FailedScheduling")) and not f.allow(("u", "FailedScheduling"))


def with_status(status: dict[str, Any]) -> api.Pod:
    raw = pod("p")
    raw["metadata"]["uid"] = "u"
    raw["status"] = status
    return parse_pod(raw)


@pytest.mark.parametrize(
    ("status", "nominated", "same"),
    [
        ({}, "", False),
        (
            {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "m",
                    }
                ]
            },
            "",
            True,
        ),
        (
            {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "other",
                    }
                ]
            },
            "",
            False,
        ),
        (
            {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "m",
                    }
                ]
            },
            "n1",
            False,
        ),
    ],
)
def test_condition_written_only_when_it_changes(status: dict, nominated: str, same: bool) -> None:
    p = with_status(status)
    p.nominated_node_name = nominated
    assert has_condition(p, "Unschedulable", "m") == same
    patch = pod_condition_patch(p, "Unschedulable", "m")["status"]
    (cond,) = patch["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == (
        "PodScheduled",
        "False",
        "Unschedulable",
    )
    if nominated:
        assert patch["nominatedNodeName"] == nominated
    else:
        assert "nominatedNodeName" not in patch


def test_recorder_coalesces_conditions_and_bounds_events() -> None:
    r = Recorder(client=None, host="h")  # type: ignore[arg-type]  # nothing is written here
    p = with_status({})
    r.pod_failed(p, "Unschedulable", "first")
    r.pod_failed(p, "Unschedulable", "second")
    assert list(r.conditions.values()) == [(p, "Unschedulable", "second")]
    ev = r.event_body(r.events[0])
    assert (ev["reason"], ev["type"], ev["reportingInstance"]) == (
        "FailedScheduling",
        "Warning",
        "kubesched-h",
    )
    assert ev["regarding"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "default",
        "name": "p",
        "uid": "u",
    }
    for i in range(MAX_QUEUED_EVENTS + 10):
        other = with_status({})
        other.uid = f"u{i}"
        r.pod_scheduled(other, "n1")
    assert len(r.events) == MAX_QUEUED_EVENTS and r.dropped == 12


@pytest.mark.parametrize(
    ("checks", "code", "lines"),
    [
        ({}, 200, []),
        ({"a": lambda: True}, 200, []),
        ({"a": lambda: True, "b": lambda: False}, 500, ["[+]a ok", "[-]b failed"]),
        ({"boom": lambda: 1 / 0}, 500, ["[-]boom failed"]),
    ],
)
def test_probe(checks: dict, code: int, lines: list[str]) -> None:
    got, body = probe(checks)
    assert got == code
    assert body == b"ok" if code == 200 else body.decode().split("\n")[: len(lines)] == lines


def test_a_dropped_nomination_is_cleared() -> None:
    p = with_status({"nominatedNodeName": "n1"})
    assert p.nominated_node_name == "n1"
    p.nominated_node_name = ""
    assert not has_condition(p, "Unschedulable", "m")
    assert pod_condition_patch(p, "Unschedulable", "m")["status"]["nominatedNodeName"] is None


def test_a_pod_that_cannot_be_read_stays_visible_and_is_read_again_when_it_changes() -> None:
    """Issue 31 item 2: a Pod the API server accepts and kubesched cannot read used to vanish
    (one log line).  It is reported (condition and Event through ``report``), counted as
    pending, and read again on its next update; another scheduler's Pod is left alone."""
    s = Scheduler(make_config(leader=False), clock=time.monotonic)
    reported: list[tuple[str, str]] = []
    d = Dispatcher(s, report=lambda p, message: reported.append((p.key, message)))
    d.apply(Delta("Node", ADDED, None, node("n1")))
    bad = raw_pod("p", "1")
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "one"
    d.apply(Delta("Pod", ADDED, None, bad))
    assert [key for key, _ in reported] == ["default/p"]
    assert "kubesched cannot read this Pod" in reported[0][1] and "cpu" in reported[0][1]
    assert set(s.unreadable) == {"default/p"}
    s.sync_metrics()
    pending = s.metrics.registry.get_sample_value(
        "scheduler_pending_pods", {"queue": "unschedulable"}
    )
    assert pending == 1
    theirs = pod("q", cpu="one", scheduler="someone-else")
    d.apply(Delta("Pod", ADDED, None, theirs))
    assert len(reported) == 1
    d.apply(Delta("Pod", MODIFIED, bad, raw_pod("p", "2")))
    assert s.unreadable == {}
    assert "default/p" in d.pods
    assert s.schedule_one()


def _bound(name: str, cpu: str, node_name: str) -> dict[str, Any]:
    obj = raw_pod(name, "1", uid=f"u-{name}", phase="Running", node_name=node_name)
    obj["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    obj["spec"]["schedulerName"] = "someone-else"
    return obj


def _fits_one_more(d: Dispatcher, cpu: str) -> bool:
    incoming = raw_pod("incoming", "1", uid="u-incoming")
    incoming["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    d.apply(Delta("Pod", ADDED, None, incoming))
    assert d.scheduler.schedule_one()
    s = d.scheduler
    assert s.cluster.overcommitted_nodes() == []
    failure = s.failures.get("default/incoming")  # no API server here: a fit fails its bind
    return failure is None or "Insufficient cpu" not in failure[1]


@pytest.mark.parametrize("listed", [False, True], ids=["one by one", "first list"])
def test_a_node_deleted_and_created_again_keeps_its_running_pods(listed: bool) -> None:
    """Issue 31 item 1(a): the cache forgot a deleted Node's Pods, so when a Node of the same
    name came back its running Pods were not counted and the next Pod overcommitted it.
    Upstream keeps them until they are deleted themselves."""
    s = Scheduler(make_config(leader=False), clock=time.monotonic)
    d = Dispatcher(s)
    d.apply(Delta("Node", ADDED, None, node("n1")))
    running = _bound("running", "3", "n1")
    if listed:
        d.apply_listed(Delta("Pod", ADDED, None, running, listed=[running]))
    else:
        d.apply(Delta("Pod", ADDED, None, running))
    d.apply(Delta("Node", DELETED, node("n1"), node("n1")))
    assert s.cluster.ghosts == {"n1": {"default/running": d.pods["default/running"]}}
    d.apply(Delta("Node", ADDED, None, node("n1")))
    assert s.cluster.ghosts == {} and "default/running" in s.cluster.pods
    assert not _fits_one_more(d, "2")  # 3 of 4 cpu are taken


def test_a_pod_bound_to_a_node_not_yet_delivered_is_counted_when_it_arrives() -> None:
    """Issue 31 item 1(b): a Pod bound (by another scheduler) to a Node the informer has not
    delivered yet was dropped for good; it waits for its Node and is counted on it."""
    s = Scheduler(make_config(leader=False), clock=time.monotonic)
    d = Dispatcher(s)
    d.apply(Delta("Pod", ADDED, None, _bound("early", "3", "n2")))
    assert "default/early" in s.cluster.ghosts["n2"]
    d.apply(Delta("Node", ADDED, None, node("n2")))
    assert "default/early" in s.cluster.pods
    assert not _fits_one_more(d, "2")
    d.apply(Delta("Pod", DELETED, _bound("early", "3", "n2"), _bound("early", "3", "n2")))
    assert s.cluster.ghosts == {} and "default/early" not in s.cluster.pods


def test_a_waiting_pod_deleted_before_its_node_arrives_is_forgotten() -> None:
    s = Scheduler(make_config(leader=False), clock=time.monotonic)
    d = Dispatcher(s)
    gone = _bound("gone", "3", "n3")
    d.apply(Delta("Pod", ADDED, None, gone))
    d.apply(Delta("Pod", DELETED, gone, gone))
    d.apply(Delta("Node", ADDED, None, node("n3")))
    assert s.cluster.ghosts == {} and _fits_one_more(d, "2")
