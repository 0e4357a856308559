"""NodeVolumeLimits, the cases of upstream's ``csi_test.go``: CSINode limits per driver,
volumes shared with the node's Pods counted once, in-tree volumes counted as their migrated
CSI driver, unbound claims counted by their class's provisioner, missing claims."""

from __future__ import annotations

import numpy as np

import kubesched
from kubesched.api.parse import parse_node, parse_pod
from kubesched.framework import interface as fw
from kubesched.plugins import nodevolumelimits as nvl
from kubesched.state.cache import ClusterState
from kubesched.testing import FakeApi
from tests.plugins._storage import (
    claim_volume,
    csinode,
    disk_volume,
    explain,
    node,
    pod,
    pv,
    pvc,
    storage_class,
    verdicts,
)

EBS = "ebs.csi.aws.com"
EXCEEDED = nvl.ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED


def bound(name: str, driver: str = EBS, handle: str = "") -> list[dict]:
    """A claim bound to a CSI PV of ``driver``."""
    return [
        pvc(name, volume=f"pv-{name}"),
        pv(f"pv-{name}", claim=name, csi=(driver, handle or f"h-{name}")),
    ]


def test_limit_reached_by_another_pod() -> None:
    items = [
        node("n1"),
        node("n2"),
        csinode("n1", ebs_csi_aws_com=1),
        csinode("n2", ebs_csi_aws_com=2),
        *bound("a"),
        *bound("b"),
        pod("running", claim_volume("a"), node_name="n1"),
        pod("running2", claim_volume("a"), node_name="n2"),
    ]
    got = verdicts(explain(items, pod("new", claim_volume("b"))))
    assert got == {"n1": (nvl.NAME, [EXCEEDED]), "n2": (None, [])}


def test_shared_volume_is_counted_once() -> None:
    items = [
        node("n1"),
        csinode("n1", ebs_csi_aws_com=1),
        *bound("a"),
        pod("running", claim_volume("a"), node_name="n1"),
    ]
    assert verdicts(explain(items, pod("new", claim_volume("a"))))["n1"] == (None, [])


def test_other_driver_and_no_limit_and_no_csinode_pass() -> None:
    items = [
        node("n1"),
        node("n2"),
        node("n3"),
        csinode("n1", ebs_csi_aws_com=1),
        csinode("n2", ebs_csi_aws_com=None),
        *bound("a", driver="other.csi"),
        *bound("b"),
        *bound("c"),
        pod("r1", claim_volume("a"), node_name="n1"),
        pod("r2", claim_volume("c"), node_name="n2"),
        pod("r3", claim_volume("c"), node_name="n3"),
    ]
    got = verdicts(explain(items, pod("new", claim_volume("b"))))
    assert got == {"n1": (None, []), "n2": (None, []), "n3": (None, [])}


def test_inline_in_tree_volume_counts_as_its_csi_driver() -> None:
    items = [
        node("n1"),
        csinode("n1", ebs_csi_aws_com=1),
        pod(
            "r1",
            disk_volume("awsElasticBlockStore", volumeID="aws://us-east-1a/vol-1"),
            node_name="n1",
        ),
    ]
    got = verdicts(
        explain(items, pod("new", disk_volume("awsElasticBlockStore", volumeID="vol-2")))
    )
    assert got["n1"] == (nvl.NAME, [EXCEEDED])
    # the same disk (the handle of aws://zone/vol-1 is vol-1) is already attached
    same = pod("new", disk_volume("awsElasticBlockStore", volumeID="vol-1"))
    assert verdicts(explain(items, same))["n1"][1] != [EXCEEDED]


def test_in_tree_pv_counts_as_its_csi_driver() -> None:
    items = [
        node("n1"),
        csinode("n1", ebs_csi_aws_com=1),
        *bound("a"),
        pvc("b", volume="pv-b"),
        pv("pv-b", claim="b", csi=None, awsElasticBlockStore={"volumeID": "vol-b"}),
        pod("r1", claim_volume("a"), node_name="n1"),
    ]
    assert verdicts(explain(items, pod("new", claim_volume("b"))))["n1"] == (nvl.NAME, [EXCEEDED])


