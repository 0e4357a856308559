"""The sharded architecture in live form: what coordinator and shards write, and who is alive.

Shards and the coordinator are separate processes (in a cluster: one Deployment each) that
talk only through the API server, with annotations on the pending Pod
(``docs/parallel.md`` §6):

- ``kubesched.io/shard: "i"`` -- written by the coordinator when it hands the Pod to shard
  ``i`` (absent: nobody holds it), together with ``kubesched.io/attempt: "n"``, which numbers
  the hand-outs of this Pod (a restarted coordinator continues from the Pod's value), so an
  answer to an older hand-out is recognised and ignored;
- ``kubesched.io/proposal: JSON`` -- written by the shard, a :class:`Proposal`: the node, the
  node's ``resourceVersion`` as the shard saw it, and ranked alternatives; or the failure
  (reason, message, rejecting plugins, and after a preemption the nominated node and victims).
  It is the live transport of the in-process shard's answer
  (:data:`kubesched.parallel.protocol.Result`): :meth:`Proposal.of` writes one,
  :meth:`Proposal.result` reads it back for the decisions both coordinators share;
- ``kubesched.io/refused: reason`` -- written by the coordinator when it refuses a proposal
  (with the other two cleared; the Pod is then handed out again as a new attempt);
- ``kubesched.io/activate: "i/n"`` -- written by shard ``i`` on a Pod a plugin asked to
  activate that the shard does not hold (upstream ``PodsToActivate``: a gang member waiting
  at Permit activates its siblings, which wait in the coordinator's queue); each new value
  makes the coordinator activate the Pod (the in-process ``FromShard.activate``).

Membership: shard ``i`` holds the Lease ``kubesched-shard-<i>`` in the leader-election
namespace (:mod:`kubesched.live.leader`'s mechanics, so a shard Deployment may run a warm
standby).  :class:`Membership` reads those Leases as the coordinator's informer sees them:
a shard is alive while its Lease has a holder and its record changed within
``leaseDurationSeconds`` *as observed locally* (no clock comparison across machines, as
leader election itself).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.live.client import KubeClient
from kubesched.parallel import protocol as p

Obj = dict[str, Any]

SHARD = "kubesched.io/shard"
ATTEMPT = "kubesched.io/attempt"
PROPOSAL = "kubesched.io/proposal"
REFUSED = "kubesched.io/refused"
ACTIVATE = "kubesched.io/activate"
LEASE_PREFIX = "kubesched-shard-"
MERGE_PATCH = "application/merge-patch+json"


def lease_name(index: int) -> str:
    """The membership Lease of shard ``index``."""
    return f"{LEASE_PREFIX}{index}"


def lease_index(name: str) -> int | None:
    """The shard index of a membership Lease name, or None for any other Lease."""
    if not name.startswith(LEASE_PREFIX):
        return None
    rest = name[len(LEASE_PREFIX) :]
    return int(rest) if rest.isdigit() else None


def owner(annotations: Mapping[str, str]) -> tuple[int, int]:
    """``(shard, attempt)`` a Pod's annotations name; ``(-1, 0)`` when nobody holds it."""
    shard, attempt = annotations.get(SHARD, ""), annotations.get(ATTEMPT, "")
    if not shard.isdigit():
        return -1, 0
    return int(shard), int(attempt) if attempt.isdigit() else 0


def attempt_of(annotations: Mapping[str, str]) -> int:
    """The hand-out number on a Pod (0 when it was never handed out)."""
    value = annotations.get(ATTEMPT, "")
    return int(value) if value.isdigit() else 0


