"""Result reuse across other schedulers' binds: an entry whose Filters and Scores are all
row-local survives Pods placed on nodes the full path did not look at, and only those."""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.framework.interface import CycleState
from kubesched.scheduler import Scheduler
from kubesched.scheduler.batch import BatchEntry
from kubesched.testing import make_pod
from tests.scheduler.test_batch import _spread_pod, scheduler, workload

SAMPLED = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "percentageOfNodesToScore": 40,
}


PINNED = api.NodeAffinity(
    required=tuple(
        api.NodeSelectorTerm(match_fields=(api.Requirement("metadata.name", "In", (f"n{i:03d}",)),))
        for i in range(120)
    )
)
"""120 of the 300 nodes by name: NodeAffinity's PreFilter names them, the only nodes the
search walks (a sampled search's entry covers every node it walks, so any bind on one of
them changes the windows to come)."""


def _started(pods: list[api.Pod] | None = None) -> tuple[Scheduler, BatchEntry]:
    """300 nodes, 40 % scored, Pods pinned to 120 of them: the entry looks at those."""
    s, _ = scheduler(True, SAMPLED)
    workload(s, 300, [])
    for pod in pods or [
        make_pod(f"p{i}").req(cpu="100m").created(float(i)).affinity(PINNED).obj() for i in range(6)
    ]:
        s.on_pod_add(pod)
    s.schedule_one()
    s.schedule_one()
    entry = s.batch.entry
    assert entry is not None and s.batch.attempts["hit"] == 1
    return s, entry


def _bind_elsewhere(s: Scheduler, row: int, name: str) -> None:
    """A Pod another scheduler placed on ``row`` (the informer's add of a bound Pod)."""
    node = s.cluster.nodes.names[row]
    s.on_pod_add(make_pod(name).req(cpu="1", memory="1Gi").node(node).obj())


def _fresh_raw(s: Scheduler, entry: BatchEntry, pod: api.Pod) -> dict[str, Any]:
    state = CycleState()
    state.update(entry.state)
    return {p.name: np.asarray(p.score(state, pod, s.cluster, entry.rows)) for p, _ in entry.scores}


def test_binds_outside_the_window_keep_the_entry() -> None:
    s, entry = _started()
    assert entry.window is not None and int(entry.window.sum()) == 120
    outside = [r for r in range(300) if not entry.window[r]]
    for i, row in enumerate(outside[:5]):
        _bind_elsewhere(s, row, f"other{i}")
    s.schedule_one()
    assert s.batch.attempts["hit"] == 2 and not s.batch.flushes
    assert s.batch.entry is entry and entry.version == s.cluster.version
    pod = make_pod("probe").req(cpu="100m").affinity(PINNED).obj()
    stale = np.arange(entry.rows.shape[0]) == entry.chosen  # rescored at the next reuse
    for name, raw in _fresh_raw(s, entry, pod).items():  # the cache is still the truth
        np.testing.assert_array_equal(raw[~stale], entry.raw[name][~stale])


def test_a_bind_inside_the_window_flushes() -> None:
    s, entry = _started()
    assert entry.window is not None
    inside = int(np.flatnonzero(entry.window)[0])
    _bind_elsewhere(s, inside, "other")
    s.schedule_one()
    assert s.batch.flushes["cluster_changed"] == 1


def test_a_removal_inside_the_window_flushes() -> None:
    """A Pod leaving a node the entry judged may make that node the best again."""
    s, entry = _started()
    assert entry.window is not None
    first = s.cluster.pods["default/p0"]
    assert entry.window[first.row]
    s.on_pod_delete(first.pod)
    s.schedule_one()
    assert s.batch.flushes["cluster_changed"] == 1


def test_entries_with_spanning_filters_flush_on_any_bind() -> None:
    """Hard topology spread counts Pods in whole zones: no window, any change flushes."""
    s, entry = _started([_spread_pod(i, 3) for i in range(6)])
    assert entry.window is None
    _bind_elsewhere(s, 299, "other")
    s.schedule_one()
    assert s.batch.flushes["cluster_changed"] == 1


def test_journal_reports_rows_and_structural_changes() -> None:
    s, _ = _started()
    cluster = s.cluster
    v = cluster.version
    _bind_elsewhere(s, 7, "a")
    _bind_elsewhere(s, 9, "b")
    assert cluster.rows_changed_since(v) == [7, 9]
    assert cluster.rows_changed_since(cluster.version) == []
    assert cluster.rows_changed_since(cluster.version + 1) is None
    cluster.apply_object({"kind": "Namespace", "metadata": {"name": "x"}})
    assert cluster.rows_changed_since(v) is None
    assert cluster.rows_changed_since(0) is None  # older than the nodes being added
