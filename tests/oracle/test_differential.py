"""kubesched.explain against upstream kube-scheduler v1.34, node by node.

Generated cases (``oracle/cases.py``; ``ORACLE_CASES``, default 300, from ``ORACLE_SEED``,
printed so a failure reproduces with ``oracle/diff.py --seed S --start I --cases 1``) must
give the same answer from both.  The saved regressions (``tests/oracle/regressions/``: a
request and upstream's answer, shrunk from a past mismatch) run without the oracle.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from cases import case
from compare import differences, ours

REGRESSIONS = sorted((Path(__file__).parent / "regressions").glob("*.json"))


def test_generated_cases_match_upstream(oracle: Any) -> None:
    seed = int(os.environ.get("ORACLE_SEED", random.SystemRandom().randrange(1 << 31)))
    n = int(os.environ.get("ORACLE_CASES", "300"))
    print(f"oracle differential: seed {seed}, {n} cases")
    failures = []
    for i in range(n):
        request = case(seed, i)
        lines = differences(ours(request), oracle.explain(request))
        if lines:
            failures.append(f"case {i}: " + "; ".join(lines[:3]))
    assert not failures, (
        f"seed {seed}: {len(failures)}/{n} cases differ from upstream "
        f"(reproduce: oracle/diff.py --seed {seed} --cases {n} --save tests/oracle/regressions)\n"
        + "\n".join(failures[:10])
    )


def test_the_comparison_sees_a_difference(oracle: Any) -> None:
    """The harness is not blind: a changed score and a changed reason are mismatches."""
    request = case(7, 0)
    theirs = oracle.explain(request)
    mine = json.loads(json.dumps(theirs))
    assert differences(mine, theirs) == []
    name = next(iter(mine["nodes"]))
    mine["nodes"][name]["reasons"] = ["something else"]
    mine["nodes"][name]["score"] += 1
    assert len(differences(mine, theirs)) == 2


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.stem for p in REGRESSIONS])
def test_regression_matches_recorded_upstream_answer(path: Path) -> None:
    saved = json.loads(path.read_text())
    assert differences(ours(saved["request"]), saved["upstream"]) == [], saved["origin"]
