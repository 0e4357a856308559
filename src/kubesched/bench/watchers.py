"""Several watchers of the benchmark's API server as one (:class:`Watchers`)."""

from __future__ import annotations

from typing import Any

from kubesched.api import objects as api
from kubesched.bench.api import BulkBindWatcher, Watcher


class Watchers:
    """Several watchers as one, told in order: the scheduler first, then the controllers
    (upstream's informers are independent; the scheduler hearing a Pod before its claim
    exists is the common interleaving).  ``on_pods_bound`` goes to a watcher that has it."""

    def __init__(self, *watchers: Watcher) -> None:
        self.watchers = watchers

    def on_node_add(self, node: api.Node) -> None:
        """Tell every watcher."""
        for w in self.watchers:
            w.on_node_add(node)

    def on_node_delete(self, node: api.Node) -> None:
        """Tell every watcher."""
        for w in self.watchers:
            w.on_node_delete(node)

    def on_pod_add(self, pod: api.Pod) -> None:
        """Tell every watcher."""
        for w in self.watchers:
            w.on_pod_add(pod)

    def on_pod_update(self, old: api.Pod, new: api.Pod) -> None:
        """Tell every watcher."""
        for w in self.watchers:
            w.on_pod_update(old, new)

    def on_pods_bound(self, pairs: list[tuple[api.Pod, api.Pod]]) -> None:
        """Many binds: in one call to a watcher that takes them so, else one by one."""
        for w in self.watchers:
            if isinstance(w, BulkBindWatcher):
                w.on_pods_bound(pairs)
            else:
                for old, new in pairs:
                    w.on_pod_update(old, new)

    def on_pod_delete(self, pod: api.Pod) -> None:
        """Tell every watcher."""
        for w in self.watchers:
            w.on_pod_delete(pod)

    def on_object(self, obj: dict[str, Any], *, deleted: bool = False) -> None:
        """Tell every watcher."""
        for w in self.watchers:
            w.on_object(obj, deleted=deleted)
