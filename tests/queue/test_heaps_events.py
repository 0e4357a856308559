"""KeyedHeap behaviour and the event helpers (matching, labels, pod/node diffs)."""

from __future__ import annotations

import random

import pytest

from kubesched.api import objects as api
from kubesched.framework.events import object_event
from kubesched.framework.interface import ActionType, ClusterEvent, Resource
from kubesched.queue import events
from kubesched.queue.heaps import KeyedHeap
from kubesched.testing import make_node, make_pod

A = ActionType
R = Resource


def test_heap_orders_updates_and_removes() -> None:
    h: KeyedHeap[str] = KeyedHeap()
    for key, prio in [("a", 3), ("b", 1), ("c", 2), ("d", 1)]:
        h.push(key, (prio, 1.5), key)
    h.push("a", (0, 2.5), "a")  # update moves it to the front
    assert h.remove("c") == "c"
    assert h.remove("zz") is None
    assert len(h) == 3 and "c" not in h and "a" in h
    assert h.peek_priority() == (0, 2.5)
    assert [h.pop(), h.pop(), h.pop(), h.pop()] == ["a", "b", "d", None]  # b/d FIFO tie


def test_heap_matches_sorted_order_under_churn() -> None:
    rng = random.Random(7)
    h: KeyedHeap[int] = KeyedHeap()
    live: dict[str, int] = {}
    for i in range(5000):
        key = f"k{rng.randrange(300)}"
        if rng.random() < 0.3:
            h.remove(key)
            live.pop(key, None)
        else:
            h.push(key, (i % 97,), i)
            live[key] = i
    assert len(h._heap) <= 2 * len(h) + 64 + 1  # garbage is compacted
    popped = []
    while (item := h.pop()) is not None:
        popped.append(item)
    assert sorted(popped) == sorted(live.values())
    assert [p % 97 for p in popped] == sorted(p % 97 for p in popped)
    # equal priorities pop in push order (the token breaks ties, never the key)
    ties = [p for p in popped if p % 97 == popped[0] % 97]
    assert ties == sorted(ties)


@pytest.mark.parametrize(
    ("registered", "incoming", "want"),
    [
        (ClusterEvent(R.NODE, A.UPDATE), ClusterEvent(R.NODE, A.UPDATE_NODE_LABEL), True),
        (ClusterEvent(R.NODE, A.UPDATE_NODE_LABEL), ClusterEvent(R.NODE, A.UPDATE), False),
        (ClusterEvent(R.NODE, A.ADD | A.UPDATE_NODE_TAINT), ClusterEvent(R.NODE, A.ADD), True),
        (ClusterEvent(R.POD, A.ADD), ClusterEvent(R.ASSIGNED_POD, A.ADD), True),
        (ClusterEvent(R.POD, A.DELETE), ClusterEvent(R.UNSCHEDULED_POD, A.DELETE), True),
        (ClusterEvent(R.ASSIGNED_POD, A.ADD), ClusterEvent(R.POD, A.ADD), False),
        (ClusterEvent(R.NODE, A.ADD), ClusterEvent(R.NODE, A.DELETE), False),
        (ClusterEvent(R.WILDCARD, A.ALL), ClusterEvent(R.NODE, A.ADD), True),
        (ClusterEvent(R.NODE, A.ALL), events.EVENT_UNSCHEDULABLE_TIMEOUT, False),
        (ClusterEvent(R.WILDCARD, A.ADD), ClusterEvent(R.NODE, A.ADD), True),
    ],
)
def test_matches_like_upstream(
    registered: ClusterEvent, incoming: ClusterEvent, want: bool
) -> None:
    assert events.matches(registered, incoming) is want


@pytest.mark.parametrize(
    ("event", "label"),
    [
        (ClusterEvent(R.NODE, A.UPDATE_NODE_LABEL), "NodeUpdateNodeLabel"),
        (events.EVENT_UNSCHEDULED_POD_ADD, "UnschedulablePodAdd"),
        (events.EVENT_ASSIGNED_POD_DELETE, "AssignedPodDelete"),
        (ClusterEvent(R.POD, A.UPDATE), "PodUpdate"),
        (ClusterEvent(R.NODE, A.ALL), "NodeAll"),
        (events.EVENT_UNSCHEDULABLE_TIMEOUT, "UnschedulableTimeout"),
        (events.EVENT_FORCE_ACTIVATE, "ForceActivate"),
    ],
)
def test_event_label(event: ClusterEvent, label: str) -> None:
    assert events.event_label(event) == label


def _pod(**kw: object) -> api.Pod:
    p = make_pod("p").req(cpu="1", memory="1Gi").labels(app="a").obj()
    for k, v in kw.items():
        setattr(p, k, v)
    return p


@pytest.mark.parametrize(
    ("new_kw", "want"),
    [
        ({"labels": {"app": "b"}}, [A.UPDATE_POD_LABEL]),
        ({"requests": {"cpu": 500, "memory": 2**30}}, [A.UPDATE_POD_SCALE_DOWN]),
        ({"requests": {"cpu": 1000}}, [A.UPDATE_POD_SCALE_DOWN]),
        ({"requests": {"cpu": 2000, "memory": 2**30}}, [A.UPDATE]),
        ({"tolerations": (api.Toleration(key="k"),)}, [A.UPDATE_POD_TOLERATION]),
        ({"annotations": {"x": "y"}}, [A.UPDATE]),
        (
            {"labels": {}, "tolerations": (api.Toleration(),)},
            [A.UPDATE_POD_LABEL, A.UPDATE_POD_TOLERATION],
        ),
    ],
)
def test_pod_scheduling_properties_change(new_kw: dict[str, object], want: list[A]) -> None:
    got = events.pod_scheduling_properties_change(_pod(**new_kw), _pod())
    assert got == [ClusterEvent(R.UNSCHEDULED_POD, a) for a in want]


