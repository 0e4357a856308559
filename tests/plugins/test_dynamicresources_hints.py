"""DynamicResources' queueing hints (upstream ``isSchedulableAfterClaimChange`` and
``isSchedulableAfterPodChange``, v1.37's ``isSchedulableAfterTargetPodUpdate``) and its
registered events."""

from __future__ import annotations

import copy
from typing import Any

from kubesched.api.parse import parse_pod
from kubesched.config.featuregates import from_spec
from kubesched.framework.interface import ActionType, Handle, QueueingHint, Resource
from kubesched.plugins.dynamicresources import DynamicResources
from kubesched.state.cache import ClusterState
from tests.plugins._dra import DRIVER, claim, pod

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def plugin_with(*objects: dict[str, Any]) -> tuple[DynamicResources, ClusterState]:
    """The plugin at v1.34 (v1.37's registrations differ: the last test)."""
    cluster = ClusterState()
    plugin = DynamicResources(None, Handle(cluster, feature_gates=from_spec("1.34", None, "")))
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
    touched = copy.deepcopy(mine)
    touched["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]
    hear(plugin, cluster, touched)
    assert plugin._claim_hint(waiting, mine, touched) == SKIP  # status unchanged
    changed = allocated(touched)
    hear(plugin, cluster, changed)
    assert plugin._claim_hint(waiting, touched, changed) == QUEUE


def test_an_update_compares_the_claim_before_it_with_the_one_after_it() -> None:
    """The claim before the change is the queue's (upstream's oldObj), also for a claim the
    plugin knew before it heard any event; a driver's ``status.devices`` report is a status
    change too (upstream compares the whole status), an empty list none."""
    mine = allocated(claim("mine"))
    plugin, cluster = plugin_with()
    cluster.apply_object(mine)  # in the cluster from the start: no event heard
    waiting = parse_pod(pod("p", ("gpu", "resourceClaimName", "mine")))
    touched = copy.deepcopy(mine)
    touched["metadata"]["labels"] = {"x": "y"}
    touched["status"]["reservedFor"] = []
    hear(plugin, cluster, touched)
    assert plugin._claim_hint(waiting, mine, touched) == SKIP
    reported = copy.deepcopy(touched)
    reported["status"]["devices"] = [{"driver": DRIVER, "pool": "n1", "device": "gpu-0"}]
    hear(plugin, cluster, reported)
    assert plugin._claim_hint(waiting, touched, reported) == QUEUE


def test_another_claim_requeues_only_when_it_frees_devices() -> None:
    other = allocated(claim("other"))
    mine = claim("mine")
    plugin, cluster = plugin_with(mine, other)
    waiting = parse_pod(pod("p", ("gpu", "resourceClaimName", "mine")))
    touched = copy.deepcopy(other)
    touched["metadata"]["labels"] = {"x": "y"}
    hear(plugin, cluster, touched)
    assert plugin._claim_hint(waiting, other, touched) == SKIP
    freed = claim("other")
    hear(plugin, cluster, freed)
    assert plugin._claim_hint(waiting, touched, freed) == QUEUE


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
    claims = plugin.events_to_register()[1].event.action
    assert claims == ActionType.ADD | ActionType.UPDATE


def test_v137_hints_claim_deletions_and_the_queued_pods_own_update() -> None:
    """v1.37 registers claim deletions (Queue only for a claim still allocated) and the
    Pod's generated claims on TargetPod (no UID compared: the event is the Pod's own)."""
    cluster = ClusterState()
    plugin = DynamicResources(None, Handle(cluster, feature_gates=from_spec("1.37", None, "")))
    registered = plugin.events_to_register()
    assert registered[1].event.action == ActionType.ADD | ActionType.UPDATE | ActionType.DELETE
    assert registered[2].event.resource == Resource.TARGET_POD
    waiting = parse_pod(pod("p", ("gpu", "resourceClaimName", "mine")))
    assert plugin._claim_hint(waiting, claim("other"), None) == SKIP
    assert plugin._claim_hint(waiting, allocated(claim("other")), None) == QUEUE
    made = claim("p-gpu-abcde")
    made["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": "q", "uid": "uid-q", "controller": True}
    ]
    cluster.apply_object(made)
    plugin.on_object(made)
    renamed = parse_pod(pod("q", ("gpu", "resourceClaimTemplateName", "t"),
                            statuses=(("gpu", "p-gpu-abcde"),)))  # fmt: skip
    assert plugin._pod_hint(waiting, renamed, renamed) == QUEUE
