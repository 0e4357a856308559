"""The coordinator's informer handlers: every event it sees goes into the commit stream.

:class:`StreamingHandlers` is the part of
:class:`~kubesched.parallel.coordinator.ParallelScheduler` that turns what the authoritative
cache hears (node and Pod events, objects, binds -- the binder's, and those of the cycles
auto routing runs in the coordinator) into commit-stream entries (none while the shards
are dormant, ``synced`` False: they will get a snapshot)
(:mod:`~kubesched.parallel.protocol`), keeps the dispatcher's gang index current, and
records the binder's holds (``Assumed``) and their release (``Forgot``, :class:`CacheTap`).
:func:`snapshot_entries` is the whole authoritative state in the same vocabulary, a fresh
shard's first message.
"""

from __future__ import annotations

from typing import Any

from kubesched.api import objects as api
from kubesched.parallel import protocol as p
from kubesched.parallel.binder import Binder
from kubesched.parallel.dispatcher import Dispatcher
from kubesched.scheduler import Scheduler
from kubesched.state.cache import ClusterState, PodRecord


class CacheTap:
    """Observer on the authoritative cache: streams the release of binder-held Pods
    (``Forgot``)."""

    def __init__(self, hub: StreamingHandlers) -> None:
        self.hub = hub

    def pod_added(self, rec: PodRecord) -> None:
        del rec

    def pod_removed(self, rec: PodRecord) -> None:
        hub = self.hub
        if rec.pod.key in hub.held_logged:
            hub.held_logged.discard(rec.pod.key)
            gen = int(hub.cluster.nodes.generation[rec.row])
            hub.log_entry(p.Forgot(rec.pod.key, rec.node, gen))

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


class StreamingHandlers(Scheduler):
    """Informer handlers that stream (see the module docstring); the coordinator sets the
    attributes.  The Pod handlers, called for every Pod, call the Scheduler's directly
    rather than through ``super()`` (the MRO's next class; a ``super`` object per call)."""

    log: list[p.Entry]
    held_logged: set[str]
    dispatcher: Dispatcher
    binder: Binder
    _proposer: dict[str, tuple[int, api.Pod]]
    _updating: bool
    synced: bool
    """False while the shards are dormant (auto routing): nothing is streamed."""

    def log_entry(self, entry: p.Entry) -> None:
        """Append to the commit stream every shard reads."""
        self.log.append(entry)

    def _gen(self, node: str) -> int:
        row = self.cluster.nodes.row_of.get(node)
        return -1 if row is None else int(self.cluster.nodes.generation[row])

    def committing(self, key: str, shard: int, sent: api.Pod) -> None:
        """The binder is about to bind ``key`` proposed by ``shard`` (``sent``: the Pod as
        the dispatcher sent it)."""
        self._proposer[key] = (shard, sent)

    def forget_proposal(self, key: str) -> None:
        """The bind of ``key`` failed before anything was streamed (the binder tells its
        proposer to forget its assumed copy)."""
        self._proposer.pop(key, None)

    def committed(self, key: str) -> None:
        """The binder finished committing ``key``: if its bind is not confirmed yet (a slow
        API server, or a gang member held at Permit), shards must count it all the same.
        If its binding cycle already failed (PreBind or Bind, the cache forgot it before
        anything was streamed), the proposer must forget its assumed copy: a replica that
        still held it would drop the Pod when it is handed out again."""
        rec = self.cluster.pods.get(key)
        if rec is None:
            shard, _ = self._proposer.pop(key, (-1, None))
            if shard >= 0:
                self.binder.refused[shard].append((key, "bind_failed"))
            return
        if not rec.assumed or key in self.held_logged or not self.synced:
            return
        shard, sent = self._proposer.get(key, (-1, None))
        if sent is None:  # the coordinator's own cycle (auto routing)
            sent = p.strip(rec.pod.bound_to(""))
        self.held_logged.add(key)
        self.log_entry(p.Assumed(key, rec.node, self._gen(rec.node), shard, sent))

    # ------------------------------------------------------------------ informer events
    def on_node_add(self, node: api.Node) -> None:
        super().on_node_add(node)
        if self.synced:
            self.log_entry(p.NodeAdd(node, self._gen(node.name)))

    def on_node_update(self, old: api.Node, new: api.Node) -> None:
        super().on_node_update(old, new)
        if self.synced:
            self.log_entry(p.NodeUpdate(old, new, self._gen(new.name)))

    def on_node_delete(self, node: api.Node) -> None:
        super().on_node_delete(node)
        self.binder.fast.forget()  # rows are recycled
        if self.synced:
            self.log_entry(p.NodeDelete(node))

    def on_pod_add(self, pod: api.Pod) -> None:
        Scheduler.on_pod_add(self, pod)
        if self._updating:
            return  # a bind: on_pod_update streams it
        if not pod.node_name:
            if p.GROUP_LABEL in pod.labels:
                self.dispatcher.pending_added(pod)
        elif self.synced and pod.key in self.cluster.pods:
            self.log_entry(p.PodAdd(p.strip(pod), self._gen(pod.node_name)))

    def on_pod_update(self, old: api.Pod, new: api.Pod) -> None:
        self._updating = True
        try:
            Scheduler.on_pod_update(self, old, new)
        finally:
            self._updating = False
        if new.node_name and not old.node_name:
            if p.GROUP_LABEL in old.labels:
                self.dispatcher.pending_gone(old)
            key = new.key
            shard, sent = self._proposer.pop(key, (-1, None))
            if self.synced:
                self.held_logged.discard(key)
                node = new.node_name
                self.log.append(p.Bound(key, node, self._gen(node), shard, sent or p.strip(old)))
        elif new.node_name:
            if self.synced:
                self.log_entry(p.PodUpdate(p.strip(old), p.strip(new)))
        else:
            self.dispatcher.pending_gone(old)
            self.dispatcher.pending_added(new)

    def on_pods_bound(self, pairs: list[tuple[api.Pod, api.Pod]]) -> None:
        """Binds the API server made in one batch (``SimApiServer.bind_many``): each as
        :meth:`on_pod_update` would handle it; the binder's bulk path did not assume them,
        so the cache counts them here."""
        for old, new in pairs:
            self.on_pod_update(old, new)

    def on_pod_delete(self, pod: api.Pod) -> None:
        rec = self.dispatcher.close(pod.key)
        if rec is not None:
            self.queue.done(rec.qp.pod)
        super().on_pod_delete(pod)
        self.dispatcher.pending_gone(pod)
        self.binder.forget_victim(pod.key)
        self._proposer.pop(pod.key, None)
        node = pod.node_name
        if self.synced:
            self.log_entry(p.PodDelete(p.strip(pod), node, self._gen(node) if node else -1))

    def on_object(self, obj: dict[str, Any], *, deleted: bool = False) -> None:
        super().on_object(obj, deleted=deleted)
        if self.synced:
            self.log_entry(p.ObjectEvent(obj, deleted))