def test_pod_change_gates_and_assigned_resource() -> None:
    old = _pod(scheduling_gates=("g",))
    got = events.pod_scheduling_properties_change(_pod(), old)
    assert got == [ClusterEvent(R.UNSCHEDULED_POD, A.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)]
    bound = events.pod_scheduling_properties_change(_pod(node_name="n1"), _pod(node_name="n1"))
    assert bound == [ClusterEvent(R.ASSIGNED_POD, A.UPDATE)]


def test_node_scheduling_properties_change() -> None:
    old = make_node("n").cap(cpu="4").unschedulable().obj()
    new = make_node("n").cap(cpu="8").labels(zone="a").taint("k").obj()
    got = events.node_scheduling_properties_change(new, old)
    assert [e.action for e in got] == [
        A.UPDATE_NODE_TAINT,
        A.UPDATE_NODE_ALLOCATABLE,
        A.UPDATE_NODE_LABEL,
        A.UPDATE_NODE_TAINT,
    ]
    assert events.node_scheduling_properties_change(old, old) == []


def test_node_condition_change_is_update_node_condition() -> None:
    """Upstream's extractNodeConditionsChange: a condition type's status changing (read from
    the parsed object) is ``UpdateNodeCondition``, before annotations; a reason alone is not."""
    from kubesched.api.parse import parse_node

    def node(ready: str, reason: str = "KubeletReady", note: str = "") -> api.Node:
        obj: dict[str, object] = {
            "metadata": {"name": "n", "annotations": {"note": note}},
            "status": {"conditions": [{"type": "Ready", "status": ready, "reason": reason}]},
        }
        return parse_node(obj)

    got = events.node_scheduling_properties_change(node("True", note="x"), node("False"))
    assert [e.action for e in got] == [A.UPDATE_NODE_CONDITION, A.UPDATE_NODE_ANNOTATION]
    assert events.node_scheduling_properties_change(node("True"), node("True", "Other")) == []


def test_v137_target_pod_scale_up_and_label() -> None:
    """Upstream v1.37 ``PodSchedulingPropertiesChange(new, old, isTargetPod)``: an unbound
    Pod's own update is ``TargetPod``; a grown request is ``UpdatePodScaleUp`` (v1.37 only);
    the unscheduled resource is labelled ``UnscheduledPod`` from v1.37."""
    grown = _pod(requests={"cpu": 2000, "memory": 2**30})
    got = events.pod_scheduling_properties_change(grown, _pod(), target=True, since_v137=True)
    assert got == [ClusterEvent(R.TARGET_POD, A.UPDATE_POD_SCALE_UP)]
    assert [events.event_label(e) for e in got] == ["TargetPodUpdatePodScaleUp"]
    before = events.pod_scheduling_properties_change(grown, _pod())
    assert before == [ClusterEvent(R.UNSCHEDULED_POD, A.UPDATE)]
    bound = events.pod_scheduling_properties_change(
        _pod(node_name="n1"), _pod(node_name="n1"), target=True, since_v137=True
    )
    assert bound == [ClusterEvent(R.ASSIGNED_POD, A.UPDATE)]
    delete = events.EVENT_UNSCHEDULED_POD_DELETE
    assert events.event_label(delete) == "UnschedulablePodDelete"
    assert events.event_label(delete, since_v137=True) == "UnscheduledPodDelete"
    pod_update = ClusterEvent(R.POD, A.UPDATE)
    assert events.matches(pod_update, ClusterEvent(R.TARGET_POD, A.UPDATE_POD_SCALE_UP))
    assert not events.matches(ClusterEvent(R.UNSCHEDULED_POD, A.UPDATE), got[0])


def test_an_object_change_is_an_add_or_an_update_as_the_informer_tells() -> None:
    """A new object is an Add, a known one an Update (upstream's informers tell them apart):
    a plugin registered for Add alone (v1.35-1.36 GangScheduling's Workload / PodGroup Add)
    hears the new object and not its updates."""
    gang_add = ClusterEvent(R.WORKLOAD, A.ADD)
    added, updated = object_event("Workload", False, False), object_event("Workload", False, True)
    assert added is not None and updated is not None
    assert events.matches(gang_add, added)
    assert not events.matches(gang_add, updated)
    assert events.matches(ClusterEvent(R.WORKLOAD, A.UPDATE), updated)
    gone = object_event("Workload", True, True)
    assert gone is not None and gone.action == A.DELETE


def test_event_labels_are_worked_out_once_per_event_and_release(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    worked: list[ActionType] = []
    real = events._action_string

    def counting(action: ActionType) -> str:
        worked.append(action)
        return real(action)

    monkeypatch.setattr(events, "_action_string", counting)
    monkeypatch.setattr(events, "_LABELS", ({}, {}))
    for _ in range(3):
        for resource in Resource:
            for action in (ActionType.ADD, ActionType.UPDATE, ActionType.DELETE):
                ev = ClusterEvent(resource, action)
                for since in (False, True):
                    resource_text = (
                        "UnscheduledPod"
                        if since and resource == Resource.UNSCHEDULED_POD
                        else resource.value
                    )
                    want = resource_text + action.name.capitalize()
                    assert events.event_label(ev, since_v137=since) == want
    assert len(worked) == len(Resource) * 3 * 2  # once per event and release, not per call
    labelled = ClusterEvent(Resource.NODE, ActionType.ADD, "NodeAdd")
    assert events.event_label(labelled) == "NodeAdd"
