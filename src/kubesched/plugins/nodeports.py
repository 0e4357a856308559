"""NodePorts: a Pod's host ports must be free on the node.

Upstream ``nodeports/node_ports.go`` (v1.34, QueueingHints enabled): PreFilter skips Pods
without host ports; Filter fails with Unschedulable
``node(s) didn't have free ports for the requested pod ports`` when a wanted
``(hostIP, protocol, hostPort)`` conflicts with one in use (``HostPortInfo.CheckConflict``):
a wanted ``0.0.0.0`` conflicts with the same protocol/port on any IP; a specific IP conflicts
with the same IP or ``0.0.0.0``.  Empty IP means ``0.0.0.0`` and empty protocol ``TCP``.

Node usage comes from ``NodeTable.host_ports[(ip, protocol, port)]``: an int32 count column,
in use where the count is positive.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesched.api import objects as api
from kubesched.config import names
from kubesched.framework.contract import Locality
from kubesched.framework.interface import (
    SKIP,
    SUCCESS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    IntArray,
    PreFilterResult,
    QueueingHint,
    Resource,
    Status,
    Verdict,
    error,
)
from kubesched.state.cache import ClusterState
from kubesched.state.nodes import BoolArray

NAME = names.NODE_PORTS
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"
_PRE_FILTER_KEY = "PreFilter" + NAME

_STATUS = Status(Code.UNSCHEDULABLE, (ERR_REASON,))

PortKey = tuple[str, str, int]
"""A sanitized ``(host_ip, protocol, port)``."""


class NodePorts:
    """Rejects nodes where a wanted host port is already taken."""

    name = NAME
    locality = Locality.NODE_LOCAL
    row_local = True
    """Answers for a node depend on the Pod, that node and the Pods on it only (result
    reuse keeps its entry when Pods change on other nodes: ``scheduler.batch``)."""

    def __init__(self, args: object | None, handle: Handle) -> None:
        self.handle = handle

    def sign(self, pod: api.Pod) -> object:
        """Result reuse: the answer depends on the Pod's host ports only."""
        return pod.host_ports

    def pre_filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState
    ) -> tuple[PreFilterResult | None, Status]:
        """Skip Pods without host ports; otherwise remember the sanitized wanted ports."""
        wanted = host_ports(pod)
        if not wanted:
            return None, SKIP
        state[_PRE_FILTER_KEY] = wanted
        return None, SUCCESS

    def filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Verdict:
        """Fail rows where any wanted port conflicts with a port in use."""
        wanted = state.get(_PRE_FILTER_KEY)
        if wanted is None:  # upstream: reading the PreFilter state fails -> Error
            status = error(f'reading "{_PRE_FILTER_KEY}" from cycleState: not found')
            return Verdict(np.ones(rows.shape[0], dtype=np.int8), {1: status})
        return Verdict.from_mask(conflict_mask(wanted, cluster, rows), _STATUS)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Pod/Delete (hinted; v1.37+ AssignedPod/Delete) and Node/Add (always Queue)."""
        pods = Resource.ASSIGNED_POD if self.handle.feature_gates.at_least("1.37") else Resource.POD
        return [
            ClusterEventWithHint(
                ClusterEvent(pods, ActionType.DELETE), is_schedulable_after_pod_deleted
            ),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD)),
        ]


# --------------------------------------------------------------------------- queueing hints
def is_schedulable_after_pod_deleted(pod: api.Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when the deleted Pod was placed and held a port that ``pod`` wants."""
    if not isinstance(old, api.Pod):
        return QueueingHint.QUEUE
    if not old.node_name:
        return QueueingHint.QUEUE_SKIP
    freed = host_ports(old)
    if not freed:
        return QueueingHint.QUEUE_SKIP
    if fits_ports(host_ports(pod), freed):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


# --------------------------------------------------------------------------- kernel
def sanitize(ip: str, protocol: str, port: int) -> PortKey:
    """Upstream ``HostPortInfo.sanitize``: empty IP is 0.0.0.0, empty protocol TCP."""
    return (ip or DEFAULT_BIND_ALL_HOST_IP, protocol or "TCP", port)


def host_ports(pod: api.Pod) -> tuple[PortKey, ...]:
    """The Pod's sanitized host ports (``hostPort > 0``), in declaration order."""
    if not pod.host_ports:  # most Pods: no generator to make
        return ()
    return tuple(sanitize(p.host_ip, p.protocol, p.port) for p in pod.host_ports if p.port > 0)


def check_conflict(want: PortKey, used: Iterable[PortKey]) -> bool:
    """Upstream ``HostPortInfo.CheckConflict`` of one wanted port against used ports."""
    ip, protocol, port = sanitize(*want)
    if port <= 0:
        return False
    for uip, uproto, uport in (sanitize(*u) for u in used):
        if uproto != protocol or uport != port:
            continue
        if ip == DEFAULT_BIND_ALL_HOST_IP or uip in (DEFAULT_BIND_ALL_HOST_IP, ip):
            return True
    return False


def fits_ports(wanted: Iterable[PortKey], used: Iterable[PortKey]) -> bool:
    """Upstream ``fitsPorts``: no wanted port conflicts with ``used``."""
    in_use = tuple(used)
    return not any(check_conflict(w, in_use) for w in wanted)


def conflict_mask(wanted: Iterable[PortKey], cluster: ClusterState, rows: IntArray) -> BoolArray:
    """bool ``(n,)``: True where some wanted port is in use on the node ``rows[i]``.

    The node table's port columns are grouped by ``(protocol, port)`` once; each wanted port
    then ORs in the count columns of the IPs it conflicts with.
    """
    by_proto_port: dict[tuple[str, int], list[tuple[str, npt.NDArray[np.int32]]]] = {}
    for (ip, protocol, port), col in cluster.nodes.host_ports.items():
        uip, uproto, uport = sanitize(ip, protocol, port)
        by_proto_port.setdefault((uproto, uport), []).append((uip, col))
    conflict = np.zeros(rows.shape[0], dtype=np.bool_)
    for ip, protocol, port in wanted:
        if port <= 0:
            continue
        for uip, col in by_proto_port.get((protocol, port), ()):
            if ip == DEFAULT_BIND_ALL_HOST_IP or uip in (DEFAULT_BIND_ALL_HOST_IP, ip):
                conflict |= col[rows] > 0
    return conflict


def new(args: object | None, handle: Handle) -> NodePorts:
    """Factory; NodePorts has no args (anything given is ignored, as upstream)."""
    return NodePorts(args, handle)
