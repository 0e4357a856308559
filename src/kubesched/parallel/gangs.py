"""The binder's all-or-nothing commit of a gang's members proposed together.

A gang (Pods labelled ``scheduling.x-k8s.io/pod-group``) goes to one shard as a unit, and the
members a shard proposes in one reply are checked together: each is tentatively assumed on
the authoritative cache so the next one's check sees it, then all are released again; only
if every member passes are they committed (Reserve, Permit -- where Coscheduling holds them
until the gang is complete -- and bind), else every member is refused and the gang's members
waiting at Permit are rejected.  The tentative assumes change node generations, so the
touched nodes' generations are streamed (``Generations``) for the shards' versions.
"""

from __future__ import annotations

import time

from kubesched.framework.runtime import Framework
from kubesched.parallel import protocol as p
from kubesched.parallel.dispatcher import InFlight
from kubesched.parallel.host import NAME, BinderCore, Choice


def commit_unit(binder: BinderCore, shard: int, group: str, results: list[p.Propose]) -> None:
    """Check a gang's members a shard proposed together (each tentatively assumed so the
    next one sees it) and commit them all, or refuse them all."""
    t0 = time.perf_counter()
    pairs = [(res, rec) for res in results if (rec := binder.take(shard, res)) is not None]
    cluster = binder.hub.cluster
    chosen: list[tuple[p.Propose, InFlight, Framework, Choice]] = []
    refused: tuple[InFlight, str] | None = None
    for res, rec in pairs:
        fwk = binder.hub.profiles[rec.qp.pod.scheduler_name]
        choice = binder.choose(fwk, rec.qp.pod, res)
        if choice.node is None:
            refused = (rec, choice.reason)
            break
        cluster.assume_pod(rec.qp.pod.bound_to(choice.node), choice.node)
        chosen.append((res, rec, fwk, choice))
    touched: dict[str, int] = {}
    for _, rec, _, choice in chosen:
        cluster.forget_pod(rec.qp.pod.bound_to(str(choice.node)))
        touched[str(choice.node)] = 0
    for name in touched:
        touched[name] = int(cluster.nodes.generation[cluster.nodes.row_of[name]])
    if touched:
        binder.hub.log_entry(p.Generations(touched))
    if refused is not None:
        _refuse_gang(binder, shard, group, [rec for _, rec in pairs], refused[1])
        binder.timed(t0, "refused")
        return
    for res, rec, fwk, choice in chosen:
        binder.counted(shard, res, choice)
        binder.commit(fwk, rec, str(choice.node), choice.state, shard)
    binder.timed(t0, "gang")


def _refuse_gang(
    binder: BinderCore, shard: int, group: str, recs: list[InFlight], reason: str
) -> None:
    for wp in binder.hub.handle.waiting_pods.all():
        if p.group_of(wp.pod) == group and wp.status is None:
            wp.reject(NAME, f"gang {group}: a member was refused by the binder ({reason})")
    binder.hub._drain_waiting()
    for rec in recs:
        binder.conflict(shard, rec, "gang_" + reason)
