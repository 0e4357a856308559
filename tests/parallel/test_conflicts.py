"""The refusal rules both coordinators share (:mod:`kubesched.parallel.conflicts`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesched.api import objects as api
from kubesched.framework.interface import Code, CycleState, QueuedPodInfo
from kubesched.framework.outcomes import PostFilterResult
from kubesched.metrics import SchedulerMetrics
from kubesched.parallel import protocol as p
from kubesched.parallel.conflicts import (
    FAST_RETRIES,
    Outcomes,
    Retries,
    check_together,
    reported,
    victims_of,
)
from kubesched.parallel.host import Choice
from kubesched.parallel.observe import ParallelMetrics
from kubesched.scheduler import Diagnosis
from kubesched.testing import make_cluster, make_node, make_pod


def test_a_pod_is_handed_out_again_until_too_many_refusals_in_a_row() -> None:
    retries = Retries()
    assert [retries.again("ns/a") for _ in range(FAST_RETRIES + 1)] == [True] * FAST_RETRIES + [
        False
    ]
    assert retries.again("ns/a")  # giving up started the count over
    retries.settled("ns/a")
    assert retries.in_a_row["ns/a"] == 0
    status = Retries.gave_up("binder", "resources", "ParallelBinder")
    assert status.code == Code.ERROR and status.plugin == "ParallelBinder"
    assert status.message() == f"binder refused {FAST_RETRIES + 1} proposals in a row (resources)"


def test_gang_members_see_each_other_and_are_all_released() -> None:
    cluster = make_cluster([make_node("a").cap(cpu="2").obj()])
    one, two, three = (make_pod(n, "ns").req(cpu="1").obj() for n in ("one", "two", "three"))
    seen: list[int] = []

    def choose() -> Choice:
        """Node a while it has room (the earlier members are assumed there)."""
        used = sum(1 for rec in cluster.pods.values() if rec.node == "a")
        seen.append(used)
        return Choice("a" if used < 2 else None, CycleState(), reason="resources")

    chosen, refused = check_together(cluster, [(one, choose), (two, choose), (three, choose)])
    assert seen == [0, 1, 2]
    assert [c.node for c in chosen] == ["a", "a"]
    assert refused is not None and refused.reason == "resources"
    assert not cluster.pods  # every tentative assume released

    chosen, refused = check_together(cluster, [(one, choose), (two, choose)])
    assert refused is None and len(chosen) == 2 and not cluster.pods


def test_a_failure_report_is_a_diagnosis_or_an_error() -> None:
    msg = "0/3 nodes are available: 3 Insufficient cpu."
    why = reported("Unschedulable", msg, ("NodeResourcesFit",), 3)
    assert isinstance(why, Diagnosis)
    assert why.message() == msg and why.unschedulable_plugins == {"NodeResourcesFit"}
    err = reported("SchedulerError", "boom", (), 3)
    assert not isinstance(err, Diagnosis) and err.code == Code.ERROR and err.message() == "boom"


def test_a_preemption_is_granted_while_its_victims_are_there_and_unclaimed() -> None:
    low = make_pod("low", "ns").req(cpu="1").obj().bound_to("a")
    cluster = make_cluster([make_node("a").cap(cpu="2").obj()], [low])
    claimed: dict[str, str] = {}
    assert victims_of(cluster, claimed, "ns/hi", "a", [low.key]) == ([low], "")
    claimed[low.key] = "ns/hi"
    assert victims_of(cluster, claimed, "ns/hi", "a", [low.key]) == ([low], "")  # its own
    assert victims_of(cluster, claimed, "ns/other", "a", [low.key]) == ([], "victim_claimed")
    assert victims_of(cluster, claimed, "ns/hi", "b", [low.key]) == ([], "victim_gone")
    assert victims_of(cluster, claimed, "ns/hi", "a", ["ns/gone"]) == ([], "victim_gone")


@dataclass
class _Rec:
    """A hand-out record as both coordinators keep one (:class:`~.host.Handed`)."""

    qp: QueuedPodInfo
    shard: int = 1
    cycle: int = 0
    start: float = 0.0


@dataclass
class _Host:
    """An :class:`~kubesched.parallel.host.OutcomeHost` recording what was done to it."""

    cluster: Any
    did: list[tuple[str, str, object]] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.profiles = {api.DEFAULT_SCHEDULER_NAME: "fwk"}
        self.metrics = SchedulerMetrics()
        self.parallel_metrics = ParallelMetrics(self.metrics, 2)
        self.failing = self

    def requeue_now(self, rec: _Rec, reason: str) -> None:
        self.did.append(("requeue", rec.qp.pod.key, reason))

    def fail(self, fwk: object, qp: QueuedPodInfo, why: object, cycle: int, start: float) -> None:
        self.did.append(("fail", qp.pod.key, why))

    def nominate(self, qp: QueuedPodInfo, result: PostFilterResult) -> None:
        self.did.append(("nominate", qp.pod.key, result.nominated_node_name))

    def evict(self, victim: api.Pod, preemptor: api.Pod, node: str) -> str:
        self.evicted.append(victim.key)
        return ""


def test_the_outcomes_both_coordinators_decide_with() -> None:
    low = make_pod("low", "ns").req(cpu="1").obj().bound_to("a")
    cluster = make_cluster([make_node("a").cap(cpu="2").obj()], [low])
    host = _Host(cluster)
    out = Outcomes(host, "coordinator", "ShardCoordinator", host.evict)
    rec = _Rec(QueuedPodInfo(make_pod("hi", "ns").obj(), 0.0))
    # a refusal hands the Pod out again, until too many in a row fail it as an error
    assert [out.refused(rec, "resources") for _ in range(FAST_RETRIES + 1)] == [
        True
    ] * FAST_RETRIES + [False]
    assert [d[0] for d in host.did] == ["requeue"] * FAST_RETRIES + ["fail"]
    status = host.did[-1][2]
    assert status == Retries.gave_up("coordinator", "resources", "ShardCoordinator")
    # a commit on an alternative counts the proposed node's refusal and starts the count over
    out.refused(rec, "resources")
    assert out.committed(1, "ns/hi", "b", Choice("a", CycleState(), reason="resources")) == (
        "alternative"
    )
    assert out.retries.in_a_row["ns/hi"] == 0
    # a failure report with a preemption: granted while its victim is there and unclaimed
    host.did.clear()
    failed = p.Failed("ns/hi", "Unschedulable", "0/1 nodes", ("X",), (), "a", (low.key,))
    assert out.failed(rec, failed) == ""
    assert host.evicted == [low.key] and out.claimed == {low.key: "ns/hi"}
    assert [d[0] for d in host.did] == ["nominate", "fail"]
    other = _Rec(QueuedPodInfo(make_pod("other", "ns").obj(), 0.0))
    claim = p.Failed("ns/other", "Unschedulable", "", (), (), "a", (low.key,))
    assert out.failed(other, claim) == "victim_claimed"  # the caller refuses it
    out.forget_victim(low.key)
    assert out.claimed == {}
