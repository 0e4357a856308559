"""DynamicResources' queueing hints (upstream ``isSchedulableAfterClaimChange`` and
``isSchedulableAfterPodChange``), as a part of
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
    _before: dict[str, r.ResourceClaim | None]
    """Per claim key, the version heard before the last event (None for a new claim)."""

    def pod_claims(self, pod: api.Pod) -> tuple[list[r.ResourceClaim], str]:
        """The Pod's claims, or why they are not all usable (the plugin provides it)."""
        raise NotImplementedError

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Upstream's events (queueing hints on): nodes, claims, the Pod's generated claims,
        classes and slices."""
        update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.NODE,
                    ActionType.ADD
                    | ActionType.UPDATE_NODE_LABEL
                    | ActionType.UPDATE_NODE_ALLOCATABLE,
                )
            ),
            ClusterEventWithHint(ClusterEvent(Resource.RESOURCE_CLAIM, update), self._claim_hint),
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                self._pod_hint,
            ),
            ClusterEventWithHint(ClusterEvent(Resource.DEVICE_CLASS, update)),
            ClusterEventWithHint(ClusterEvent(Resource.RESOURCE_SLICE, update)),
        ]

    def _claim_hint(self, pod: api.Pod, old: Any, new: Any) -> QueueingHint:
        """Upstream ``isSchedulableAfterClaimChange``."""
        del old
        if not isinstance(new, Mapping):
            return QueueingHint.QUEUE
        modified = self.objects.parse(new)
        claims, problem = self.pod_claims(pod)
        if problem:
            return QueueingHint.QUEUE_SKIP
        before = self._before.get(modified.key)
        if before is not None and before.allocation is not None and modified.allocation is None:
            return QueueingHint.QUEUE  # deallocated: devices freed
        if not any(c.uid == modified.uid for c in claims):
            return QueueingHint.QUEUE_SKIP
        if before is None:
            return QueueingHint.QUEUE
        same = (before.allocation, before.reserved_for) == (
            modified.allocation,
            modified.reserved_for,
        )
        return QueueingHint.QUEUE_SKIP if same else QueueingHint.QUEUE

    def _pod_hint(self, pod: api.Pod, old: Any, new: Any) -> QueueingHint:
        """Upstream ``isSchedulableAfterPodChange``."""
        del old
        if not isinstance(new, api.Pod) or new.uid != pod.uid:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE_SKIP if self.pod_claims(new)[1] else QueueingHint.QUEUE
