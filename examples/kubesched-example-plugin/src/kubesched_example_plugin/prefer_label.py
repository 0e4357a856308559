"""PreferNodeLabel: prefer nodes that carry a label (an out-of-tree Score plugin).

Args (``pluginConfig[].args``, a plain mapping for out-of-tree plugins):

- ``labelKey`` (required): the label a preferred node carries;
- ``labelValue`` (optional): when set, the label must have this value.

Score: 100 (``MaxNodeScore``) for a preferred node, 0 otherwise; no NormalizeScore.  The
answer depends on the node only, never on the Pod or the Pods placed on nodes, so the plugin
is ``node_only`` and signs every Pod the same (result reuse stays on).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from kubesched.api import objects as api
from kubesched.framework.interface import (
    MAX_NODE_SCORE,
    ClusterEventWithHint,
    CycleState,
    Handle,
    IntArray,
)
from kubesched.state.cache import ClusterState
from kubesched.state.nodes import NodeTable

NAME = "PreferNodeLabel"


@dataclass(frozen=True, slots=True)
class PreferNodeLabelArgs:
    """``labelKey`` and optional ``labelValue`` (empty: any value)."""

    label_key: str
    label_value: str = ""


class PreferNodeLabel:
    """Scores 100 on nodes with the configured label, 0 elsewhere."""

    name = NAME
    node_only = True
    """Answers depend on the node object only (result reuse re-scores nothing)."""

    def __init__(self, args: PreferNodeLabelArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle

    def sign(self, pod: api.Pod) -> object:
        """Result reuse: the score does not depend on the Pod at all."""
        return ()

    def score(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> IntArray:
        """int64 ``(n,)``: 100 where ``rows[i]`` carries the label, else 0."""
        match = preferred(cluster.nodes, rows, self.args.label_key, self.args.label_value)
        return np.where(match, MAX_NODE_SCORE, 0).astype(np.int64)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A Score plugin never rejects a Pod, so no event needs to requeue one."""
        return []


# --------------------------------------------------------------------------- kernel
def preferred(table: NodeTable, rows: IntArray, key: str, value: str = "") -> np.ndarray:
    """bool ``(n,)``: whether each node of ``rows`` has label ``key`` (= ``value`` if set),
    read from the table's interned label codes (no per-node Python)."""
    col = table.label_codes.get(key)
    if col is None:
        return np.zeros(rows.shape[0], dtype=np.bool_)
    codes = col[rows]
    if value:
        return np.asarray(codes == table.label_code(key, value), dtype=np.bool_)
    return np.asarray(codes >= 0, dtype=np.bool_)


def new(args: object | None, handle: Handle) -> PreferNodeLabel:
    """Factory (the ``kubesched.plugins`` entry point); validates the args mapping."""
    raw: Mapping[str, object] = args if isinstance(args, Mapping) else {}
    key = raw.get("labelKey")
    if not isinstance(key, str) or not key:
        raise ValueError(f"{NAME}: args.labelKey must be a non-empty string")
    value = raw.get("labelValue", "")
    if not isinstance(value, str):
        raise ValueError(f"{NAME}: args.labelValue must be a string")
    return PreferNodeLabel(PreferNodeLabelArgs(key, value), handle)
