"""The all-or-nothing decision on a gang's members a shard proposed together, for both
coordinators.

A gang (Pods labelled ``scheduling.x-k8s.io/pod-group``) goes to one shard as a unit.  The
members that shard proposed together (in process: in one reply; live: once every member
handed to it has answered) are checked together: each is tentatively assumed on the
authoritative cache so the next one's check sees it, then all are released again; only if
every member passes are they committed (Reserve, Permit -- where Coscheduling holds them
until the gang is complete -- and bind), else every member is refused and the gang's members
waiting at Permit are rejected.  A member the shard reported as fitting nowhere is not part
of the unit: it fails on its own as any failure report does (its siblings still wait at
Permit for it, so the gang stays all or nothing there).

:func:`commit_unit` is that decision, over :class:`GangDecisions`: what the in-process
binder (:class:`~kubesched.parallel.binder.Binder`) and the live coordinator's decisions
(:class:`~kubesched.live.decisions.Decisions`) each supply -- their check of one proposal,
their commit, their refusal (how a shard hears of it), their timing.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import partial
from typing import Protocol

from kubesched.framework.runtime import Framework
from kubesched.parallel import protocol as p
from kubesched.parallel.conflicts import Outcomes, check_together
from kubesched.parallel.dispatcher import InFlight
from kubesched.parallel.host import Choice


class GangDecisions(Protocol):
    """What deciding a gang's proposals together needs of a coordinator's decisions."""

    outcomes: Outcomes
    """The shared outcomes (its host's cache; rejecting the gang's waiting members)."""

    def check(self, fwk: Framework, rec: InFlight, res: p.Propose) -> Choice:
        """Re-validate one member's proposal on the authoritative state now."""
        ...

    def accept(self, fwk: Framework, rec: InFlight, res: p.Propose, choice: Choice) -> None:
        """Count and commit a member that passed (assume, Reserve, Permit, bind)."""

    def refuse(self, rec: InFlight, reason: str) -> None:
        """Refuse a member: count it, tell its shard, hand it out again (or back off)."""

    def tentative(self, nodes: list[str]) -> None:
        """The check assumed and released members on ``nodes`` (their generations moved)."""

    def timed(self, t0: float, path: str) -> None:
        """One decision by ``path`` took ``time.perf_counter() - t0``."""


def commit_unit(
    decisions: GangDecisions, group: str, members: Sequence[tuple[p.Propose, InFlight]]
) -> None:
    """Check gang ``group``'s ``(proposal, record)`` members a shard proposed together (each
    tentatively assumed so the next one sees it, :func:`~.conflicts.check_together`) and
    commit them all, or refuse them all (see the module docstring)."""
    t0 = time.perf_counter()
    outcomes = decisions.outcomes
    cluster = outcomes.host.cluster
    profiles = outcomes.host.profiles
    unit = [(res, rec, profiles[rec.qp.pod.scheduler_name]) for res, rec in members]
    chosen, refused = check_together(
        cluster,
        ((rec.qp.pod, partial(decisions.check, fwk, rec, res)) for res, rec, fwk in unit),
    )
    touched = list(dict.fromkeys(str(choice.node) for choice in chosen))
    if touched:
        decisions.tentative(touched)
    if refused is not None:
        reason = refused.reason
        message = f"gang {group}: a member was refused by the {outcomes.who} ({reason})"
        outcomes.gang_refused(group, message)
        for _, rec, _ in unit:
            decisions.refuse(rec, "gang_" + reason)
        decisions.timed(t0, "refused")
        return
    for (res, rec, fwk), choice in zip(unit, chosen, strict=True):
        decisions.accept(fwk, rec, res, choice)
    decisions.timed(t0, "gang")
