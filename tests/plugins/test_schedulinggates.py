"""SchedulingGates: upstream ``scheduling_gates_test.go`` as data."""

from __future__ import annotations

import pytest

from kubesched.config.featuregates import FeatureGates
from kubesched.framework.interface import (
    SUCCESS,
    ActionType,
    Code,
    Handle,
    QueueingHint,
    Status,
)
from kubesched.plugins import schedulinggates as sg
from kubesched.testing import make_cluster, make_pod


def plugin() -> sg.SchedulingGates:
    return sg.new(None, Handle(make_cluster([])))


@pytest.mark.parametrize(
    ("gates", "want"),
    [
        ((), SUCCESS),
        (
            ("foo", "bar"),
            Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("waiting for scheduling gates: [foo bar]",)
            ),
        ),
        (
            ("example.com/one",),
            Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                ("waiting for scheduling gates: [example.com/one]",),
            ),
        ),
    ],
    ids=["no gates", "two gates", "one gate"],
)
def test_pre_enqueue(gates: tuple[str, ...], want: Status) -> None:
    assert plugin().pre_enqueue(make_pod("p").gates(*gates).obj()) == want


@pytest.mark.parametrize(
    ("updated", "want"),
    [
        (make_pod("p").obj(), QueueingHint.QUEUE),
        (make_pod("other").obj(), QueueingHint.QUEUE_SKIP),
        ("not-a-pod", QueueingHint.QUEUE),
    ],
    ids=["target pod ungated", "another pod", "wrong type"],
)
def test_hint_gates_eliminated(updated: object, want: QueueingHint) -> None:
    gated = make_pod("p").gates("foo").obj()
    handle = Handle(make_cluster([]), feature_gates=FeatureGates("1.36"))
    (ev,) = sg.new(None, handle).events_to_register()
    assert ev.event.resource == "Pod"
    assert ev.event.action == ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    assert ev.hint is not None
    assert ev.hint(gated, gated, updated) == want


def test_events_to_register_v137() -> None:
    """v1.37: TargetPod/UpdatePodSchedulingGatesEliminated, always Queue (only the queued
    Pod's own update arrives)."""
    (ev,) = plugin().events_to_register()
    assert ev.event.resource == "TargetPod"
    assert ev.event.action == ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    assert ev.hint is None
