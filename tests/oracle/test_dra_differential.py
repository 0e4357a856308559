"""DynamicResources: generated cases (``oracle/dra_cases.py``; ``ORACLE_DRA_CASES``, default
300, from ``ORACLE_SEED``) answered alike by kubesched.explain and kube-oracle.
"""

from __future__ import annotations

import os
import random
from typing import Any

from cases import dra_case
from compare import differences, ours


def test_generated_dra_cases_match_upstream(oracle: Any) -> None:
    seed = int(os.environ.get("ORACLE_SEED", random.SystemRandom().randrange(1 << 31)))
    n = int(os.environ.get("ORACLE_DRA_CASES", "300"))
    print(f"oracle DRA differential: seed {seed}, {n} cases")
    failures = []
    for i in range(n):
        request = dra_case(seed, i)
        mine = ours(request)
        theirs = oracle.ask(request)
        lines = differences(mine, theirs)
        if lines:
            failures.append(f"case {i}: " + "; ".join(lines[:3]))
    assert not failures, (
        f"seed {seed}: {len(failures)}/{n} DRA cases differ from upstream\n"
        + "\n".join(failures[:10])
    )


def test_the_dra_cases_cover_every_outcome() -> None:
    """Not all Scheduled: the generator reaches rejections, waits and errors too."""
    seen = {ours(dra_case(3, i))["result"] for i in range(200)}
    assert seen == {"Scheduled", "Unschedulable", "Gated", "Error"}