@dataclass(frozen=True, slots=True)
class Proposal:
    """A shard's answer for one hand-out (``node`` empty and ``failed`` set: no node fits)."""

    shard: int
    attempt: int
    node: str = ""
    resource_version: str = ""
    """The node's ``resourceVersion`` in the shard's informer cache when it decided."""
    alternatives: tuple[tuple[str, str], ...] = ()
    """Runner-up ``(node, resourceVersion)`` in score order."""
    failed: str = ""
    """``Unschedulable`` or ``SchedulerError`` when no node was found."""
    message: str = ""
    plugins: tuple[str, ...] = ()
    pending: tuple[str, ...] = ()
    nominated: str = ""
    victims: tuple[str, ...] = ()
    """Keys (``namespace/name``) of the Pods the shard's PostFilter chose to preempt."""

    @staticmethod
    def of(res: p.Result, shard: int, attempt: int, version: Callable[[str], str]) -> Proposal:
        """Shard ``shard``'s answer ``res`` to hand-out ``attempt``; ``version``: a node's
        ``resourceVersion`` in the shard's informer cache."""
        if isinstance(res, p.Propose):
            return Proposal(
                shard,
                attempt,
                node=res.node,
                resource_version=version(res.node),
                alternatives=tuple((n, version(n)) for n, _ in res.alternatives),
            )
        return Proposal(
            shard,
            attempt,
            failed=res.reason,
            message=res.message,
            plugins=res.unschedulable_plugins,
            pending=res.pending_plugins,
            nominated=res.nominated,
            victims=res.victims,
        )

    def result(self, key: str, group: str) -> p.Result:
        """The answer as the in-process shard gives it (Pod ``key``, of gang ``group``):
        node versions unknown (``-1``: live proposals always take the binder's full check)
        and never node-local."""
        if self.failed:
            return p.Failed(
                key,
                self.failed,
                self.message,
                self.plugins,
                self.pending,
                self.nominated,
                self.victims,
            )
        alts = tuple((n, -1) for n, _ in self.alternatives)
        return p.Propose(key, self.node, -1, alts, p.NOT_LOCAL, group)

    def encode(self) -> str:
        """The annotation value (compact JSON)."""
        out: Obj = {"shard": self.shard, "attempt": self.attempt}
        if self.failed:
            out.update(failed=self.failed, message=self.message, plugins=list(self.plugins))
            out.update(pending=list(self.pending))
            if self.nominated:
                out.update(nominated=self.nominated, victims=list(self.victims))
        else:
            out.update(node=self.node, resourceVersion=self.resource_version)
            out["alternatives"] = [
                {"node": n, "resourceVersion": rv} for n, rv in self.alternatives
            ]
        return json.dumps(out, separators=(",", ":"))

    @staticmethod
    def decode(text: str) -> Proposal | None:
        """The proposal in an annotation value; None when it cannot be read."""
        try:
            raw = json.loads(text)
            alts = tuple(
                (str(a["node"]), str(a.get("resourceVersion", "")))
                for a in raw.get("alternatives") or ()
            )
            prop = Proposal(
                shard=int(raw["shard"]),
                attempt=int(raw["attempt"]),
                node=str(raw.get("node", "")),
                resource_version=str(raw.get("resourceVersion", "")),
                alternatives=alts,
                failed=str(raw.get("failed", "")),
                message=str(raw.get("message", "")),
                plugins=tuple(str(x) for x in raw.get("plugins") or ()),
                pending=tuple(str(x) for x in raw.get("pending") or ()),
                nominated=str(raw.get("nominated", "")),
                victims=tuple(str(x) for x in raw.get("victims") or ()),
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            return None
        return prop if prop.node or prop.failed else None


def annotate(
    client: KubeClient,
    namespace: str,
    name: str,
    annotations: Mapping[str, str | None],
    resource_version: str = "",
) -> Obj:
    """JSON merge patch of a Pod's annotations (``None`` removes one); with
    ``resource_version`` the write is conditional (409 when the Pod changed)."""
    meta: Obj = {"annotations": dict(annotations)}
    if resource_version:
        meta["resourceVersion"] = resource_version
    path = f"/api/v1/namespaces/{namespace}/pods/{name}"
    return client.request("PATCH", path, body={"metadata": meta}, content_type=MERGE_PATCH)


class Membership:
    """Which shards are alive, from their Leases (fed by the coordinator's Lease informer)."""

    def __init__(self, shards: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.shards = shards
        self.clock = clock
        self._spec: dict[int, Obj] = {}
        self._seen_at: dict[int, float] = {}

    def observe(self, lease: Obj, *, deleted: bool = False) -> None:
        """A Lease was listed, changed or deleted."""
        index = lease_index(str((lease.get("metadata") or {}).get("name", "")))
        if index is None or index >= self.shards:
            return
        if deleted:
            self._spec.pop(index, None)
            self._seen_at.pop(index, None)
            return
        spec = dict(lease.get("spec") or {})
        if spec != self._spec.get(index):
            self._spec[index] = spec
            self._seen_at[index] = self.clock()

    def live(self) -> list[int]:
        """Indexes of the shards alive now, ascending."""
        now = self.clock()
        out = []
        for index, spec in sorted(self._spec.items()):
            duration = float(spec.get("leaseDurationSeconds") or 0)
            if spec.get("holderIdentity") and now - self._seen_at[index] < duration:
                out.append(index)
        return out

    def holder(self, index: int) -> str:
        """The identity holding shard ``index``'s Lease ('' when none)."""
        return str(self._spec.get(index, {}).get("holderIdentity") or "")
