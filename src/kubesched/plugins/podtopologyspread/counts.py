"""Incrementally maintained counts of matching Pods per node row.

One :class:`MatchCounts` per :class:`~kubesched.state.cache.ClusterState` (shared by every
plugin instance using that cluster) observes the cache: for each ``(namespace, selector)``
pair some Pod's constraint has asked about, it keeps an int64 array over node rows with the
number of accounted Pods (bound or assumed) in that namespace matching that selector --
terminating Pods (``deletionTimestamp`` set) not counted, as upstream's
``countPodsMatchSelector`` bypasses them (kubernetes#87621).  A Pod becoming terminating
reaches the cache as an update, i.e. remove + add, so its count goes.  An
array is built lazily by a from-scratch count on first use, then kept current by
``pod_added`` / ``pod_removed`` (a label change reaches the cache as remove + add; a node
removal removes its Pods first).  Arrays for selectors unused for a while are dropped (at
most :data:`MAX_TRACKED` are kept, least recently used first out).

Per-domain sums over a fixed set of rows (a constraint's eligible nodes grouped by topology
value) are kept current the same way: :meth:`MatchCounts.domain_counts` builds one with a
``bincount`` the first time a ``(selector, node group)`` pair is asked for, and every later
Pod event adds its delta to its row's domain, so a scheduling cycle reads them for free.
They are keyed on the node-table version (a node change makes new ones).

It also caches, per node-table version, derived per-node facts that do not depend on Pods
(rows eligible for counting under a Pod's inclusion policies).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.plugins.podtopologyspread.constraints import Selector
from kubesched.state.cache import ClusterState, PodRecord
from kubesched.state.nodes import IntArray

MAX_TRACKED = 512
"""How many ``(namespace, selector)`` count arrays are kept before the oldest is dropped."""
MAX_AGGREGATES = 16
"""How many per-domain sums one tracker keeps current (oldest dropped first)."""

TrackerKey = tuple[str, Selector]


class _Aggregate:
    """Per-domain sums of a tracker's counts over a group of rows.

    ``row_domain`` : int64 ``(capacity,)`` domain index of each row in the group, -1 for rows
    outside it; ``counts`` : int64 ``(size,)``; ``version`` : the node-table version it is for.
    """

    __slots__ = ("counts", "row_domain", "version")

    def __init__(self, row_domain: IntArray, counts: IntArray, version: int) -> None:
        self.row_domain = row_domain
        self.counts = counts
        self.version = version


class _Tracker:
    """Counts for one ``(namespace, selector)``; ``counts[row]`` = matching Pods on ``row``."""

    __slots__ = ("aggregates", "counts", "selector")

    def __init__(self, selector: Selector, counts: IntArray) -> None:
        self.selector = selector
        self.counts = counts
        self.aggregates: dict[Hashable, _Aggregate] = {}

    def bump(self, row: int, delta: int) -> None:
        if row >= self.counts.shape[0]:
            grown = np.zeros(max(row + 1, 2 * self.counts.shape[0]), dtype=np.int64)
            grown[: self.counts.shape[0]] = self.counts
            self.counts = grown
        self.counts[row] += delta
        for agg in self.aggregates.values():
            if row < agg.row_domain.shape[0]:
                d = agg.row_domain[row]
                if d >= 0:
                    agg.counts[d] += delta


class MatchCounts:
    """The cache observer holding per-row counts; see the module docstring."""

    def __init__(self) -> None:
        self._trackers: OrderedDict[TrackerKey, _Tracker] = OrderedDict()
        self._by_namespace: dict[str, dict[Selector, _Tracker]] = {}
        self._derived: dict[Any, Any] = {}
        self._derived_version = -1
        self._zeros = np.zeros(0, dtype=np.int64)

    # ------------------------------------------------------------------ observer protocol
    def pod_added(self, rec: PodRecord) -> None:
        """Count ``rec`` in every tracked selector of its namespace that it matches."""
        self._bump(rec.pod, rec.row, 1)

    def pod_removed(self, rec: PodRecord) -> None:
        """Undo :meth:`pod_added` for ``rec``."""
        self._bump(rec.pod, rec.row, -1)

    def node_changed(self, row: int, old: api.Node | None, new: api.Node | None) -> None:
        """Node facts changed: cached derived data is keyed on the node-table version."""

    def _bump(self, pod: api.Pod, row: int, delta: int) -> None:
        trackers = self._by_namespace.get(pod.namespace)
        if not trackers or pod.deletion_timestamp is not None:
            return
        labels = pod.labels
        for selector, tracker in trackers.items():
            if selector.matches(labels):
                tracker.bump(row, delta)

    # ------------------------------------------------------------------ queries
    def node_counts(self, cluster: ClusterState, namespace: str, selector: Selector) -> IntArray:
        """int64 ``(capacity,)``: matching Pods per node row (read-only; all zeros for an
        empty or nil selector, which upstream never counts)."""
        cap = cluster.nodes.capacity
        if selector.counts_nothing:
            if self._zeros.shape[0] < cap:
                self._zeros = np.zeros(cap, dtype=np.int64)
            return self._zeros[:cap]
        return self._tracker(cluster, namespace, selector).counts[:cap]

    def domain_counts(
        self,
        cluster: ClusterState,
        namespace: str,
        selector: Selector,
        group: Hashable,
        rows: IntArray,
        domains: IntArray,
        size: int,
    ) -> IntArray:
        """int64 ``(size,)``: matching Pods summed per domain over ``rows`` (int64 ``(m,)``)
        whose domain indexes are ``domains`` (int64 ``(m,)``, each ``< size``).

        ``group`` names ``(rows, domains)`` for the current node-table version; the returned
        array is kept current by later Pod events (read it, do not modify it).
        """
        if selector.counts_nothing:
            return np.zeros(size, dtype=np.int64)
        tracker = self._tracker(cluster, namespace, selector)
        version = cluster.nodes.version
        agg = tracker.aggregates.get(group)
        if agg is not None and agg.version == version:
            return agg.counts
        weights = tracker.counts[rows]
        counts = np.bincount(domains, weights=weights, minlength=size).astype(np.int64)
        row_domain = np.full(cluster.nodes.capacity, -1, dtype=np.int64)
        row_domain[rows] = domains
        for k in [k for k, a in tracker.aggregates.items() if a.version != version]:
            del tracker.aggregates[k]
        if len(tracker.aggregates) >= MAX_AGGREGATES:
            del tracker.aggregates[next(iter(tracker.aggregates))]
        tracker.aggregates[group] = _Aggregate(row_domain, counts, version)
        return counts

    def _tracker(self, cluster: ClusterState, namespace: str, selector: Selector) -> _Tracker:
        """The tracker for ``(namespace, selector)``, sized to the table's capacity."""
        cap = cluster.nodes.capacity
        key = (namespace, selector)
        tracker = self._trackers.get(key)
        if tracker is None:
            tracker = _Tracker(selector, recount(cluster, namespace, selector))
            self._trackers[key] = tracker
            self._by_namespace.setdefault(namespace, {})[selector] = tracker
            if len(self._trackers) > MAX_TRACKED:
                (old_ns, old_sel), _ = self._trackers.popitem(last=False)
                del self._by_namespace[old_ns][old_sel]
        else:
            self._trackers.move_to_end(key)
        if tracker.counts.shape[0] < cap:
            tracker.bump(cap - 1, 0)
        return tracker

    def tracked(self) -> list[TrackerKey]:
        """The ``(namespace, selector)`` pairs currently maintained (for tests)."""
        return list(self._trackers)

    def derived(self, cluster: ClusterState) -> dict[Any, Any]:
        """A scratch dict valid while the node table's version is unchanged."""
        version = cluster.nodes.version
        if version != self._derived_version:
            self._derived.clear()
            self._derived_version = version
        return self._derived


def recount(cluster: ClusterState, namespace: str, selector: Selector) -> IntArray:
    """int64 ``(capacity,)``: matching accounted Pods per row, counted from scratch."""
    counts = np.zeros(cluster.nodes.capacity, dtype=np.int64)
    if selector.counts_nothing:
        return counts
    rows = [
        rec.row
        for rec in cluster.pods.values()
        if rec.pod.namespace == namespace
        and rec.pod.deletion_timestamp is None
        and selector.matches(rec.pod.labels)
    ]
    if rows:
        np.add.at(counts, np.asarray(rows, dtype=np.int64), 1)
    return counts


_STORES: weakref.WeakKeyDictionary[ClusterState, MatchCounts] = weakref.WeakKeyDictionary()


def match_counts(cluster: ClusterState) -> MatchCounts:
    """The :class:`MatchCounts` observing ``cluster`` (registered on first use)."""
    store = _STORES.get(cluster)
    if store is None:
        store = MatchCounts()
        cluster.observe(store)
        _STORES[cluster] = store
    return store
