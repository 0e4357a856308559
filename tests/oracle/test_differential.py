"""kubesched.explain against upstream kube-scheduler v1.34, node by node.

Generated cases (``oracle/cases.py``; ``ORACLE_CASES``, default 300, from ``ORACLE_SEED``,
printed so a failure reproduces with ``oracle/diff.py --seed S --start I --cases 1``) must
give the same answer from both.  The saved regressions (``tests/oracle/regressions/``: a
request and upstream's answer, shrunk from a past mismatch or written by hand; an explain, a
schedule or a hints request) run without the oracle.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from cases import case, schedule_case
from compare import (
    POOL_ORDERS,
    differences,
    ours,
    ours_schedule,
    schedule_differences,
    searches_pools,
)
from hint_cases import hint_differences, ours_hints

from tests.oracle.conftest import generated_seed, mismatches

REGRESSIONS = sorted((Path(__file__).parent / "regressions").glob("*.json"))


def test_generated_cases_match_upstream(oracle: Any) -> None:
    n = int(os.environ.get("ORACLE_CASES", "300"))
    seed = generated_seed("differential", n)
    failures = mismatches(n, lambda i: case(seed, i), ours, oracle, differences)
    assert not failures, (
        f"seed {seed}: {len(failures)}/{n} cases differ from upstream "
        f"(reproduce: oracle/diff.py --seed {seed} --cases {n} --save tests/oracle/regressions)\n"
        + "\n".join(failures[:10])
    )


def test_generated_schedules_match_upstream(schedule_oracle: Any) -> None:
    """Several Pods submitted at once to one node: who gets it, and why the rest do not
    (``ORACLE_SCHEDULE_CASES``, default 40; each waits for upstream to be quiet)."""
    n = int(os.environ.get("ORACLE_SCHEDULE_CASES", "40"))
    seed = generated_seed("schedule differential", n)
    failures = mismatches(
        n, lambda i: schedule_case(seed, i), ours_schedule, schedule_oracle, schedule_differences
    )
    assert not failures, (
        f"seed {seed}: {len(failures)}/{n} schedules differ from upstream "
        f"(reproduce: oracle/diff.py --verb schedule --seed {seed} --cases {n})\n"
        + "\n".join(failures[:10])
    )


def test_the_comparison_sees_a_difference(oracle: Any) -> None:
    """The harness is not blind: a changed score and a changed reason are mismatches."""
    request = case(7, 0)
    theirs = oracle.ask(request)
    mine = json.loads(json.dumps(theirs))
    assert differences(mine, theirs) == []
    name = next(iter(mine["nodes"]))
    mine["nodes"][name]["reasons"] = ["something else"]
    mine["nodes"][name]["score"] += 1
    assert len(differences(mine, theirs)) == 2


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.stem for p in REGRESSIONS])
def test_regression_matches_recorded_upstream_answer(path: Path) -> None:
    """An explain request (``pod``), a schedule request (``pods``: compared as
    ``oracle/diff.py --verb schedule`` compares) or a hints request (``event``: as
    ``--verb hints`` compares), of its ``kubernetesVersion`` (absent: the default, v1.34).
    An explain answer with device pools may be kubesched's with each node's pools in
    another order (``compare.one_of_pool_orders``: upstream's Go map order)."""
    saved = json.loads(path.read_text())
    request, version = saved["request"], saved.get("kubernetesVersion")
    if "event" in request:
        lines = hint_differences(ours_hints(request, version), saved["upstream"])
    elif "pods" in request:
        lines = schedule_differences(ours_schedule(request, version), saved["upstream"])
    else:
        lines = differences(ours(request, version), saved["upstream"])
        if lines and searches_pools(request):
            # upstream walks each node's device pools in Go map order: its recorded answer
            # is one of several, as long as kubesched gives it with the pools in some order
            seeds = range(1, POOL_ORDERS + 1)
            others = (ours(request, version, pool_seed=seed) for seed in seeds)
            if any(not differences(other, saved["upstream"]) for other in others):
                lines = []
    assert lines == [], saved["origin"]


def test_the_schedule_comparison_sees_a_difference(schedule_oracle: Any) -> None:
    request = schedule_case(3, 0)
    theirs = schedule_oracle.ask(request)
    mine = json.loads(json.dumps(theirs))
    assert schedule_differences(mine, theirs) == []
    key = next(iter(mine["pods"]))
    mine["pods"][key]["result"] = "Error"
    assert schedule_differences(mine, theirs) == [
        f"{key}.result: ours 'Error', upstream {theirs['pods'][key]['result']!r}"
    ]
