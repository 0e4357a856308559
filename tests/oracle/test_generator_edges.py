"""The default family's edges drawn for upstream's coverage (issue 30, item 3), each against
upstream: PreScore disabled for the scorers whose Score computes its state itself and, at
times, for one whose Score fails without it (``configs.edge_config``), the scheduler's own
gates turned from their defaults in ``schedule_case`` (``release_draws.machinery_gates``),
and a running Pod's update adding a toleration (``hint_cases``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from cases import case, schedule_case
from compare import differences, ours, ours_schedule, schedule_differences
from hint_cases import hint_case, hint_differences, ours_hints
from release_draws import MACHINERY_GATES

from kubesched.config.featuregates import check_settings
from tests.oracle.conftest import _oracle

SCORE_FALLBACK = {"NodeResourcesFit", "NodeResourcesBalancedAllocation", "NodeAffinity"}
SCORE_NEEDS_PRESCORE = {"TaintToleration", "InterPodAffinity", "PodTopologySpread"}


def _prescore_disabled(seed: int, n: int) -> list[tuple[dict[str, Any], set[str]]]:
    found = []
    for i in range(n):
        request = case(seed, i)
        for profile in (request["config"] or {}).get("profiles", []):
            disabled = profile.get("plugins", {}).get("preScore", {}).get("disabled", [])
            if disabled:
                names = {d["name"] for d in disabled}
                assert names & SCORE_FALLBACK
                assert len(names - SCORE_FALLBACK) <= 1
                assert names - SCORE_FALLBACK <= SCORE_NEEDS_PRESCORE
                found.append((request, names))
    return found


def test_edge_configs_disable_prescore_of_scorers_that_stand_without_it(oracle: Any) -> None:
    requests = _prescore_disabled(5, 400)
    assert len(requests) > 10
    for request, _ in requests:
        assert differences(ours(request), oracle.ask(request)) == []


def test_edge_configs_disable_prescore_of_a_scorer_that_needs_it(oracle: Any) -> None:
    """Upstream fails the cycle (`failed to read "PreScore..." from cycleState`) when a
    Score plugin that needs its PreScore's state runs without it; so does kubesched."""
    broken = [r for r, names in _prescore_disabled(5, 1500) if names & SCORE_NEEDS_PRESCORE]
    assert len(broken) >= 3
    errors = 0
    for request in broken:
        mine, theirs = ours(request), oracle.ask(request)
        assert differences(mine, theirs) == []
        errors += theirs["result"] == "Error"
    assert errors >= 1


@pytest.mark.parametrize("version", [None, "1.35", "1.37"])
def test_schedules_turn_the_scheduler_machinery_gates(version: str | None) -> None:
    seen = dict.fromkeys(MACHINERY_GATES, 0)
    for i in range(100):
        gates: dict[str, bool] = schedule_case(5, i, version).get("featureGates", {})
        assert check_settings(version or "1.34", sorted(gates.items())) == []
        for gate, value in MACHINERY_GATES.items():
            if gate in gates:
                assert gates[gate] is value
                seen[gate] += 1
    assert any(n > 15 for n in seen.values())
    if version is None:
        assert all(n > 15 for n in seen.values())


def test_schedules_with_the_machinery_gates_match_upstream(schedule_oracle: Any) -> None:
    requests = [schedule_case(5, i) for i in range(40)]
    gated = [r for r in requests if r.get("featureGates")][:8]
    assert len(gated) >= 4
    for request in gated:
        answer = schedule_oracle.ask(request)
        assert schedule_differences(ours_schedule(request), answer) == []


@pytest.fixture(scope="module")
def hint_oracle() -> Iterator[Any]:
    """``kube-oracle hints``."""
    yield from _oracle("hints")


def test_running_pods_gain_tolerations_and_the_hints_match(hint_oracle: Any) -> None:
    requests = []
    for i in range(600):
        request = hint_case(5, i)
        event = request["event"]
        old, new = event.get("old"), event.get("new")
        if event["op"] != "update" or old is None or not old["spec"].get("nodeName"):
            continue
        if len(new["spec"].get("tolerations", [])) > len(old["spec"].get("tolerations", [])):
            requests.append(request)
    assert len(requests) >= 3
    for request in requests:
        assert hint_differences(ours_hints(request), hint_oracle.ask(request)) == []
