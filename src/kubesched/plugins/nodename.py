"""NodeName: a Pod with ``spec.nodeName`` fits only the node of that name.

Upstream ``nodename/node_name.go`` (v1.34): Filter only (no PreFilter; an older release's
PreFilter was removed), UnschedulableAndUnresolvable
``node(s) didn't match the requested node name``; with QueueingHints enabled it registers
Node/Add without a hint function (always Queue).
"""

from __future__ import annotations

import numpy as np

from kubesched.api import objects as api
from kubesched.config import names
from kubesched.framework.contract import Locality
from kubesched.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    IntArray,
    Resource,
    Status,
    Verdict,
)
from kubesched.state.cache import ClusterState
from kubesched.state.nodes import BoolArray

NAME = names.NODE_NAME
ERR_REASON = "node(s) didn't match the requested node name"

_STATUS = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON,))


class NodeName:
    """Rejects every node but ``spec.nodeName`` when the Pod names one."""

    name = NAME
    locality = Locality.NODE_LOCAL
    node_only = True
    """Answers depend on the node object only, not on the Pods placed on it."""

    def __init__(self, args: object | None, handle: Handle) -> None:
        self.handle = handle

    def sign(self, pod: api.Pod) -> object:
        """Result reuse: the answer depends on ``spec.nodeName`` only."""
        return pod.node_name

    def filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Verdict:
        """All pass without ``spec.nodeName``; otherwise only that node's row passes."""
        if not pod.node_name:
            return Verdict.all_pass(rows.shape[0])
        return Verdict.from_mask(~fits_mask(pod.node_name, cluster, rows), _STATUS)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Node/Add, no hint (always Queue)."""
        return [ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD))]


# --------------------------------------------------------------------------- kernel
def fits(pod: api.Pod, node: api.Node) -> bool:
    """Upstream ``Fits``: no ``spec.nodeName`` or it equals the node's name."""
    return not pod.node_name or pod.node_name == node.name


def fits_mask(node_name: str, cluster: ClusterState, rows: IntArray) -> BoolArray:
    """bool ``(n,)``: True where ``rows[i]`` is the row of the node called ``node_name``."""
    target = cluster.nodes.row_of.get(node_name, -1)
    return np.asarray(rows == target, dtype=np.bool_)


def new(args: object | None, handle: Handle) -> NodeName:
    """Factory; NodeName has no args (anything given is ignored, as upstream)."""
    return NodeName(args, handle)
