"""Per-constraint node sets and domain counts, vectorised over node rows.

For a constraint on topology key ``k``, nodes are grouped into *domains* by the interned code
of their ``k`` label (``NodeTable.label_codes[k]``, -1 when absent).  Per-domain counts of
matching Pods are ``np.bincount`` of those codes weighted by the per-row counts maintained in
:mod:`~kubesched.plugins.podtopologyspread.counts`, restricted to the rows that count for the
constraint (:mod:`~kubesched.plugins.podtopologyspread.inclusion`).  Everything that depends
only on nodes is cached per node-table version.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesched.api import objects as api
from kubesched.plugins.podtopologyspread import inclusion
from kubesched.plugins.podtopologyspread.constraints import Constraint, Selector
from kubesched.plugins.podtopologyspread.counts import MatchCounts
from kubesched.state.cache import ClusterState
from kubesched.state.nodes import BoolArray, IntArray

Int32Array = npt.NDArray[np.int32]
_MAX_DERIVED = 256


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """The rows counting for one constraint and their domain indexes.

    ``rows`` : int64 ``(m,)`` node rows; ``domains`` : int64 ``(m,)`` domain index of each
    (the label code; rows without the label, kept only for system-default scoring, share the
    index of the value ``""``); ``size`` : number of domain indexes (bincount length);
    ``present`` : bool ``(size,)`` domains with at least one row; ``domains_num`` : how many;
    ``key`` : what identifies the group for the current node-table version; ``member`` :
    bool ``(capacity,)`` whether a row is in the group (one lookup instead of a scan of
    ``rows`` when a Pod comes or goes).
    """

    rows: IntArray
    domains: IntArray
    size: int
    present: BoolArray
    domains_num: int
    key: Hashable
    member: BoolArray

    def has(self, row: int) -> bool:
        """Whether node ``row`` counts for the constraint."""
        member = self.member
        return row < member.shape[0] and bool(member[row])

    def domain_counts(
        self, store: MatchCounts, cluster: ClusterState, namespace: str, selector: Selector
    ) -> IntArray:
        """int64 ``(size,)``: matching Pods per domain over this group's rows (a live array
        kept current by ``store``; copy it to keep a snapshot)."""
        return store.domain_counts(
            cluster, namespace, selector, self.key, self.rows, self.domains, self.size
        )


def domain_index(cluster: ClusterState, key: str) -> tuple[Int32Array, int, int]:
    """``(column, empty, size)``: label codes of ``key`` over all rows, the domain index that
    rows without the label map to (the code of ``""`` if interned, else a spare slot), and the
    number of domain indexes."""
    column = cluster.nodes.label_column(key)
    values = cluster.nodes.label_values[key]
    empty = values.get("", len(values))
    return column, empty, max(len(values) + 1, 1)


def as_domains(column: Int32Array, empty: int, rows: IntArray) -> IntArray:
    """int64 ``(n,)``: domain index of each row (missing label -> ``empty``)."""
    codes = column[rows].astype(np.int64)
    codes[codes < 0] = empty
    return codes


def _signature(pod: api.Pod, affinity: bool, taints: bool, comparison: bool) -> tuple[Any, Any]:
    aff = None
    if affinity and inclusion.has_required_affinity(pod):
        required = pod.node_affinity.required if pod.node_affinity is not None else None
        aff = (tuple(sorted(pod.node_selector.items())), required)
    tol = (pod.tolerations, comparison) if taints else None
    return aff, tol


def node_groups(
    cluster: ClusterState,
    store: MatchCounts,
    pod: api.Pod,
    constraints: Sequence[Constraint],
    require_all_keys: bool = True,
    comparison: bool = False,
) -> list[NodeGroup]:
    """One :class:`NodeGroup` per constraint: live rows that have every topology key of
    ``constraints`` (when ``require_all_keys``) and pass the constraint's inclusion policies
    (``comparison``: Gt/Lt tolerations compare numbers, TaintTolerationComparisonOperators)."""
    derived = store.derived(cluster)
    if len(derived) > _MAX_DERIVED:
        derived.clear()
    keys = tuple(dict.fromkeys(c.topology_key for c in constraints)) if require_all_keys else ()
    groups: list[NodeGroup] = []
    for c in constraints:
        sig = _signature(pod, c.honor_affinity, c.honor_taints, comparison)
        cache_key = ("group", keys, c.topology_key, sig)
        group = derived.get(cache_key)
        if group is None:
            group = _build_group(cluster, pod, keys, c, sig, cache_key)
            derived[cache_key] = group
        groups.append(group)
    return groups


def _build_group(
    cluster: ClusterState,
    pod: api.Pod,
    keys: tuple[str, ...],
    c: Constraint,
    sig: Any,
    cache_key: Hashable,
) -> NodeGroup:
    table = cluster.nodes
    rows = table.order()
    keep: BoolArray = inclusion.keys_present(table, keys, rows)
    if sig[0] is not None:
        keep &= inclusion.affinity_mask(pod, table, rows)
    if sig[1] is not None:
        keep &= inclusion.tolerated_mask(pod, table, rows, bool(sig[1][1]))
    rows = rows[keep]
    column, empty, size = domain_index(cluster, c.topology_key)
    domains = as_domains(column, empty, rows)
    present = np.bincount(domains, minlength=size) > 0
    member = np.zeros(table.capacity, dtype=np.bool_)
    member[rows] = True
    return NodeGroup(rows, domains, size, present, int(present.sum()), cache_key, member)
