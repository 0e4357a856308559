"""``explain`` on a member of a Workload API PodGroup: the group's verdict, where its members
fit and what is missing; the member's own result is what the scheduler would report."""

from __future__ import annotations

from typing import Any

from kubesched.config import featuregates
from kubesched.explainer.cycle import explain
from tests._podgroup import gang, member, node

GATES = featuregates.with_settings("1.37", {"GenericWorkload": True})


def _member(name: str, cpu: str) -> dict[str, Any]:
    return member(name, "g", cpu)


def _group(min_count: int) -> dict[str, Any]:
    return gang("g", min_count)


def _snapshot(min_count: int, n: int, cpu: str) -> dict[str, Any]:
    items = [node("n0", "4"), node("n1", "1"), _group(min_count)]
    items += [_member(f"m{i}", cpu) for i in range(n)]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def test_a_member_that_fits_alone_in_a_group_that_does_not() -> None:
    out = explain(_snapshot(3, 3, "2"), _member("m0", "2"), gates=GATES)
    group = out["podGroup"]
    assert group["result"] == "Unschedulable"
    assert group["fitPerNode"] == {"n0": 2}
    assert group["placements"]["ns/m2"] is None
    assert group["unplaced"]["ns/m2"] == "0/2 nodes are available: 2 Insufficient cpu."
    assert group["missing"] == "1 more member(s) must fit (minCount 3: 2 placed, 0 left to try)"
    assert out["result"] == "Unschedulable"
    assert out["message"] == (
        "pod group is unschedulable, minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, "
        "pod group preemption: No preemption victims found for incoming preemptor"
    )


def test_a_group_that_fits() -> None:
    out = explain(_snapshot(2, 2, "1"), _member("m0", "1"), gates=GATES)
    assert out["result"] == "Scheduled"
    assert out["podGroup"]["result"] == "Scheduled"
    assert sum(out["podGroup"]["fitPerNode"].values()) == 2


def test_a_group_short_of_members_is_gated_and_says_how_many_are_missing() -> None:
    out = explain(_snapshot(3, 2, "1"), _member("m0", "1"), gates=GATES)
    assert out["result"] == "Gated"
    assert out["message"] == "waiting for minCount pods from a gang to appear in scheduling queue"
    assert out["podGroup"]["missing"] == "1 more member(s) must exist (minCount 3)"


def test_without_the_gate_there_is_no_group() -> None:
    out = explain(_snapshot(3, 3, "2"), _member("m0", "2"))
    assert "podGroup" not in out