def test_unbound_claim_counts_by_its_class_provisioner() -> None:
    items = [
        node("n1"),
        csinode("n1", ebs_csi_aws_com=1),
        storage_class("fast"),
        *bound("a"),
        pvc("b", klass="fast"),
        pod("r1", claim_volume("a"), node_name="n1"),
    ]
    assert verdicts(explain(items, pod("new", claim_volume("b"))))["n1"] == (nvl.NAME, [EXCEEDED])


def test_a_changed_volume_of_a_running_pod_is_counted_again() -> None:
    """The Pods already on a node have their volumes remembered between cycles; a change of
    a storage object (here the running Pod's PV moving to another driver) forgets them."""
    cluster = ClusterState()
    cluster.add_node(parse_node(node("n1")))
    for obj in [csinode("n1", ebs_csi_aws_com=1), *bound("a"), *bound("b")]:
        cluster.apply_object(obj)
    cluster.add_pod(parse_pod(pod("running", claim_volume("a"), node_name="n1")))
    plugin = nvl.NodeVolumeLimits(None, fw.Handle(cluster, FakeApi(cluster)))
    new = parse_pod(pod("new", claim_volume("b")))
    rows = np.asarray([cluster.nodes.row_of["n1"]], dtype=np.int64)

    def over_limit() -> bool:
        state = fw.CycleState()
        plugin.pre_filter(state, new, cluster)
        return bool(plugin.filter(state, new, cluster, rows).codes[0])

    assert over_limit() and over_limit()
    cluster.apply_object(pv("pv-a", claim="a", csi=("other.csi.example.com", "h-a")))
    assert not over_limit()


def attachment(name: str, node_name: str, pv_name: str | None, attacher: str = EBS) -> dict:
    source = {} if pv_name is None else {"persistentVolumeName": pv_name}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": name},
        "spec": {"attacher": attacher, "nodeName": node_name, "source": source},
    }


def test_volume_attachments_count_without_their_pods() -> None:
    """Upstream ``getNodeVolumeAttachmentInfo``: a VolumeAttachment of a CSI PV counts on its
    node though no Pod there uses the volume (n1); one without a PV name (n2), of a missing PV
    (n3) or of an in-tree PV (n4) does not; one of a volume the node's Pods use counts once
    (n5)."""
    items = [
        *(node(f"n{i}") for i in range(1, 6)),
        *(csinode(f"n{i}", ebs_csi_aws_com=1) for i in range(1, 6)),
        *bound("a"),
        *bound("b"),
        pvc("c", volume="pv-c"),
        pv("pv-c", claim="c", awsElasticBlockStore={"volumeID": "vol-c"}),
        attachment("va1", "n1", "pv-a"),
        attachment("va2", "n2", None),
        attachment("va3", "n3", "pv-gone"),
        attachment("va4", "n4", "pv-c"),
        attachment("va5", "n5", "pv-a"),
        pod("running", claim_volume("a"), node_name="n5"),
    ]
    got = verdicts(explain(items, pod("new", claim_volume("b"))))
    assert got == {
        "n1": (nvl.NAME, [EXCEEDED]),
        "n2": (None, []),
        "n3": (None, []),
        "n4": (None, []),
        "n5": (nvl.NAME, [EXCEEDED]),
    }


def test_attached_volume_the_new_pod_uses_counts_twice() -> None:
    """Upstream keeps the new Pod's volume new when only a VolumeAttachment holds it."""
    items = [
        node("n1"),
        csinode("n1", ebs_csi_aws_com=1),
        *bound("a"),
        attachment("va1", "n1", "pv-a"),
    ]
    assert verdicts(explain(items, pod("new", claim_volume("a"))))["n1"] == (nvl.NAME, [EXCEEDED])


