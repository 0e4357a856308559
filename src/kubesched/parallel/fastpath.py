"""The binder's fast check: may a proposal be committed without re-running any Filter?

A proposal may skip the full check when the Filter verdicts the shard computed for its node
are still those the authoritative state would give:

- the profile's PreFilter and Filter plugins declare themselves node-local
  (:attr:`~kubesched.framework.contract.Locality.NODE_LOCAL`; those declaring
  :attr:`~kubesched.framework.contract.Locality.CROSS_NODE` only when the shard says the Pod
  had nothing for them to check, ``local``) and it has no Reserve / Permit / PreBind plugins
  (those declaring :attr:`~kubesched.framework.contract.Locality.CLAIMS` do nothing for a Pod
  without claims: they do not bar the fast path, a Pod with claims never takes it);
- nothing is nominated, and either no Pod in the cluster has required anti-affinity, or
  *node-domain* anti-affinity only: every such term in the cluster (and each of the Pod's
  own, ``NODE_DOMAIN``) is by ``kubernetes.io/hostname`` with fixed namespaces, and the node
  is alone in its hostname domain -- then InterPodAffinity's verdict for the node depends
  on the Pods on that node only (a Pod placed on another node is in another domain);
- the node is as the shard saw it (:meth:`FastPath.unchanged`): its generation is still the
  version the shard quoted, or every change since was a commit of *that shard's own*
  proposals on the nodes it proposed (whichever check passed them).  Those the shard held
  (assumed) in its replica when it decided, so its view of the node was exactly the
  authoritative one.  This *own-commit chain* lets one shard place several Pods on one
  node -- in one message, or in messages sent before the stream confirmed the first --
  without a full check for each.

When only the cross-node condition fails (the Pod has a spread constraint or inter-pod
terms to check, or an existing Pod's anti-affinity might object) but the rest holds, the
node-local Filters' verdicts still stand and the binder runs just the cross-node ones on
the authoritative state (:meth:`FastPath.cross_only`, the ``cross`` check).

The chain is kept per shard and node row as ``(base, gen)``: since generation ``base`` every
change of the row was such a commit, the last leaving generation ``gen``; any other change
(another shard's commit, a deletion, a node update) moves the generation past ``gen`` and so
ends the chain.  Generations only grow per row, and a shard's chains are dropped when it is
restarted and everyone's when a node is deleted (rows are recycled).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.framework.interface import Code, CycleState
from kubesched.framework.outcomes import PluginError
from kubesched.framework.runtime import Framework
from kubesched.parallel import protocol as p
from kubesched.queue.nominator import Nominator
from kubesched.state.cache import ClusterState, PodRecord
from kubesched.state.nodes import IntArray

NO = 0
YES = 1
IF_ALONE = 2
"""What :meth:`FastPath.allowed` answers: no fast path; fast path; fast path on a node
alone in its hostname domain."""

Chain = tuple[int, int]
"""``(base, gen)`` of a node row (see the module docstring)."""


class FastPath:
    """The fast check's state and rules for one coordinator (module docstring): ``cluster``
    is its authoritative cache, ``nominator`` its queue's nominated Pods, ``shards`` how
    many shards propose."""

    def __init__(self, cluster: ClusterState, nominator: Nominator, shards: int) -> None:
        self.cluster = cluster
        self.nominator = nominator
        self._ok: dict[str, bool] = {}
        self._hosts: tuple[int, np.ndarray] = (-1, np.zeros(0, dtype=np.int64))
        """Node-table version and nodes per hostname label value code then."""
        self.anti_affinity_pods = 0
        """Accounted Pods with required anti-affinity (the cache tells, as an observer)."""
        self.spanning_pods = 0
        """Of those, Pods with a term not by hostname or with a namespace selector."""
        self._cross: dict[str, list[Any]] = {}
        """Per profile, its cross-node Filter plugins in order."""
        self.chains: list[dict[int, Chain]] = [{} for _ in range(shards)]
        """Per shard, node row -> its own-commit chain."""
        cluster.observe(self)

    # ------------------------------------------------------------------ cache observer
    def _count(self, pod: api.Pod, n: int) -> None:
        anti = pod.pod_anti_affinity
        if anti is not None and anti.required:
            self.anti_affinity_pods += n
            if not p.node_domain_terms(anti.required):
                self.spanning_pods += n

    def pod_added(self, rec: PodRecord) -> None:
        if rec.pod.pod_anti_affinity is not None:
            self._count(rec.pod, 1)

    def pod_removed(self, rec: PodRecord) -> None:
        self._count(rec.pod, -1)

    def node_changed(self, row: int, old: api.Node | None, new: api.Node | None) -> None:
        del row, old, new

    # ------------------------------------------------------------------ the rules
    def profile_ok(self, fwk: Framework) -> bool:
        """Whether the profile allows the fast path at all."""
        ok = self._ok.get(fwk.profile_name)
        if ok is None:
            can = fwk.capabilities
            names = {pl.name for pl in fwk.filter_plugins}
            names |= {pl.name for pl in fwk.plugins["pre_filter"]}
            ok = names - can.claims <= can.node_local | can.cross_node and not any(
                pl.name not in can.claims
                for point in ("reserve", "permit", "pre_bind")
                for pl in fwk.plugins[point]
            )
            self._ok[fwk.profile_name] = ok
        return ok

    def allowed(self, fwk: Framework, local: int) -> int:
        """Whether a proposal (``local``: see :mod:`~.protocol`) may take the fast path now:
        :data:`NO`, :data:`YES`, or :data:`IF_ALONE` (on a node alone in its hostname
        domain, :meth:`alone`)."""
        if local == p.NOT_LOCAL or not self.profile_ok(fwk) or len(self.nominator):
            return NO
        if local == p.LOCAL and self.anti_affinity_pods == 0:
            return YES
        return IF_ALONE if self.spanning_pods == 0 else NO

    def cross_only(self, fwk: Framework, shard: int, row: int, version: int) -> bool:
        """Whether the node-local Filters' verdicts for node ``row`` still stand, so only the
        cross-node ones (declaring :attr:`~kubesched.framework.contract.Locality.CROSS_NODE`)
        need checking: the profile allows the
        fast path, nothing is nominated and the node is as the shard saw it."""
        return (
            self.profile_ok(fwk) and not len(self.nominator) and self.unchanged(shard, row, version)
        )

    def cross_filter(self, fwk: Framework, state: CycleState, pod: api.Pod, rows: IntArray) -> str:
        """The first cross-node Filter plugin (profile order; those that skipped this cycle
        left out) rejecting the one node of ``rows``, or ``""``: the check
        :meth:`cross_only` allows, without the general Filter loop's bookkeeping (the
        plugins' evaluations are counted as it counts them)."""
        plugins = self._cross.get(fwk.profile_name)
        if plugins is None:
            cross = fwk.capabilities.cross_node
            plugins = [pl for pl in fwk.filter_plugins if pl.name in cross]
            self._cross[fwk.profile_name] = plugins
        cluster = self.cluster
        ev = fwk.evaluations
        for pl in plugins:
            if pl.name in state.skip_filter:
                continue
            verdict = pl.filter(state, pod, cluster, rows)
            key = (pl.name, "Filter")
            ev[key] = ev.get(key, 0) + 1
            code = int(verdict.codes[0]) if verdict.table else 0
            if code:
                status = verdict.table[code]
                if status.code == Code.ERROR:
                    raise PluginError(pl.name, status.message(), point="filter")
                return str(pl.name)
        return ""

    def check(self, mode: int, shard: int, row: int, version: int) -> bool:
        """Whether a proposal :meth:`allowed` ``mode`` for node ``row`` is fast now."""
        return (
            mode != NO and (mode == YES or self.alone(row)) and self.unchanged(shard, row, version)
        )

    def alone(self, row: int) -> bool:
        """Whether no other node shares node ``row``'s hostname label value."""
        table = self.cluster.nodes
        col = table.label_codes.get(p.HOSTNAME_LABEL)
        if col is None or col[row] < 0:
            return True  # no hostname: in no domain at all
        if self._hosts[0] != table.version:
            codes = col[table.alive & (col >= 0)]
            self._hosts = (table.version, np.bincount(codes) if codes.size else codes)
        return bool(self._hosts[1][col[row]] == 1)

    def unchanged(self, shard: int, row: int, version: int) -> bool:
        """Whether node ``row`` is as ``shard`` saw it at ``version``, give or take the
        shard's own commits (``shard`` -1: no chain applies)."""
        gen = int(self.cluster.nodes.generation[row])
        if gen == version:
            return version >= 0
        chain = self.chains[shard].get(row) if shard >= 0 else None
        return chain is not None and chain[1] == gen and chain[0] <= version <= gen

    def base(self, shard: int, row: int) -> int:
        """Where a chain of ``shard`` on ``row`` starts if a commit of its proposal is made
        now: the running chain's base, else the current generation."""
        gen = int(self.cluster.nodes.generation[row])
        chain = self.chains[shard].get(row)
        return chain[0] if chain is not None and chain[1] == gen else gen

    def committed(self, shard: int, row: int, base: int) -> None:
        """``shard``'s commits of its proposals on ``row`` are made; ``base`` from :meth:`base`
        before them."""
        self.chains[shard][row] = (base, int(self.cluster.nodes.generation[row]))

    def forget(self, shard: int | None = None) -> None:
        """Drop one shard's chains (restarted), or everyone's (a node was deleted)."""
        for i, chains in enumerate(self.chains):
            if shard is None or i == shard:
                chains.clear()
