"""``oracle/diff.py``'s schedule comparison asks upstream again on a difference and accepts
any of its answers (issue 30: upstream's randomness in the comparison), and tries kubesched
with the Pods one event releases requeued in other orders (upstream's Go map order); its
explain comparison of a case with device pools asks again too and tries kubesched with each
node's pools in other orders (``compare.one_of_pool_orders``).  No oracle needed: the answers
are kubesched's own, one of them altered as upstream's other run could be, or upstream's
recorded ones (``release_order_case.json``, ``POOL_ORDER_CASE``)."""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path
from typing import Any

from cases import schedule_case
from compare import differences, one_of_pool_orders, ours, ours_schedule, schedule_differences
from diff import one_of_upstreams, one_pool_order, one_release_order, one_scheduler_seed, run
from dra_cases import dra_schedule_case

RELEASE_ORDER_CASE = Path(__file__).parent / "release_order_case.json"
"""A v1.36 gang whose gated members one event releases: upstream (kube-oracle, asked six
times) placed them two ways, kubesched's pool order gives the rarer one."""
SCHEDULER_SEED_CASE = Path(__file__).parent / "scheduler_seed_case.json"
"""v1.37 podgroup schedule 108 of seed 1: an ordinary Pod preempts a ``disruptionMode: all``
group with members on node-1 and node-2, both candidates tied on every criterion; upstream
nominated node-1 in 17 of 20 asks (the answer kept), kubesched's offset draw gives node-2."""
POOL_ORDER_CASE = Path(__file__).parent / "regressions" / "case-8e3f05402cf8.json"
"""DRA case 188 of seed 2078598265 at v1.34: upstream places the Pod on n0 or keeps it off,
by the order of n0's pools (Go map order); kubesched's order of pools keeps it off."""


class Answers:
    """An oracle that answers from a list, in turn (the last one again when used up)."""

    def __init__(self, *answers: dict[str, Any]) -> None:
        self.answers = list(answers)
        self.asked = 0

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        answer = self.answers[min(self.asked, len(self.answers) - 1)]
        self.asked += 1
        return answer

    def __enter__(self) -> Answers:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _other(answer: dict[str, Any]) -> dict[str, Any]:
    other = copy.deepcopy(answer)
    key = next(iter(other["pods"]))
    other["pods"][key]["result"] = "Error"
    return other


def _args(reask: int, version: str | None = None) -> argparse.Namespace:
    return argparse.Namespace(
        verb="schedule", seed=3, start=0, cases=1, reask=reask, save=None, show=5,
        kubernetes_version=version, family="default",
    )  # fmt: skip


def test_a_later_answer_like_ours_is_a_match() -> None:
    request = schedule_case(3, 0)
    mine = ours_schedule(request, None)
    oracle = Answers(_other(mine), _other(mine), mine)
    assert one_of_upstreams(oracle, request, mine, 3)  # type: ignore[arg-type]
    assert oracle.asked == 3


def test_a_steady_different_answer_stays_a_mismatch() -> None:
    request = schedule_case(3, 0)
    mine = ours_schedule(request, None)
    oracle = Answers(_other(mine))
    assert not one_of_upstreams(oracle, request, mine, 3)  # type: ignore[arg-type]
    assert oracle.asked == 3


def test_run_counts_a_varied_upstream_as_no_mismatch_unless_reask_is_0() -> None:
    mine = ours_schedule(schedule_case(3, 0), None)
    gen = lambda seed, i, version: schedule_case(seed, i)  # noqa: E731
    assert run(Answers(_other(mine), mine), _args(3), gen) == 0  # type: ignore[arg-type]
    assert run(Answers(_other(mine), mine), _args(0), gen) == 1  # type: ignore[arg-type]
    assert run(Answers(_other(mine)), _args(3), gen) == 1  # type: ignore[arg-type]


def test_another_release_order_answering_as_upstream_is_a_match() -> None:
    saved = json.loads(RELEASE_ORDER_CASE.read_text())
    request, version = saved["request"], saved["kubernetesVersion"]
    usual, rarer = saved["upstreamAnswers"]
    mine = ours_schedule(request, version)
    assert schedule_differences(mine, usual) and not schedule_differences(mine, rarer)
    assert one_release_order(request, version, [usual], 12)
    gen = lambda seed, i, v: request  # noqa: E731
    assert run(Answers(usual), _args(3, version), gen) == 0  # type: ignore[arg-type]
    assert run(Answers(usual), _args(0, version), gen) == 1  # type: ignore[arg-type]


