"""DynamicResources' queueing hints (upstream ``isSchedulableAfterClaimChange`` and
``isSchedulableAfterPodChange``) and its registered events."""

from __future__ import annotations

import copy
from typing import Any

from kubesched.api.parse import parse_pod
from kubesched.framework.interface import Handle, QueueingHint, Resource
from kubesched.plugins.dynamicresources import DynamicResources
from kubesched.state.cache import ClusterState
from tests.plugins._dra import DRIVER, claim, pod

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def plugin_with(*objects: dict[str, Any]) -> tuple[DynamicResources, ClusterState]:
    cluster = ClusterState()
    plugin = DynamicResources(None, Handle(cluster))
    for obj in objects:
        cluster.apply_object(obj)
        plugin.on_object(obj)
    return plugin, cluster


def hear(plugin: DynamicResources, cluster: ClusterState, obj: dict[str, Any]) -> None:
    cluster.apply_object(obj)
    plugin.on_object(obj)


def allocated(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["status"] = {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]}}}  # fmt: skip
    return out


def test_the_pods_own_claim_created_or_changed_requeues_it() -> None:
    mine = claim("mine")
    plugin, cluster = plugin_with()
    waiting = parse_pod(pod("p", ("gpu", "resourceClaimName", "mine")))
    hear(plugin, cluster, mine)
    assert plugin._claim_hint(waiting, None, mine) == QUEUE  # created
    hear(plugin, cluster, mine)
    assert plugin._claim_hint(waiting, None, mine) == SKIP  # status unchanged
    changed = allocated(mine)
    hear(plugin, cluster, changed)
    assert plugin._claim_hint(waiting, None, changed) == QUEUE


def test_another_claim_requeues_only_when_it_frees_devices() -> None:
    other = allocated(claim("other"))
    mine = claim("mine")
    plugin, cluster = plugin_with(mine, other)
    waiting = parse_pod(pod("p", ("gpu", "resourceClaimName", "mine")))
    touched = copy.deepcopy(other)
    touched["metadata"]["labels"] = {"x": "y"}
    hear(plugin, cluster, touched)
    assert plugin._claim_hint(waiting, None, touched) == SKIP
    freed = claim("other")
    hear(plugin, cluster, freed)
    assert plugin._claim_hint(waiting, None, freed) == QUEUE


def test_the_generated_claim_named_in_the_pod_status_requeues_it() -> None:
    made = claim("p-gpu-abcde")
    made["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "uid-p", "controller": True}
    ]
    plugin, _ = plugin_with(made)
    before = parse_pod(pod("p", ("gpu", "resourceClaimTemplateName", "t")))
    after = parse_pod(pod("p", ("gpu", "resourceClaimTemplateName", "t"),
                          statuses=(("gpu", "p-gpu-abcde"),)))  # fmt: skip
    assert plugin._pod_hint(before, before, after) == QUEUE
    assert plugin._pod_hint(before, before, before) == SKIP
    other = parse_pod(pod("q", ("gpu", "resourceClaimTemplateName", "t")))
    assert plugin._pod_hint(before, other, other) == SKIP


def test_registered_events_are_upstreams() -> None:
    plugin, _ = plugin_with()
    resources = [e.event.resource for e in plugin.events_to_register()]
    assert resources == [Resource.NODE, Resource.RESOURCE_CLAIM, Resource.POD,
                         Resource.DEVICE_CLASS, Resource.RESOURCE_SLICE]  # fmt: skip
