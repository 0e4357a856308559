"""DynamicResources: generated cases (``oracle/dra_cases.py``; ``ORACLE_DRA_CASES``, default
300, from ``ORACLE_SEED``) answered alike by kubesched.explain and kube-oracle.
"""

from __future__ import annotations

import os
from typing import Any

from cases import dra_case
from compare import differences, one_of_pool_orders, ours, ours_schedule, schedule_differences
from dra_cases import dra_schedule_case

from tests.oracle.conftest import generated_seed, mismatches

REASK = 3
"""Upstream asked again up to this many times on a difference (``oracle/diff.py --reask``)."""


def test_generated_dra_cases_match_upstream(oracle: Any) -> None:
    """A case upstream answers in several ways (its allocator walks a node's pools in Go map
    order) matches when one of its answers is kubesched's with the pools in some order
    (``compare.one_of_pool_orders``, as ``oracle/diff.py`` accepts it)."""
    n = int(os.environ.get("ORACLE_DRA_CASES", "300"))
    seed = generated_seed("DRA differential", n)

    def varies(req: dict[str, Any], mine: dict[str, Any], theirs: dict[str, Any]) -> bool:
        return one_of_pool_orders(oracle, req, None, mine, theirs, REASK)

    failures = mismatches(n, lambda i: dra_case(seed, i), ours, oracle, differences, varies)
    assert not failures, (
        f"seed {seed}: {len(failures)}/{n} DRA cases differ from upstream\n"
        + "\n".join(failures[:10])
    )


def test_the_dra_cases_cover_every_outcome() -> None:
    """Not all Scheduled: the generator reaches rejections, waits and errors too."""
    seen = {ours(dra_case(3, i))["result"] for i in range(200)}
    assert seen == {"Scheduled", "Unschedulable", "Gated", "Error"}


def test_template_claims_and_errors_schedule_as_upstream(schedule_oracle: Any) -> None:
    """Seed 3's schedules 13, 34 and 37 submit a Pod whose claims come from templates
    (kube-oracle's schedule plays the resourceclaim controller: without it the Pod waits at
    PreEnqueue for ever); 21's Pod fails with a CEL error, which upstream retries for ever
    (kube-oracle settles with it as an Error, as kubesched does)."""
    failures = []
    for i in (13, 21, 34, 37):
        req = dra_schedule_case(3, i)
        mine = ours_schedule(req)
        claims = [c for p in req["pods"] for c in p["spec"].get("resourceClaims", [])]
        if i == 21:
            assert [p["result"] for p in mine["pods"].values()] == ["Error"]
        else:
            assert all("resourceClaimTemplateName" in c for c in claims)
        lines = schedule_differences(mine, schedule_oracle.ask(req))
        if lines:
            failures.append(f"case {i}: " + "; ".join(lines[:3]))
    assert not failures, "\n".join(failures)
