"""Which nodes count for a constraint: topology keys present and the node inclusion policies.

Upstream counts a node for constraint ``c`` when it has every topology key of the Pod's
constraints and, per ``c``'s policies, matches the Pod's required node affinity
(``nodeAffinityPolicy: Honor``, the default) and has no untolerated NoSchedule/NoExecute
taint (``nodeTaintsPolicy: Honor``).  Here those are boolean masks over node rows, computed
per distinct label value / taint set, never per node in Python.

The required-affinity evaluation (``nodeSelector`` AND ORed ``nodeSelectorTerms``) is this
plugin's own copy (plugins do not import each other).  A term with an invalid requirement, or
with no requirement at all, matches nothing (upstream ignores parse errors here).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from kubesched.api import objects as api
from kubesched.state.nodes import BoolArray, IntArray, NodeTable

OBJECT_NAME_FIELD = "metadata.name"


def _codes(table: NodeTable, key: str, rows: IntArray) -> npt.NDArray[np.int32]:
    col = table.label_codes.get(key)
    return np.full(rows.shape[0], -1, dtype=np.int32) if col is None else col[rows]


def _req_mask(req: api.Requirement, table: NodeTable, rows: IntArray) -> BoolArray | None:
    """bool ``(n,)`` for one label requirement; None if the requirement is invalid."""
    op, values = req.operator, req.values
    codes = _codes(table, req.key, rows)
    if op in ("In", "NotIn"):
        if not values:
            return None
        known = table.label_values.get(req.key, {})
        hit = np.isin(codes, [known[v] for v in values if v in known])
        return np.asarray(hit if op == "In" else ~hit, dtype=np.bool_)
    if op in ("Exists", "DoesNotExist"):
        if values:
            return None
        return np.asarray(codes >= 0 if op == "Exists" else codes < 0, dtype=np.bool_)
    if op in ("Gt", "Lt") and len(values) == 1:
        bound = api.parse_int64(values[0])
        if bound is None:
            return None
        known = table.label_values.get(req.key, {})
        lut = np.zeros(len(known) + 1, dtype=np.bool_)  # last slot: label absent (-1)
        for value, code in known.items():
            n = api.parse_int64(value)
            lut[code] = n is not None and (n > bound if op == "Gt" else n < bound)
        return np.asarray(lut[codes], dtype=np.bool_)
    return None


def _field_mask(req: api.Requirement, table: NodeTable, rows: IntArray) -> BoolArray | None:
    if req.key != OBJECT_NAME_FIELD or req.operator not in ("In", "NotIn"):
        return None
    if len(req.values) != 1:
        return None
    eq = rows == table.row_of.get(req.values[0], -1)
    return np.asarray(eq if req.operator == "In" else ~eq, dtype=np.bool_)


def _term_mask(term: api.NodeSelectorTerm, table: NodeTable, rows: IntArray) -> BoolArray:
    out = np.ones(rows.shape[0], dtype=np.bool_)
    if not term.match_expressions and not term.match_fields:
        return ~out
    for req in term.match_expressions:
        m = _req_mask(req, table, rows)
        if m is None:
            return np.zeros(rows.shape[0], dtype=np.bool_)
        out &= m
    for req in term.match_fields:
        m = _field_mask(req, table, rows)
        if m is None:
            return np.zeros(rows.shape[0], dtype=np.bool_)
        out &= m
    return out


def has_required_affinity(pod: api.Pod) -> bool:
    """Whether the Pod restricts nodes by ``nodeSelector`` or required node affinity."""
    required = pod.node_affinity.required if pod.node_affinity is not None else None
    return bool(pod.node_selector) or required is not None


def affinity_mask(pod: api.Pod, table: NodeTable, rows: IntArray) -> BoolArray:
    """bool ``(n,)``: ``rows[i]`` matches the Pod's nodeSelector and required node affinity."""
    out = np.ones(rows.shape[0], dtype=np.bool_)
    for key, value in pod.node_selector.items():
        out &= _codes(table, key, rows) == table.label_values.get(key, {}).get(value, -2)
    required = pod.node_affinity.required if pod.node_affinity is not None else None
    if required is not None:
        any_term = np.zeros(rows.shape[0], dtype=np.bool_)
        for term in required:
            any_term |= _term_mask(term, table, rows)
        out &= any_term
    return out


def _untolerated(
    taints: Sequence[api.Taint], tolerations: Sequence[api.Toleration], comparison: bool
) -> bool:
    for taint in taints:
        if taint.effect not in (api.NO_SCHEDULE, api.NO_EXECUTE):
            continue
        if not any(t.tolerates(taint, comparison) for t in tolerations):
            return True
    return False


def tolerated_mask(
    pod: api.Pod, table: NodeTable, rows: IntArray, comparison: bool = False
) -> BoolArray:
    """bool ``(n,)``: ``rows[i]`` has no NoSchedule/NoExecute taint the Pod does not tolerate
    (evaluated once per distinct taint set; ``comparison``: Gt/Lt tolerations compare
    numbers, gate TaintTolerationComparisonOperators)."""
    ids = table.taint_set[rows]
    if len(table.taint_sets) == 1 or not ids.any():
        return np.ones(rows.shape[0], dtype=np.bool_)
    per_set = np.fromiter(
        (not _untolerated(ts, pod.tolerations, comparison) for ts in table.taint_sets),
        dtype=np.bool_,
        count=len(table.taint_sets),
    )
    return np.asarray(per_set[ids], dtype=np.bool_)


def keys_present(table: NodeTable, keys: Sequence[str], rows: IntArray) -> BoolArray:
    """bool ``(n,)``: ``rows[i]`` has every label in ``keys``."""
    out = np.ones(rows.shape[0], dtype=np.bool_)
    for key in keys:
        out &= _codes(table, key, rows) >= 0
    return out
