"""NodeResourcesFit's queueing hints: upstream's (a bound Pod deleted or shrunk; a node
added or grown so the Pod fits it) and, with ``retryGovernance`` (beyond upstream, off by
default), the governed ones that also ask whether the changed node has room for the Pod now,
or would once its lower-priority Pods were preempted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api import objects as api
from kubesched.devices import extended
from kubesched.framework import interface as fw
from kubesched.kernels import resources as res
from kubesched.plugins.noderesources_fit.kernels import node_fits


class GovernedHints:
    """The ``retryGovernance`` hints (mixed into the plugin: ``handle`` and ``_ignored``)."""

    handle: fw.Handle

    def _ignored(self, name: str) -> bool:
        raise NotImplementedError

    def governed_pod_hint(self, pod: api.Pod, old: Any, new: Any) -> fw.QueueingHint:
        """Retry governance (beyond upstream): :func:`pod_hint`, and only when the node the
        deleted or shrunk Pod was on now has room for ``pod``.  The cache already holds the
        change, so several deletions on one node add up; the 5-minute flush still applies."""
        hint = pod_hint(pod, old, new)
        changed = new if new is not None else old
        if hint == fw.QueueingHint.QUEUE_SKIP or changed is None or changed.uid == pod.uid:
            return hint
        return self._fits_now(pod, changed.node_name)

    def governed_node_hint(self, pod: api.Pod, old: Any, new: Any) -> fw.QueueingHint:
        """Retry governance: :func:`node_hint` (the new allocatable is enough, and grew), and
        the node has room for ``pod`` now."""
        hint = node_hint(pod, old, new)
        if hint == fw.QueueingHint.QUEUE_SKIP:
            return hint
        return self._fits_now(pod, new.name)

    def _fits_now(self, pod: api.Pod, node_name: str) -> fw.QueueingHint:
        """QUEUE when ``pod``'s checked requests fit ``node_name`` now, or would fit once
        the node's lower-priority Pods were preempted (when ``pod`` may preempt), or
        the cache does not know the node (never strand a Pod on a doubt); else QUEUE_SKIP."""
        nodes = self.handle.cluster.nodes
        row = nodes.row_of.get(node_name)
        if row is None:
            return fw.QueueingHint.QUEUE
        amounts = {
            name: amount
            for name, amount in res.counted_requests(pod.requests).items()
            if amount > 0 and not self._ignored(name)
        }
        if res.fits_now(nodes, row, amounts) or self._fits_by_preempting(pod, row, amounts):
            return fw.QueueingHint.QUEUE
        return fw.QueueingHint.QUEUE_SKIP

    def _fits_by_preempting(self, pod: api.Pod, row: int, amounts: dict[str, int]) -> bool:
        """Whether ``pod`` may preempt and would fit node ``row`` with every lower-priority
        Pod there gone (what DefaultPreemption could free)."""
        if pod.preemption_policy == "Never":
            return False
        cluster = self.handle.cluster
        nodes = cluster.nodes
        freed: dict[str, int] = {}
        slots = 0
        for key in cluster.pods_on_node.get(nodes.names[row], ()):
            other = cluster.pods[key].pod
            if other.priority < pod.priority:
                slots += 1
                for name, amount in res.counted_requests(other.requests).items():
                    freed[name] = freed.get(name, 0) + amount
        if not slots or int(nodes.pod_count[row]) - slots >= int(nodes.allowed_pods[row]):
            return False
        for name, amount in amounts.items():
            allocatable, requested = nodes.resource_at(name, row)
            if allocatable - requested + freed.get(name, 0) < amount:
                return False
        return True


def pod_hint(pod: api.Pod, old: Any, new: Any) -> fw.QueueingHint:
    """Upstream ``isSchedulableAfterPodEvent``: a bound Pod deleted (or an unbound one
    nominated to a node: its room was held for it), or one that shrank."""
    if new is None:
        if old is None or (not old.node_name and not old.nominated_node_name):
            return fw.QueueingHint.QUEUE_SKIP
        return fw.QueueingHint.QUEUE
    if old is None:
        return fw.QueueingHint.QUEUE
    if new.uid == pod.uid:
        return fw.QueueingHint.QUEUE
    if not new.node_name:
        return fw.QueueingHint.QUEUE_SKIP
    before = res.counted_requests(old.requests)
    after = res.counted_requests(new.requests)
    for name, amount in res.counted_requests(pod.requests).items():
        if amount != 0 and before.get(name, 0) > after.get(name, 0):
            return fw.QueueingHint.QUEUE
    return fw.QueueingHint.QUEUE_SKIP


def node_hint(pod: api.Pod, old: Any, new: Any) -> fw.QueueingHint:
    """Upstream ``isSchedulableAfterNodeChange``: the Pod fits the new node, and it grew."""
    if new is None or not node_fits(pod.requests, new.allocatable):
        return fw.QueueingHint.QUEUE_SKIP
    if old is None:
        return fw.QueueingHint.QUEUE
    if new.allocatable.get(api.PODS, 0) > old.allocatable.get(api.PODS, 0):
        return fw.QueueingHint.QUEUE
    for name, amount in res.counted_requests(pod.requests).items():
        if amount > 0 and new.allocatable.get(name, 0) > old.allocatable.get(name, 0):
            return fw.QueueingHint.QUEUE
    return fw.QueueingHint.QUEUE_SKIP


def on_deferred_node(hint: fw.HintFn) -> fw.HintFn:
    """v1.37 under InPlacePodVerticalScalingSchedulerPreemption: ``hint``, but QueueSkip
    for a resize-deferred Pod when the changed Node, or the node of the changed bound Pod,
    is not the Pod's own (upstream's Fit: such a Pod is bound to its node, so another
    node's change cannot help it)."""

    def hinted(pod: api.Pod, old: Any, new: Any) -> fw.QueueingHint:
        if pod.resize_deferred:
            changed = new if new is not None else old
            if isinstance(changed, api.Node) and changed.name != pod.node_name:
                return fw.QueueingHint.QUEUE_SKIP
            if isinstance(changed, api.Pod) and changed.node_name != pod.node_name:
                return fw.QueueingHint.QUEUE_SKIP
        return hint(pod, old, new)

    return hinted


def device_class_hint(pod: api.Pod, old: Any, new: Any) -> fw.QueueingHint:
    """Upstream ``isSchedulableAfterDeviceClassEvent`` (DRAExtendedResource): a class added
    whose implicit name the Pod requests, or a class whose ``extendedResourceName`` changed
    to one the Pod requests."""
    if not isinstance(new, Mapping):
        return fw.QueueingHint.QUEUE
    name = _extended_name(new)
    if isinstance(old, Mapping):
        if (_extended_name(old) or "") == (name or ""):
            return fw.QueueingHint.QUEUE_SKIP
    elif extended.DEVICE_CLASS_PREFIX + str((new.get("metadata") or {}).get("name")) in (
        pod.requests
    ):
        return fw.QueueingHint.QUEUE
    if name is not None and name in pod.requests:
        return fw.QueueingHint.QUEUE
    return fw.QueueingHint.QUEUE_SKIP


def _extended_name(obj: Mapping[str, Any]) -> str | None:
    value = (obj.get("spec") or {}).get("extendedResourceName")
    return str(value) if value is not None else None
