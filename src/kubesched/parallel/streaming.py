"""The commit stream: every event the coordinator's cache hears, as entries every shard reads.

:class:`CommitStream` is a part of
:class:`~kubesched.parallel.coordinator.ParallelScheduler` (not a base class of it): its
informer handlers tell it what the authoritative cache heard (node and Pod events, objects,
binds -- the binder's, and those of the cycles auto routing runs in the coordinator), and
it appends the commit-stream entries (:mod:`~kubesched.parallel.protocol`) to its log --
none while the shards are dormant (``synced`` False: they will get a snapshot,
:mod:`~kubesched.parallel.dormancy`).  It also records the binder's holds (``Assumed``)
and their release (``Forgot``, :class:`CacheTap`), and which shard proposed each Pod being
bound.  :func:`snapshot_entries` is the whole authoritative state in the same vocabulary, a
fresh shard's first message.
"""

from __future__ import annotations

from typing import Any

from kubesched.api import objects as api
from kubesched.parallel import protocol as p
from kubesched.state.cache import ClusterState, PodRecord


class CommitStream:
    """The commit stream of the coordinator's cache ``cluster`` for ``shards`` shards (see
    the module docstring); ``synced``: whether the shards follow it from the start."""

    def __init__(self, cluster: ClusterState, shards: int, synced: bool) -> None:
        self.cluster = cluster
        self.synced = synced
        """Whether the shards' replicas follow the stream (with auto routing they start
        dormant: :mod:`~.dormancy`); False: nothing is streamed."""
        self.log: list[p.Entry] = []
        self.log_base = 0
        """Stream position of ``log[0]`` (the log is trimmed once every shard read it)."""
        self.cursor = [0] * shards
        """Per shard: the stream position its next message starts at."""
        self.held_logged: set[str] = set()
        """Pods streamed as held (``Assumed``) and not bound or released yet."""
        self.proposer: dict[str, tuple[int, api.Pod]] = {}
        """Pod key to ``(shard, the Pod as sent)`` while the binder binds its proposal."""

    def entry(self, entry: p.Entry) -> None:
        """Append to the stream every shard reads."""
        self.log.append(entry)

    def gen(self, node: str) -> int:
        """The node's authoritative generation (-1: no such node)."""
        row = self.cluster.nodes.row_of.get(node)
        return -1 if row is None else int(self.cluster.nodes.generation[row])

    def trim(self) -> None:
        """Drop the stretch of the log every shard has read, once it is long enough."""
        low = min(self.cursor) - self.log_base
        if low > 4096 and low * 2 > len(self.log):
            del self.log[:low]
            self.log_base += low

    # ------------------------------------------------------------------ the binder's commits
    def committing(self, key: str, shard: int, sent: api.Pod) -> None:
        """The binder is about to bind ``key`` proposed by ``shard`` (``sent``: the Pod as
        the dispatcher sent it)."""
        self.proposer[key] = (shard, sent)

    def forget_proposal(self, key: str) -> None:
        """The bind of ``key`` failed before anything was streamed."""
        self.proposer.pop(key, None)

    def committed(self, key: str) -> int:
        """The commit of ``key`` is made: if its bind is not confirmed yet (a slow API
        server, or a gang member held at Permit), shards must count it all the same: it is
        streamed as held.  If its binding cycle already failed (PreBind or Bind, the cache
        forgot it before anything was streamed), the shard that proposed it must forget its
        assumed copy (a replica that still held it would drop the Pod when it is handed out
        again): that shard is returned, else -1."""
        rec = self.cluster.pods.get(key)
        if rec is None:
            shard, _ = self.proposer.pop(key, (-1, None))
            return shard
        if not rec.assumed or key in self.held_logged or not self.synced:
            return -1
        shard, sent = self.proposer.get(key, (-1, None))
        if sent is None:  # the coordinator's own cycle (auto routing)
            sent = p.strip(rec.pod.bound_to(""))
        self.held_logged.add(key)
        self.entry(p.Assumed(key, rec.node, self.gen(rec.node), shard, sent))
        return -1

    # ------------------------------------------------------------------ informer events
    def node_added(self, node: api.Node) -> None:
        if self.synced:
            self.log.append(p.NodeAdd(node, self.gen(node.name)))

    def node_updated(self, old: api.Node, new: api.Node) -> None:
        if self.synced:
            self.log.append(p.NodeUpdate(old, new, self.gen(new.name)))

    def node_deleted(self, node: api.Node) -> None:
        if self.synced:
            self.log.append(p.NodeDelete(node))

    def pod_added(self, pod: api.Pod) -> None:
        """A bound Pod appeared (not by a bind: :meth:`pod_bound`)."""
        if self.synced and pod.key in self.cluster.pods:
            self.log.append(p.PodAdd(p.strip(pod), self.gen(pod.node_name)))

    def pod_bound(self, old: api.Pod, new: api.Pod) -> None:
        """A pending Pod was bound (``Bound``, with the shard that proposed it, if any)."""
        key = new.key
        shard, sent = self.proposer.pop(key, (-1, None))
        if self.synced:
            self.held_logged.discard(key)
            node = new.node_name
            self.log.append(p.Bound(key, node, self.gen(node), shard, sent or p.strip(old)))

    def pod_updated(self, old: api.Pod, new: api.Pod) -> None:
        """A bound Pod changed."""
        if self.synced:
            self.log.append(p.PodUpdate(p.strip(old), p.strip(new)))

    def pod_deleted(self, pod: api.Pod) -> None:
        self.proposer.pop(pod.key, None)
        node = pod.node_name
        if self.synced:
            self.log.append(p.PodDelete(p.strip(pod), node, self.gen(node) if node else -1))

    def object_changed(self, obj: dict[str, Any], deleted: bool) -> None:
        if self.synced:
            self.log.append(p.ObjectEvent(obj, deleted))


class CacheTap:
    """Observer on the authoritative cache: streams the release of binder-held Pods
    (``Forgot``)."""

    def __init__(self, stream: CommitStream) -> None:
        self.stream = stream

    def pod_added(self, rec: PodRecord) -> None:
        del rec

    def pod_removed(self, rec: PodRecord) -> None:
        stream = self.stream
        if rec.pod.key in stream.held_logged:
            stream.held_logged.discard(rec.pod.key)
            gen = int(stream.cluster.nodes.generation[rec.row])
            stream.entry(p.Forgot(rec.pod.key, rec.node, gen))

    def node_changed(self, row: int, old: api.Node | None, new: api.Node | None) -> None:
        del row, old, new


def snapshot_entries(cluster: ClusterState) -> list[p.Entry]:
    """The authoritative state as commit-stream entries (a fresh shard's first message)."""
    entries: list[p.Entry] = [p.ObjectEvent(obj, False) for obj in cluster.objects.values()]
    table = cluster.nodes
    gens = {}
    for row in table.order().tolist():
        node = table.nodes[row]
        assert node is not None
        gens[node.name] = int(table.generation[row])
        entries.append(p.NodeAdd(node, gens[node.name]))
    for key, rec in cluster.pods.items():
        gen = gens.get(rec.node, -1)
        if rec.assumed:
            entries.append(p.Assumed(key, rec.node, gen, -1, p.strip(rec.pod.bound_to(""))))
        else:
            entries.append(p.PodAdd(p.strip(rec.pod), gen))
    entries.append(p.Generations(gens))
    return entries
