"""DynamicResources: generated cases (``oracle/dra_cases.py``; ``ORACLE_DRA_CASES``, default
300, from ``ORACLE_SEED``) answered alike by kubesched.explain and kube-oracle.
"""

from __future__ import annotations

import os
from typing import Any

from cases import dra_case
from compare import differences, ours

from tests.oracle.conftest import generated_seed, mismatches


def test_generated_dra_cases_match_upstream(oracle: Any) -> None:
    n = int(os.environ.get("ORACLE_DRA_CASES", "300"))
    seed = generated_seed("DRA differential", n)
    failures = mismatches(n, lambda i: dra_case(seed, i), ours, oracle, differences)
    assert not failures, (
        f"seed {seed}: {len(failures)}/{n} DRA cases differ from upstream\n"
        + "\n".join(failures[:10])
    )


def test_the_dra_cases_cover_every_outcome() -> None:
    """Not all Scheduled: the generator reaches rejections, waits and errors too."""
    seen = {ours(dra_case(3, i))["result"] for i in range(200)}
    assert seen == {"Scheduled", "Unschedulable", "Gated", "Error"}
