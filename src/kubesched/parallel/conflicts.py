"""What a coordinator does with what its checks refuse, shared by both coordinators.

The in-process binder (:mod:`~kubesched.parallel.binder`, :mod:`~kubesched.parallel.gangs`)
and the live coordinator (:mod:`kubesched.live.decisions`) re-validate shard proposals with
the same :class:`~kubesched.parallel.binder.Checker` and handle the outcome by the same rules:

- :class:`Retries`: a refused Pod is handed out again at once, up to :data:`FAST_RETRIES`
  refusals in a row; the next one fails it as an error (backoff);
- :func:`check_together`: a gang's members proposed together are checked one after the
  other, each tentatively assumed so the next one's check sees it, then all released: the
  coordinator commits them all or refuses them all;
- :func:`reject_waiting_members`: when a gang is refused, its members already held at
  Permit are rejected there;
- :func:`reported`: a shard's failure report as the serial scheduler's failure;
- :func:`victims_of`: a preemption a shard chose is granted only while every victim is still
  on its node and no other preemptor claimed it first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kubesched.api import objects as api
from kubesched.framework.interface import Code, Handle, Status
from kubesched.parallel import protocol as p
from kubesched.parallel.host import Choice
from kubesched.scheduler import Diagnosis
from kubesched.state.cache import ClusterState

FAST_RETRIES = 3
"""Conflicts a Pod may have in a row before it backs off like an error."""
UNSCHEDULABLE = "Unschedulable"
"""A failure report's reason when no node fits (any other reason is an error)."""


class Retries:
    """Refusals in a row per Pod key (see the module docstring)."""

    def __init__(self) -> None:
        self.in_a_row: Counter[str] = Counter()

    def again(self, key: str) -> bool:
        """A proposal of ``key`` was refused: whether to hand it out again at once (else it
        fails as an error: :meth:`gave_up`)."""
        self.in_a_row[key] += 1
        if self.in_a_row[key] <= FAST_RETRIES:
            return True
        del self.in_a_row[key]
        return False

    def settled(self, key: str) -> None:
        """``key`` was committed, or is gone: its count starts over."""
        self.in_a_row.pop(key, None)

    @staticmethod
    def gave_up(who: str, reason: str, plugin: str) -> Status:
        """The error a Pod fails with after too many refusals by ``who`` in a row."""
        msg = f"{who} refused {FAST_RETRIES + 1} proposals in a row ({reason})"
        return Status(Code.ERROR, (msg,), plugin)


def check_together(
    cluster: ClusterState, members: Iterable[tuple[api.Pod, Callable[[], Choice]]]
) -> tuple[list[Choice], Choice | None]:
    """Check ``(pod, choose)`` members in order on ``cluster``, each that passes tentatively
    assumed on its node while the next is checked; every assume is released again before
    returning.  ``(choices of the members that passed, the refusing member's choice or
    None)``: the check stops at the first member no candidate passes."""
    chosen: list[tuple[api.Pod, Choice]] = []
    refused: Choice | None = None
    for pod, choose in members:
        choice = choose()
        if choice.node is None:
            refused = choice
            break
        cluster.assume_pod(pod.bound_to(choice.node), choice.node)
        chosen.append((pod, choice))
    for pod, choice in chosen:
        cluster.forget_pod(pod.bound_to(str(choice.node)))
    return [choice for _, choice in chosen], refused


def reject_waiting_members(handle: Handle, group: str, plugin: str, message: str) -> None:
    """Reject the members of gang ``group`` held at Permit and not decided yet."""
    for wp in handle.waiting_pods.all():
        if p.group_of(wp.pod) == group and wp.status is None:
            wp.reject(plugin, message)


def victims_of(
    cluster: ClusterState, claimed: dict[str, str], preemptor: str, node: str, keys: Iterable[str]
) -> tuple[list[api.Pod], str]:
    """The victims ``keys`` a shard chose on ``node`` for Pod ``preemptor``, if every one is
    still there and not claimed (``claimed``: victim key to its preemptor) by another
    preemptor: ``(victims, "")``; else ``([], "victim_gone" or "victim_claimed")``."""
    pods = []
    for key in keys:
        rec = cluster.pods.get(key)
        if rec is None or rec.node != node:
            return [], "victim_gone"
        if claimed.get(key, preemptor) != preemptor:
            return [], "victim_claimed"
        pods.append(rec.pod)
    return pods, ""


@dataclass(slots=True)
class _Reported(Diagnosis):
    """A shard's diagnosis, its message kept verbatim."""

    text: str = ""

    def message(self) -> str:
        return self.text


def reported(reason: str, message: str, plugins: Iterable[str], nodes: int) -> Diagnosis | Status:
    """A shard's failure report (``reason``, ``message``, the rejecting ``plugins``) as the
    serial scheduler's failure on a cluster of ``nodes`` nodes: a diagnosis keeping the
    shard's message for :data:`UNSCHEDULABLE`, else an error."""
    if reason == UNSCHEDULABLE:
        return _Reported(nodes, Counter(), set(plugins), text=message)
    return Status(Code.ERROR, (message,))
