"""Matching-Pod counts for inter-pod affinity, maintained incrementally by a cache observer.

Upstream walks every Pod of every node in PreFilter and PreScore.  kubesched keeps the
answers current instead, through :meth:`ClusterState.observe` (``pod_added`` / ``pod_removed``
/ ``node_changed``), so a cycle only reads arrays:

- **counters**: for each distinct :class:`~.terms.Matcher` tuple an incoming Pod asked about
  (one matcher per anti-affinity or preferred term; all required affinity terms of a Pod
  together, since upstream counts only Pods matching *all* of them), how many accounted Pods
  match, per node row.  Created lazily by a from-scratch count, then kept current; the least
  recently used are dropped beyond :data:`MAX_COUNTERS`.
- **groups**: existing Pods' own terms, grouped by (kind, weight, term), with how many Pods of
  the group sit on each row (a Pod with the same term twice counts twice, as upstream).  Only
  these Pods are looked at when checking "does the incoming Pod violate an existing Pod's
  anti-affinity" or scoring existing Pods' preferences.
- **matched groups**: which groups' terms select an incoming Pod, remembered per (namespace,
  values of the label keys the groups' selectors read) until a group appears or disappears
  or the namespace's labels change (:meth:`AffinityIndex.matching_groups`): Pods that differ
  only in labels no term reads (a unique label per Pod, say) share the answer.  So a Pod
  carrying a label that running Pods' required anti-affinity selects (the symmetric check)
  reads the domains those groups block from their kept counts, without testing every
  existing term again; the same tuple is the result-reuse signature of a Pod without terms
  of its own.

Each :class:`Counts` aggregates per topology domain on demand: ``domain(key)`` is an int64
array indexed by the node table's interned value code of label ``key``, with one extra zero
slot at the end so that code -1 (node without the label) reads 0.  Domain arrays are kept
current on Pod changes and dropped when a node holding counted Pods changes labels.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from kubesched.api import objects as api
from kubesched.plugins.interpodaffinity.terms import NO_TERMS, Matcher, Term, matcher, pod_terms
from kubesched.state.cache import ClusterState, NamespaceLabels, PodRecord
from kubesched.state.nodes import IntArray, NodeTable

REQUIRED_AFFINITY = 0
REQUIRED_ANTI = 1
PREFERRED_AFFINITY = 2
PREFERRED_ANTI = 3
KINDS = (REQUIRED_AFFINITY, REQUIRED_ANTI, PREFERRED_AFFINITY, PREFERRED_ANTI)

MAX_COUNTERS = 256
"""Counters kept for incoming Pods' terms; the least recently used beyond this are dropped."""

CounterKey = tuple[Matcher, ...]
GroupKey = tuple[int, Term]
"""(weight, term); weight is 0 for required terms."""
Matched = tuple[tuple[int, GroupKey], ...]
"""(kind, group key) of every group whose term selects a Pod, in :data:`KINDS` order."""

MAX_MATCHED = 4096
"""(namespace, label values) pairs whose matched groups are remembered; all are dropped
beyond."""


