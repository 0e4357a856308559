"""The generator draws v1.37's deferred resizes (``release_draws.deferred_resize``) with the
gate InPlacePodVerticalScalingSchedulerPreemption for explain, the gate alone for schedule
(never beside a resize-deferred Pod, whose run upstream never settles), nothing before v1.37."""

from __future__ import annotations

from typing import Any

import cases

GATE = "InPlacePodVerticalScalingSchedulerPreemption"


def _deferred(pod: dict[str, Any]) -> bool:
    for c in pod.get("status", {}).get("conditions", []):
        if c.get("type") == "PodResizePending":
            return bool(c.get("reason") == "Deferred")
    return False


def _policies(request: dict[str, Any]) -> int:
    items = request["cluster"]["items"]
    return sum("podPreemptionPolicy" in o.get("spec", {}) for o in items if o["kind"] == "Node")


def test_explain_cases_draw_deferred_pods_with_the_gate_at_v1_37_only() -> None:
    both = off = 0
    for i in range(200):
        request = cases.case(23, i, "1.37")
        on = request.get("featureGates", {}).get(GATE, False)
        both += on and _deferred(request["pod"])
        off += not on and _deferred(request["pod"])
        older = cases.case(23, i, "1.36")
        assert GATE not in older.get("featureGates", {}) and _policies(older) == 0
    assert both > 20 and off > 3


def test_schedule_cases_set_the_gate_without_a_deferred_pod() -> None:
    seen = 0
    for i in range(200):
        request = cases.schedule_case(23, i, "1.37")
        if not request.get("featureGates", {}).get(GATE):
            continue
        seen += 1
        pods = [o for o in request["cluster"]["items"] if o["kind"] == "Pod"] + request["pods"]
        assert not any(_deferred(p) for p in pods)
    assert seen > 20
