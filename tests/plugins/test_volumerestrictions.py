"""VolumeRestrictions, the cases of upstream's ``volume_restrictions_test.go``: in-tree disk
conflicts per kind, ReadWriteOncePod claims in use, a missing claim, and the PreFilter
extensions preemption uses."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import pods as podparse
from kubesched.api.parse import parse_objects
from kubesched.explainer.cycle import build_cluster
from kubesched.framework.interface import Code, CycleState, Handle
from kubesched.plugins import volumerestrictions as vr
from tests.plugins._storage import claim_volume, disk_volume, explain, node, pod, pv, pvc, verdicts

DISK = vr.ERR_REASON_DISK_CONFLICT
RWOP = vr.ERR_REASON_RWOP_CONFLICT


@pytest.mark.parametrize(
    ("mine", "theirs", "conflict"),
    [
        (("gcePersistentDisk", {"pdName": "foo"}), ("gcePersistentDisk", {"pdName": "foo"}), True),
        (("gcePersistentDisk", {"pdName": "foo"}), ("gcePersistentDisk", {"pdName": "bar"}), False),
        (
            ("gcePersistentDisk", {"pdName": "foo", "readOnly": True}),
            ("gcePersistentDisk", {"pdName": "foo", "readOnly": True}),
            False,
        ),
        (
            ("awsElasticBlockStore", {"volumeID": "foo", "readOnly": True}),
            ("awsElasticBlockStore", {"volumeID": "foo", "readOnly": True}),
            True,
        ),
        (
            ("awsElasticBlockStore", {"volumeID": "foo"}),
            ("awsElasticBlockStore", {"volumeID": "bar"}),
            False,
        ),
        (
            ("rbd", {"monitors": ["a", "b"], "pool": "foo", "image": "bar"}),
            ("rbd", {"monitors": ["c", "b"], "pool": "foo", "image": "bar"}),
            True,
        ),
        (
            ("rbd", {"monitors": ["a", "b"], "pool": "foo", "image": "bar"}),
            ("rbd", {"monitors": ["c", "d"], "pool": "foo", "image": "bar"}),
            False,
        ),
        (
            (
                "iscsi",
                {
                    "targetPortal": "127.0.0.1:3260",
                    "iqn": "iqn.2016-12.server:storage.target01",
                    "lun": 0,
                },
            ),
            (
                "iscsi",
                {
                    "targetPortal": "127.0.0.1:3260",
                    "iqn": "iqn.2016-12.server:storage.target01",
                    "lun": 0,
                },
            ),
            True,
        ),
        (
            ("iscsi", {"targetPortal": "t", "iqn": "iqn.a", "lun": 0, "readOnly": True}),
            ("iscsi", {"targetPortal": "t", "iqn": "iqn.a", "lun": 0, "readOnly": True}),
            False,
        ),
    ],
)
def test_disk_conflicts(
    mine: tuple[str, dict[str, Any]], theirs: tuple[str, dict[str, Any]], conflict: bool
) -> None:
    items = [
        node("n1"),
        node("n2"),
        pod("running", disk_volume(theirs[0], **theirs[1]), node_name="n1"),
    ]
    answer = explain(items, pod("new", disk_volume(mine[0], **mine[1])))
    got = verdicts(answer)
    assert got["n2"] == (None, [])
    assert got["n1"] == ((vr.NAME, [DISK]) if conflict else (None, []))


def test_rwop_claim_in_use_rejects_every_node() -> None:
    items = [
        node("n1"),
        node("n2"),
        pvc("claim", modes=("ReadWriteOncePod",), volume="pv1"),
        pv("pv1", claim="claim", modes=("ReadWriteOncePod",)),
        pod("holder", claim_volume("claim"), node_name="n1"),
    ]
    got = verdicts(explain(items, pod("new", claim_volume("claim"))))
    assert got == {"n1": (vr.NAME, [RWOP]), "n2": (vr.NAME, [RWOP])}


def test_rwop_claim_not_in_use_and_rwo_claim_in_use_pass() -> None:
    items = [
        node("n1"),
        pvc("rwop", modes=("ReadWriteOncePod",), volume="pv1"),
        pvc("rwo", volume="pv2"),
        pv("pv1", claim="rwop"),
        pv("pv2", claim="rwo"),
        pod("holder", claim_volume("rwo"), node_name="n1"),
    ]
    answer = explain(items, pod("new", claim_volume("rwop"), claim_volume("rwo")))
    assert verdicts(answer)["n1"] == (None, [])


def test_missing_claim_is_unresolvable() -> None:
    answer = explain([node("n1")], pod("new", claim_volume("gone")))
    assert verdicts(answer)["n1"] == (vr.NAME, ['persistentvolumeclaim "gone" not found'])


def test_pre_filter_skips_pods_without_checked_volumes() -> None:
    cluster, _ = build_cluster([node("n1")])
    plugin = vr.new(None, Handle(cluster))
    state = CycleState()
    _, status = plugin.pre_filter(state, podparse.parse_pod(pod("p")), cluster)
    assert status.code == Code.SKIP


def test_add_and_remove_pod_move_the_rwop_count() -> None:
    """Upstream ``AddPod`` / ``RemovePod``: preemption removing the claim's holder lifts
    the conflict, adding it back restores it."""
    objs = parse_objects(
        [
            node("n1"),
            pvc("claim", modes=("ReadWriteOncePod",)),
            pod("holder", claim_volume("claim"), node_name="n1"),
        ]
    )
    cluster, _ = build_cluster(objs)
    plugin = vr.new(None, Handle(cluster))
    me = podparse.parse_pod(pod("new", claim_volume("claim")))
    holder = objs.pods[0]
    state = CycleState()
    _, status = plugin.pre_filter(state, me, cluster)
    assert status.code == Code.SUCCESS
    import numpy as np

    rows = np.asarray([0], dtype=np.int64)
    verdict = plugin.filter(state, me, cluster, rows)
    assert verdict.table[int(verdict.codes[0])].reasons == (RWOP,)
    plugin.pre_filter_remove_pod(state, me, holder, 0, cluster)
    assert int(plugin.filter(state, me, cluster, rows).codes[0]) == 0
    plugin.pre_filter_add_pod(state, me, holder, 0, cluster)
    assert int(plugin.filter(state, me, cluster, rows).codes[0]) != 0


def test_disk_conflict_lifted_when_preemption_removes_the_pod() -> None:
    objs = parse_objects(
        [node("n1"), pod("holder", disk_volume("gcePersistentDisk", pdName="pd"), node_name="n1")]
    )
    cluster, _ = build_cluster(objs)
    plugin = vr.new(None, Handle(cluster))
    me = podparse.parse_pod(pod("new", disk_volume("gcePersistentDisk", pdName="pd")))
    state = CycleState()
    plugin.pre_filter(state, me, cluster)
    import numpy as np

    rows = np.asarray([0], dtype=np.int64)
    assert int(plugin.filter(state, me, cluster, rows).codes[0]) != 0
    plugin.pre_filter_remove_pod(state, me, objs.pods[0], 0, cluster)
    assert int(plugin.filter(state, me, cluster, rows).codes[0]) == 0


@pytest.mark.parametrize(("version", "pods"), [("1.36", "Pod"), ("1.37", "AssignedPod")])
def test_pod_delete_registered_on_assigned_pods_from_v137(version: str, pods: str) -> None:
    """Upstream v1.37 registers ``AssignedPod/Delete`` (a pending Pod's delete is not heard;
    found by oracle/diff.py --verb hints)."""
    from kubesched.config.featuregates import FeatureGates
    from kubesched.state.cache import ClusterState

    handle = Handle(ClusterState(), feature_gates=FeatureGates(version))
    first = vr.new(None, handle).events_to_register()[0].event
    assert (first.resource, first.action) == (pods, vr.ActionType.DELETE)