def test_another_draw_of_the_schedulers_randomness_answering_as_upstream_is_a_match() -> None:
    saved = json.loads(SCHEDULER_SEED_CASE.read_text())
    request, version = saved["request"], saved["kubernetesVersion"]
    (usual,) = saved["upstreamAnswers"]
    assert schedule_differences(ours_schedule(request, version), usual)
    assert one_scheduler_seed(request, version, [usual], 8)
    assert not one_scheduler_seed(request, version, [_other(usual)], 8)
    gen = lambda seed, i, v: request  # noqa: E731
    assert run(Answers(usual), _args(3, version), gen) == 0  # type: ignore[arg-type]
    assert run(Answers(usual), _args(0, version), gen) == 1  # type: ignore[arg-type]


def test_the_release_order_is_drawn_from_its_seed() -> None:
    saved = json.loads(RELEASE_ORDER_CASE.read_text())
    request, version = saved["request"], saved["kubernetesVersion"]
    answers = [ours_schedule(request, version, release_seed=s) for s in range(1, 7)]
    assert answers[0] == ours_schedule(request, version, release_seed=1)
    placements = {json.dumps(a["pods"], sort_keys=True) for a in answers}
    assert len(placements) > 1


def _explain_args(reask: int) -> argparse.Namespace:
    return argparse.Namespace(
        verb="explain", seed=2078598265, start=188, cases=1, reask=reask, save=None, show=5,
        kubernetes_version="1.34", family="dra", no_shrink=True,
    )  # fmt: skip


def test_another_pool_order_answering_as_upstream_is_a_match() -> None:
    saved = json.loads(POOL_ORDER_CASE.read_text())
    request, usual = saved["request"], saved["upstream"]
    mine = ours(request, "1.34")
    assert differences(mine, usual)  # kubesched's order keeps the Pod off n0
    oracle = Answers(usual)
    assert one_of_pool_orders(oracle, request, "1.34", mine, usual, 3)
    assert oracle.asked == 3  # asked again first
    gen = lambda seed, i, v: request  # noqa: E731
    assert run(Answers(usual), _explain_args(3), gen) == 0  # type: ignore[arg-type]
    assert run(Answers(usual), _explain_args(0), gen) == 1  # type: ignore[arg-type]


def test_an_answer_no_pool_order_gives_stays_a_mismatch() -> None:
    saved = json.loads(POOL_ORDER_CASE.read_text())
    request = saved["request"]
    never = copy.deepcopy(saved["upstream"])
    never["nodes"]["n1"]["reasons"] = ["something else"]
    mine = ours(request, "1.34")
    assert not one_of_pool_orders(Answers(never), request, "1.34", mine, never, 3)


def test_a_case_without_device_pools_is_not_asked_again() -> None:
    request = schedule_case(3, 0)
    request = {"cluster": request["cluster"], "pod": request["pods"][0], "config": None}
    mine = ours(request)
    other = copy.deepcopy(mine)
    other["result"] = "Error"
    oracle = Answers(mine)
    assert not one_of_pool_orders(oracle, request, None, mine, other, 3)
    assert oracle.asked == 0


def test_another_pool_order_in_a_schedule_is_a_match() -> None:
    """Seed 2034's DRA schedule 93 at v1.34: two Pods share a claim; the first's allocation
    takes n0's own GPU or one of zone a's (by the order of n0's pools, Go map order
    upstream: it placed the second Pod on n2 in 4 runs of 6), so the second may join it on
    n2 or not; kubesched's pool order keeps it off, another order places it."""
    request = dra_schedule_case(2034, 93, "1.34")
    mine = ours_schedule(request, "1.34")
    other = ours_schedule(request, "1.34", pool_seed=1)
    assert schedule_differences(mine, other)
    assert one_pool_order(request, "1.34", [other], 12)
    assert not one_pool_order(request, "1.34", [_other(mine)], 12)