def test_pod_delete_registered_on_assigned_pods_from_v137() -> None:
    """Upstream v1.37 registers ``AssignedPod/Delete``; before, ``Pod/Delete``."""
    from kubesched.config.featuregates import FeatureGates

    for version, pods in (("1.36", fw.Resource.POD), ("1.37", fw.Resource.ASSIGNED_POD)):
        handle = fw.Handle(ClusterState(), feature_gates=FeatureGates(version))
        deletes = [
            e.event.resource
            for e in nvl.new(None, handle).events_to_register()
            if e.event.action == fw.ActionType.DELETE
            and e.event.resource != fw.Resource.VOLUME_ATTACHMENT
        ]
        assert deletes == [pods]


def csidriver(name: str, prevent: bool | None = None) -> dict:
    spec: dict = {"attachRequired": True}
    if prevent is not None:
        spec["preventPodSchedulingIfMissing"] = prevent
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": name},
        "spec": spec,
    }


NOT_INSTALLED = f"{EBS} CSI driver is not installed on the node"


def _scaling_cluster(*drivers: dict) -> list[dict]:
    """n1's CSINode lacks the Pod's driver, n2 has no CSINode, n3 lists it (no limit)."""
    return [
        node("n1"),
        node("n2"),
        node("n3"),
        csinode("n1", other_csi=None),
        csinode("n3", ebs_csi_aws_com=None),
        *drivers,
        *bound("a"),
    ]


def _scaling(items: list[dict], version: str, gates: dict[str, bool] | None = None) -> dict:
    return verdicts(
        kubesched.explain(
            {"apiVersion": "v1", "kind": "List", "items": items},
            pod("new", claim_volume("a")),
            kubernetes_version=version,
            feature_gates=gates,
        )
    )


def test_volume_limit_scaling_v135_any_csidriver_must_be_on_the_node() -> None:
    """v1.35 under VolumeLimitScaling (alpha, off): a driver with a CSIDriver object must be
    listed by the node's CSINode (no CSINode: not listed), before any limit."""
    items = _scaling_cluster(csidriver(EBS))
    refused = (nvl.NAME, [NOT_INSTALLED])
    got = _scaling(items, "1.35", {"VolumeLimitScaling": True})
    assert got == {"n1": refused, "n2": refused, "n3": (None, [])}
    got = _scaling(items, "1.35")  # the gate's default: off
    assert got == {"n1": (None, []), "n2": (None, []), "n3": (None, [])}
    # no CSIDriver object: the driver may not be CSI at all, every node passes
    got = _scaling(_scaling_cluster(), "1.35", {"VolumeLimitScaling": True})
    assert got == {"n1": (None, []), "n2": (None, []), "n3": (None, [])}


def test_volume_limit_scaling_from_v136_only_drivers_that_opt_in() -> None:
    """v1.36 (alpha, off) and v1.37 (beta, on): only a CSIDriver with
    ``preventPodSchedulingIfMissing`` true keeps Pods off nodes that lack it."""
    refused = (nvl.NAME, [NOT_INSTALLED])
    passes = {"n1": (None, []), "n2": (None, []), "n3": (None, [])}
    opted = _scaling_cluster(csidriver(EBS, prevent=True))
    for version, on in (("1.36", {"VolumeLimitScaling": True}), ("1.37", None)):
        assert _scaling(_scaling_cluster(csidriver(EBS)), version, on) == passes
        assert _scaling(_scaling_cluster(csidriver(EBS, prevent=False)), version, on) == passes
        assert _scaling(opted, version, on) == {"n1": refused, "n2": refused, "n3": (None, [])}
        assert _scaling(opted, version, {"VolumeLimitScaling": False}) == passes
    assert _scaling(opted, "1.36") == passes  # the gate's default there: off
