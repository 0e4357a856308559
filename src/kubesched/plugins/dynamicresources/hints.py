"""DynamicResources' queueing hints (upstream ``isSchedulableAfterClaimChange`` and
``isSchedulableAfterPodChange``; v1.37: claim deletions too and
``isSchedulableAfterTargetPodUpdate``), as a part of
:class:`~kubesched.plugins.dynamicresources.plugin.DynamicResources`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api import objects as api
from kubesched.api import resource as r
from kubesched.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from kubesched.plugins.dynamicresources.claims import DraObjects


class Hints:
    """The events DynamicResources registers and its hints."""

    objects: DraObjects
    _v137: bool
    """The release is v1.37 or newer: claim deletions hinted, the Pod's own update on
    TargetPod."""

    def pod_claims(self, pod: api.Pod) -> tuple[list[r.ResourceClaim], str]:
        """The Pod's claims, or why they are not all usable (the plugin provides it)."""
        raise NotImplementedError

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Upstream's events (queueing hints on): nodes, claims (v1.37: their deletions too),
        the Pod's generated claims (v1.37: the queued Pod's own update, TargetPod), classes
        and slices."""
        update = ActionType.ADD | ActionType.UPDATE
        claims = update | ActionType.DELETE if self._v137 else update
        own = Resource.TARGET_POD if self._v137 else Resource.POD
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.NODE,
                    ActionType.ADD
                    | ActionType.UPDATE_NODE_LABEL
                    | ActionType.UPDATE_NODE_ALLOCATABLE,
                )
            ),
            ClusterEventWithHint(ClusterEvent(Resource.RESOURCE_CLAIM, claims), self._claim_hint),
            ClusterEventWithHint(
                ClusterEvent(own, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                self._pod_hint,
            ),
            ClusterEventWithHint(ClusterEvent(Resource.DEVICE_CLASS, update)),
            ClusterEventWithHint(ClusterEvent(Resource.RESOURCE_SLICE, update)),
        ]

    def _claim_hint(self, pod: api.Pod, old: Any, new: Any) -> QueueingHint:
        """Upstream ``isSchedulableAfterClaimChange``: ``old`` the claim before the change
        (None for an add), ``new`` after it (None for a deletion, v1.37)."""
        original = self.objects.parse(old) if isinstance(old, Mapping) else None
        if not isinstance(new, Mapping):
            # v1.37: a claim deleted frees devices only if it was still allocated
            if original is not None and original.allocation is None:
                return QueueingHint.QUEUE_SKIP
            return QueueingHint.QUEUE
        modified = self.objects.parse(new)
        claims, problem = self.pod_claims(pod)
        if problem:
            return QueueingHint.QUEUE_SKIP
        if original is not None and original.allocation is not None and modified.allocation is None:
            return QueueingHint.QUEUE  # deallocated: devices freed
        if not any(c.uid == modified.uid for c in claims):
            return QueueingHint.QUEUE_SKIP
        if original is None:
            return QueueingHint.QUEUE
        same = _semantic(original.raw.get("status")) == _semantic(modified.raw.get("status"))
        return QueueingHint.QUEUE_SKIP if same else QueueingHint.QUEUE

    def _pod_hint(self, pod: api.Pod, old: Any, new: Any) -> QueueingHint:
        """Upstream ``isSchedulableAfterPodChange`` (v1.37 ``isSchedulableAfterTargetPodUpdate``:
        the event is the queued Pod's own, no UID to compare)."""
        del old
        if not isinstance(new, api.Pod) or (not self._v137 and new.uid != pod.uid):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE_SKIP if self.pod_claims(new)[1] else QueueingHint.QUEUE


def _semantic(value: Any) -> Any:
    """``value`` as upstream's ``apiequality.Semantic.DeepEqual`` compares a decoded status:
    null fields, empty lists and empty maps are as absent."""
    if isinstance(value, Mapping):
        out = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not None} or None
    if isinstance(value, list):
        return [_semantic(v) for v in value] or None
    return value
