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
from functools import partial

from kubesched.framework.runtime import Framework
from kubesched.parallel import protocol as p
from kubesched.parallel.conflicts import check_together
from kubesched.parallel.dispatcher import InFlight
from kubesched.parallel.host import BinderCore


def commit_unit(binder: BinderCore, shard: int, group: str, results: list[p.Propose]) -> None:
    """Check a gang's members a shard proposed together (each tentatively assumed so the
    next one sees it, :func:`~.conflicts.check_together`) and commit them all, or refuse
    them all."""
    t0 = time.perf_counter()
    hub = binder.hub
    cluster = hub.cluster
    members: list[tuple[p.Propose, InFlight, Framework]] = [
        (res, rec, hub.profiles[rec.qp.pod.scheduler_name])
        for res in results
        if (rec := binder.take(shard, res)) is not None
    ]
    chosen, refused = check_together(
        cluster,
        ((rec.qp.pod, partial(binder.choose, fwk, rec.qp.pod, res)) for res, rec, fwk in members),
    )
    touched = {str(choice.node): 0 for choice in chosen}
    for name in touched:
        touched[name] = int(cluster.nodes.generation[cluster.nodes.row_of[name]])
    if touched:
        hub.log_entry(p.Generations(touched))
    if refused is not None:
        reason = refused.reason
        message = f"gang {group}: a member was refused by the binder ({reason})"
        binder.gang_refused(group, message)
        for _, rec, _ in members:
            binder.conflict(shard, rec, "gang_" + reason)
        binder.timed(t0, "refused")
        return
    for (res, rec, fwk), choice in zip(members, chosen, strict=True):
        binder.counted(shard, res, choice)
        binder.commit(fwk, rec, str(choice.node), choice.state, shard)
    binder.timed(t0, "gang")
