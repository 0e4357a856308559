"""The plugin conformance suite: every in-tree plugin passes; broken plugins are caught."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from kubesched.api import objects as api
from kubesched.framework.interface import (
    SUCCESS,
    CycleState,
    Handle,
    IntArray,
    Status,
    Verdict,
    unschedulable,
)
from kubesched.plugins.registry import full_registry, in_tree_registry
from kubesched.state.cache import ClusterState
from kubesched.testing import conformance


@pytest.mark.parametrize("name", sorted(full_registry()))
def test_every_registered_plugin_is_conformant(name: str) -> None:
    args = {"labelKey": "topology.kubernetes.io/zone"} if name not in in_tree_registry() else None
    assert conformance.check_plugin(full_registry()[name], args) == []


class Good:
    """A conformant Filter + Score + Reserve plugin (the base of the broken ones)."""

    name = "Good"

    def __init__(self, args: Any, handle: Handle) -> None:
        self.reserved: dict[str, str] = {}

    def filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Verdict:
        return Verdict.from_mask(cluster.nodes.unschedulable[rows], unschedulable("cordoned"))

    def score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> IntArray:
        return (rows % 3 * 10).astype(np.int64)

    def reserve(self, state: CycleState, pod: api.Pod, node: str) -> Status:
        self.reserved[pod.key] = node
        return SUCCESS

    def unreserve(self, state: CycleState, pod: api.Pod, node: str) -> None:
        self.reserved.pop(pod.key, None)

    def sign(self, pod: api.Pod) -> object:
        return pod.node_selector.get("zone")


class WrongDtype(Good):
    def filter(self, state: Any, pod: Any, cluster: Any, rows: IntArray) -> Verdict:
        return Verdict(np.zeros(rows.size, dtype=np.int64))  # type: ignore[arg-type]


class DependsOnOtherRows(Good):
    def filter(self, state: Any, pod: Any, cluster: Any, rows: IntArray) -> Verdict:
        fails = np.ones(rows.size, dtype=np.bool_)
        fails[:1] = False  # "only the first node asked fits"
        return Verdict.from_mask(fails, unschedulable("not first"))


class SuccessInTable(Good):
    def filter(self, state: Any, pod: Any, cluster: Any, rows: IntArray) -> Verdict:
        return Verdict(np.ones(rows.size, dtype=np.int8), {1: SUCCESS})


class SortsRows(Good):
    def filter(self, state: Any, pod: Any, cluster: Any, rows: IntArray) -> Verdict:
        rows.sort()
        return Verdict.all_pass(rows.size)


class MutatesPod(Good):
    def score(self, state: Any, pod: api.Pod, cluster: Any, rows: IntArray) -> IntArray:
        pod.labels["scored"] = "yes"
        return np.zeros(rows.size, dtype=np.int64)


class MutatesCluster(Good):
    def score(self, state: Any, pod: Any, cluster: ClusterState, rows: IntArray) -> IntArray:
        cluster.nodes.requested[rows, 0] += 1
        return np.zeros(rows.size, dtype=np.int64)


class OutOfRange(Good):
    def score(self, state: Any, pod: Any, cluster: Any, rows: IntArray) -> IntArray:
        return np.full(rows.size, 101, dtype=np.int64)


class FloatScores(Good):
    def score(self, state: Any, pod: Any, cluster: Any, rows: IntArray) -> Any:
        return np.zeros(rows.size)


class ForgetfulUnreserve(Good):
    def unreserve(self, state: Any, pod: Any, node: str) -> None:
        pass


class CountsEveryPod(Good):
    row_local = True  # but its score looks at every node's Pods

    def score(self, state: Any, pod: Any, cluster: ClusterState, rows: IntArray) -> IntArray:
        return np.full(rows.size, min(100, len(cluster.pods)), dtype=np.int64)


class UnhashableSign(Good):
    def sign(self, pod: api.Pod) -> object:
        return [pod.name]


class PassesEveryOne(Good):  # result reuse's one-node check says yes where filter says no
    def filter_one(self, state: Any, pod: Any, cluster: ClusterState, row: int) -> bool:
        return True


class ScoresOneApart(Good):
    def score_one(self, state: Any, pod: Any, cluster: ClusterState, row: int) -> int:
        return row % 3 * 10 + 1


class NodeOnlyCountsPods(Good):
    node_only = True  # but its score looks at the node's Pods

    def score(self, state: Any, pod: Any, cluster: ClusterState, rows: IntArray) -> IntArray:
        return np.minimum(cluster.nodes.pod_count[rows], 100).astype(np.int64)


class StaticButPasses(Good):  # kept static failures would keep a node that fits
    def static_rejections(
        self, state: Any, pod: Any, cluster: ClusterState, rows: IntArray
    ) -> npt.NDArray[np.bool_]:
        return np.ones(rows.size, dtype=np.bool_)


class CandidatesMissOne(Good):  # the sparse search would never look at a node that fits
    def candidate_rows(self, state: Any, pod: Any, cluster: ClusterState) -> IntArray:
        return np.zeros(0, dtype=np.int64)


class RefreshLies(Good):  # says "unchanged" but the refreshed state filters differently
    def filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Verdict:
        fails = np.full(rows.size, bool(state.get("refreshed")))
        return Verdict.from_mask(fails, unschedulable("refreshed"))

    def refresh_filter(self, state: CycleState, pod: Any, cluster: ClusterState) -> bool:
        state["refreshed"] = True
        return True


class StringLocality(Good):
    locality = "node-local"


@pytest.mark.parametrize(
    ("cls", "problem"),
    [
        (WrongDtype, "filter codes are int64"),
        (DependsOnOtherRows, "depends on the other rows"),
        (SuccessInTable, "no non-success status"),
        (SortsRows, "raised ValueError"),
        (MutatesPod, "mutated the Pod"),
        (MutatesCluster, "mutated the cluster"),
        (OutOfRange, "outside 0..100"),
        (FloatScores, "want int64 array"),
        (ForgetfulUnreserve, "unreserve does not undo reserve (attribute 'reserved')"),
        (UnhashableSign, "is not hashable"),
        (CountsEveryPod, "row_local, but its answers for a node moved"),
        (PassesEveryOne, "filter_one must answer True (the node passes) or None"),
        (ScoresOneApart, "score_one must answer score's raw score"),
        (NodeOnlyCountsPods, "node_only, but its answers for a node moved"),
        (StaticButPasses, "static_rejections marks a node that filter passes"),
        (CandidatesMissOne, "candidate_rows leaves out a node that filter passes"),
        (RefreshLies, "refresh_filter answered True on an unchanged cluster"),
        (StringLocality, "is not a Locality"),
    ],
)
def test_broken_plugins_are_caught(cls: type[Good], problem: str) -> None:
    problems = conformance.check_plugin(cls)
    assert problems and all(p.startswith("Good [") or p.startswith("Good:") for p in problems)
    assert any(problem in p for p in problems), problems
    with pytest.raises(AssertionError, match="not conformant"):
        conformance.assert_conformant(cls)


def test_the_good_plugin_passes() -> None:
    conformance.assert_conformant(Good)