class Counts:
    """Pods counted per node row (sparse) and, on demand, per topology domain."""

    __slots__ = ("doms", "labelled", "last_used", "rows", "total")

    def __init__(self) -> None:
        self.rows: dict[int, int] = {}
        self.doms: dict[str, IntArray] = {}
        self.labelled: dict[str, int] = {}
        """Per key of ``doms``: the Pods counted on rows labelled ``key`` (the sum of its
        domain array: non-zero exactly when some domain holds a Pod)."""
        self.total = 0
        self.last_used = 0

    def add(self, row: int, n: int, table: NodeTable) -> None:
        """Count ``n`` (may be negative) more Pods on ``row``."""
        c = self.rows.get(row, 0) + n
        if c:
            self.rows[row] = c
        else:
            del self.rows[row]
        self.total += n
        for key, dom in self.doms.items():
            col = table.label_codes.get(key)
            code = -1 if col is None else int(col[row])
            if code < 0:
                continue
            if code >= dom.shape[0] - 1:
                dom = self._grow(key, table)
            dom[code] += n
            self.labelled[key] += n

    def _grow(self, key: str, table: NodeTable) -> IntArray:
        old = self.doms[key]
        dom = np.zeros(len(table.label_values.get(key, ())) + 1, dtype=np.int64)
        dom[: old.shape[0] - 1] = old[:-1]
        self.doms[key] = dom
        return dom

    def domain(self, key: str, table: NodeTable) -> IntArray:
        """int64 ``(V + 1,)``: counted Pods per value code of node label ``key``; the last
        slot is 0 (what code -1 reads)."""
        dom = self.doms.get(key)
        n_values = len(table.label_values.get(key, ()))
        if dom is not None:
            return dom if dom.shape[0] > n_values else self._grow(key, table)
        col = table.label_codes.get(key)
        labelled = 0
        if col is None or not self.rows:
            dom = np.zeros(n_values + 1, dtype=np.int64)
        else:
            rows = np.fromiter(self.rows.keys(), dtype=np.int64, count=len(self.rows))
            cnt = np.fromiter(self.rows.values(), dtype=np.int64, count=len(self.rows))
            codes = col[rows]
            has = codes >= 0
            dom = np.zeros(n_values + 1, dtype=np.int64)
            np.add.at(dom, codes[has], cnt[has])
            labelled = int(cnt[has].sum())
        self.doms[key] = dom
        self.labelled[key] = labelled
        return dom

    def forget_domains(self) -> None:
        """Drop the domain arrays (a node holding counted Pods changed labels)."""
        self.doms.clear()
        self.labelled.clear()


@dataclass(slots=True)
class _Entry:
    """What the index remembers of an accounted Pod, to undo its counts exactly: ``labels``
    is the Pod's own dict (an accounted Pod is replaced, never changed in place, as the
    cache's other observers assume too), ``groups`` a tuple until the Pod has terms."""

    row: int
    namespace: str
    labels: dict[str, str]
    groups: list[tuple[int, GroupKey]] | tuple[()] = ()


