"""What a coordinator does with a shard's checked answer, shared by both coordinators.

The in-process binder (:mod:`~kubesched.parallel.binder`, :mod:`~kubesched.parallel.gangs`)
and the live coordinator (:mod:`kubesched.live.decisions`) re-validate shard proposals with
the same :class:`~kubesched.parallel.binder.Checker` and decide the outcome with the same
:class:`Outcomes` (one each, over the narrow :class:`~kubesched.parallel.host.OutcomeHost`
both coordinators implement): a commit counted as ``committed`` or ``alternative``, a
refusal counted and retried or failed, a failure report failed as the serial scheduler
fails, a preemption granted or refused, a gang's waiting members rejected.  Only how a
shard hears of a refusal (the binder's next message; the live Pod's annotation) and how a
victim is evicted stay each coordinator's own.  The rules:

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
from kubesched.framework.outcomes import PostFilterResult
from kubesched.parallel import protocol as p
from kubesched.parallel.host import Choice, Handed, OutcomeHost
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


Evict = Callable[[api.Pod, api.Pod, str], str]
"""Evict ``victim`` for ``preemptor`` on ``node`` (a coordinator's own way): '' once done,
else why the preemption is refused."""


class Outcomes:
    """The outcomes of checked shard answers (see the module docstring), decided alike by
    both coordinators on ``host``; ``who`` and ``plugin`` name the coordinator in the error a
    Pod fails with after too many refusals, ``evict`` evicts a granted preemption's victims."""

    def __init__(self, host: OutcomeHost, who: str, plugin: str, evict: Evict) -> None:
        self.host = host
        self.who = who
        self.plugin = plugin
        self.evict = evict
        self.retries = Retries()
        self.claimed: dict[str, str] = {}
        """Victim key to the preemptor that claimed it."""

    def committed(self, shard: int, key: str, proposed: str, choice: Choice) -> str:
        """``key``'s proposal of node ``proposed`` by ``shard`` passed on ``choice.node``
        and is being committed: counted as ``committed`` or, on another node, as
        ``alternative`` (the proposed node's refusal as a conflict); its refusals in a row
        start over.  Which of the two it was."""
        pm = self.host.parallel_metrics
        result = "committed" if choice.node == proposed else "alternative"
        if result == "alternative":
            pm.conflict(choice.reason)
        pm.result(shard, result)
        self.retries.settled(key)
        return result

    def refused(self, rec: Handed, reason: str) -> bool:
        """A proposal was refused for ``reason`` (its shard told by the caller): counted;
        the Pod is handed out again at once (True) or, after :data:`FAST_RETRIES` refusals
        in a row, fails as an error (False)."""
        pm = self.host.parallel_metrics
        pm.conflict(reason)
        pm.result(rec.shard, "refused")
        if self.retries.again(rec.qp.pod.key):
            self.host.requeue_now(rec, "conflict")
            return True
        fwk = self.host.profiles[rec.qp.pod.scheduler_name]
        status = Retries.gave_up(self.who, reason, self.plugin)
        self.host.failing.fail(fwk, rec.qp, status, rec.cycle, rec.start)
        return False

    def failed(self, rec: Handed, res: p.Failed) -> str:
        """A shard's failure report: the preemption it carries is granted (:meth:`preempt`)
        and the Pod fails as the serial scheduler fails (:func:`reported`): ''; or the
        preemption is refused: why (the caller refuses the answer)."""
        if res.nominated and res.victims:
            why = self.preempt(rec, res.nominated, res.victims)
            if why:
                return why
        host, qp = self.host, rec.qp
        qp.pending_plugins = set(res.pending_plugins)
        failure = reported(
            res.reason, res.message, res.unschedulable_plugins, len(host.cluster.nodes)
        )
        unschedulable = isinstance(failure, Diagnosis)
        host.parallel_metrics.result(rec.shard, "unschedulable" if unschedulable else "error")
        fwk = host.profiles[qp.pod.scheduler_name]
        host.failing.fail(fwk, qp, failure, rec.cycle, rec.start)
        return ""

    def preempt(self, rec: Handed, node: str, victims: tuple[str, ...]) -> str:
        """Grant the preemption of ``victims`` on ``node`` while every one is still there and
        unclaimed (:func:`victims_of`): claim and evict them, nominate the Pod; '' when
        granted, else why not."""
        host = self.host
        key = rec.qp.pod.key
        pods, why = victims_of(host.cluster, self.claimed, key, node, victims)
        if why:
            return why
        for victim in pods:
            self.claimed[victim.key] = key
            why = self.evict(victim, rec.qp.pod, node)
            if why:
                return why
        host.metrics.record_preemption(len(pods))
        host.failing.nominate(rec.qp, PostFilterResult(node, tuple(pods)))
        return ""

    def forget_victim(self, key: str) -> None:
        """A victim is gone for good."""
        self.claimed.pop(key, None)

    def gang_refused(self, group: str, message: str) -> None:
        """A gang's members proposed together were refused: its members held at Permit are
        rejected there (:func:`reject_waiting_members`, with ``message``) and their
        rejections handled at once."""
        reject_waiting_members(self.host.handle, group, self.plugin, message)
        self.host.committer.drain_waiting()