class AffinityIndex:
    """Cache observer keeping :class:`Counts` for counters and term groups (module docs)."""

    def __init__(self, cluster: ClusterState, attach: bool = True) -> None:
        self.cluster = cluster
        self.table = cluster.nodes
        self.counters: dict[CounterKey, Counts] = {}
        self.groups: tuple[dict[GroupKey, Counts], ...] = tuple({} for _ in KINDS)
        self.pod_namespaces: Counter[str] = Counter()
        self.namespaces_version = 0
        """Bumped when a namespace gets its first Pod or loses its last one (the keys of
        ``pod_namespaces``, which a resolved ``namespaceSelector`` depends on)."""
        self._resolved: dict[Term, tuple[NamespaceLabels, int, int, Matcher]] = {}
        self._pods: dict[str, _Entry] = {}
        self._tick = 0
        self.groups_version = 0
        """Bumped when a group appears or disappears (matched groups depend on it)."""
        self._matched: dict[tuple[str, tuple[str | None, ...]], tuple[int, object, Matched]]
        self._matched = {}
        self._read_keys: tuple[int, tuple[str, ...]] = (-1, ())
        """The groups' version and the label keys their terms' selectors read, sorted: a
        Pod's values of these keys (None: absent) decide which terms select it."""
        if attach:
            cluster.observe(self)

    # ------------------------------------------------------------------ observer
    def pod_added(self, rec: PodRecord) -> None:
        """Count ``rec`` in every counter it matches and in its own terms' groups."""
        pod = rec.pod
        if pod.key in self._pods:
            self._remove(pod.key)
        entry = _Entry(rec.row, pod.namespace, pod.labels)
        terms = pod_terms(pod)
        if terms is NO_TERMS and not self.counters:  # the common Pod: nothing to count yet
            self._count_namespace(entry.namespace)
            self._pods[pod.key] = entry
            return
        kinds: tuple[tuple[int, tuple[GroupKey, ...]], ...] = (
            (REQUIRED_AFFINITY, tuple([(0, t) for t in terms.required_affinity])),
            (REQUIRED_ANTI, tuple([(0, t) for t in terms.required_anti])),
            (PREFERRED_AFFINITY, terms.preferred_affinity),
            (PREFERRED_ANTI, terms.preferred_anti),
        )
        table = self.table
        own: list[tuple[int, GroupKey]] = []
        for kind, keys in kinds:
            if not keys:
                continue
            groups = self.groups[kind]
            for gkey in keys:
                counts = groups.get(gkey)
                if counts is None:
                    counts = groups[gkey] = Counts()
                    self.groups_version += 1
                counts.add(rec.row, 1, table)
                own.append((kind, gkey))
        entry.groups = own
        namespace, labels = entry.namespace, entry.labels
        for ckey, counts in self.counters.items():
            for m in ckey:  # every matcher of the key (``all``, without a generator)
                if not m.matches(namespace, labels):
                    break
            else:
                counts.add(rec.row, 1, table)
        self._count_namespace(entry.namespace)
        self._pods[pod.key] = entry

    def pods_added(self, recs: list[PodRecord]) -> None:
        """:meth:`pod_added` for each of ``recs`` in order (a snapshot's or a LIST's Pods):
        the common Pod, without terms of its own while no counter exists, is written down
        in a tight loop; any other goes through :meth:`pod_added`."""
        pods = self._pods
        namespaces: dict[str, int] = {}
        counting = bool(self.counters)  # only queries add counters
        for rec in recs:
            pod = rec.pod
            key = pod.key
            if (
                pod.pod_affinity is None
                and pod.pod_anti_affinity is None
                and not counting
                and key not in pods
            ):
                ns = pod.namespace
                pods[key] = _Entry(rec.row, ns, pod.labels)
                namespaces[ns] = namespaces.get(ns, 0) + 1
            else:
                self._count_namespaces(namespaces)  # in order, as pod_added counts
                namespaces.clear()
                self.pod_added(rec)
        self._count_namespaces(namespaces)

    def _count_namespace(self, namespace: str) -> None:
        if namespace not in self.pod_namespaces:
            self.namespaces_version += 1
        self.pod_namespaces[namespace] += 1

    def _count_namespaces(self, namespaces: dict[str, int]) -> None:
        before = len(self.pod_namespaces)
        self.pod_namespaces.update(namespaces)
        if len(self.pod_namespaces) != before:
            self.namespaces_version += 1

    def pod_removed(self, rec: PodRecord) -> None:
        """Undo :meth:`pod_added` for ``rec``."""
        self._remove(rec.pod.key)

    def node_changed(self, row: int, old: api.Node | None, new: api.Node | None) -> None:
        """Domain arrays of counts holding Pods on ``row`` go stale when its labels change.

        A new node holds no Pods yet, and a removed one's Pods were removed before it."""
        if old is None or new is None or old.labels == new.labels:
            return
        for counts in self._all_counts():
            if row in counts.rows:
                counts.forget_domains()

    def _remove(self, key: str) -> None:
        entry = self._pods.pop(key, None)
        if entry is None:
            return
        table = self.table
        for kind, gkey in entry.groups:
            groups = self.groups[kind]
            counts = groups[gkey]
            counts.add(entry.row, -1, table)
            if counts.total == 0:
                del groups[gkey]
                self.groups_version += 1
        for ckey, counts in self.counters.items():
            if all(m.matches(entry.namespace, entry.labels) for m in ckey):
                counts.add(entry.row, -1, table)
        self.pod_namespaces[entry.namespace] -= 1
        if not self.pod_namespaces[entry.namespace]:
            del self.pod_namespaces[entry.namespace]
            self.namespaces_version += 1

    def _all_counts(self) -> list[Counts]:
        out = list(self.counters.values())
        for groups in self.groups:
            out.extend(groups.values())
        return out

    # ------------------------------------------------------------------ queries
    def counter(self, key: CounterKey) -> Counts:
        """Counts of the Pods matching every matcher of ``key`` (counted now if new)."""
        self._tick += 1
        counts = self.counters.get(key)
        if counts is None:
            if len(self.counters) >= MAX_COUNTERS:
                self._evict()
            counts = Counts()
            table = self.table
            for entry in self._pods.values():
                if all(m.matches(entry.namespace, entry.labels) for m in key):
                    counts.add(entry.row, 1, table)
            self.counters[key] = counts
        counts.last_used = self._tick
        return counts

    def _evict(self) -> None:
        by_age = sorted(self.counters.items(), key=lambda kv: kv[1].last_used)
        for key, _ in by_age[: len(by_age) // 2 + 1]:
            del self.counters[key]

    def matcher(self, term: Term, ns_labels: Mapping[str, Mapping[str, str]]) -> Matcher:
        """:func:`~kubesched.plugins.interpodaffinity.terms.matcher` for ``term`` of an
        incoming Pod, kept while no namespace's labels change (``ns_labels`` the cluster's
        :class:`~kubesched.state.cache.NamespaceLabels`) and no namespace gets its first Pod
        or loses its last: Pods made from one template resolve one ``namespaceSelector``."""
        if term.ns_selector is None or not isinstance(ns_labels, NamespaceLabels):
            return matcher(term, ns_labels, self.pod_namespaces)
        hit = self._resolved.get(term)
        generation, version = ns_labels.generation, self.namespaces_version
        if hit is not None and hit[0] is ns_labels and hit[1:3] == (generation, version):
            return hit[3]
        out = matcher(term, ns_labels, self.pod_namespaces)
        if len(self._resolved) >= MAX_MATCHED:
            self._resolved.clear()
        self._resolved[term] = (ns_labels, generation, version, out)
        return out

    def matching_groups(self, pod: api.Pod) -> Matched:
        """The groups whose term selects ``pod`` (its namespace, with that namespace's labels,
        and its labels), remembered per (namespace, values of the label keys the groups'
        selectors read) as the module docs say."""
        if not any(self.groups):  # no accounted Pod has a term: nothing to match
            return ()
        ns_labels = self.cluster.namespaces.labels.get(pod.namespace)
        read = self._read_keys
        if read[0] != self.groups_version:
            read = self._read_keys = (self.groups_version, self._selector_keys())
        key = (pod.namespace, tuple(map(pod.labels.get, read[1])))
        hit = self._matched.get(key)
        if hit is not None and hit[0] == self.groups_version and hit[1] is ns_labels:
            return hit[2]
        own = ns_labels or {}
        matched = tuple(
            (kind, gkey)
            for kind, groups in enumerate(self.groups)
            for gkey in groups
            if gkey[1].matches(pod.namespace, pod.labels, own)
        )
        if len(self._matched) >= MAX_MATCHED:
            self._matched.clear()
        self._matched[key] = (self.groups_version, ns_labels, matched)
        return matched

    def _selector_keys(self) -> tuple[str, ...]:
        """The label keys the selectors of every group's term read, sorted (a Term matches
        by namespace, namespace labels and these keys' values alone)."""
        keys: set[str] = set()
        for groups in self.groups:
            for _, term in groups:
                sel = term.selector
                if sel is not None:
                    keys.update(k for k, _ in sel.match_labels)
                    keys.update(r.key for r in sel.match_expressions)
        return tuple(sorted(keys))

    def has_groups(self) -> bool:
        """Whether any accounted Pod has an (anti-)affinity term."""
        return any(self.groups)
