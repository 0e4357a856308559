"""The volume plugins' column paths decide as the one-node-at-a-time checks do: the storage
observer's attach columns (an upper bound of the volumes attached per node and the smallest
CSINode limit) that let NodeVolumeLimits pass most nodes in one comparison, and
VolumeBinding's check of bound claims on every node at once."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from kubesched.api.parse import parse_node, parse_pod
from kubesched.framework import interface as fw
from kubesched.plugins import nodevolumelimits as nvl
from kubesched.plugins import volumebinding as vb
from kubesched.plugins import volumezone as vz
from kubesched.plugins.volumebinding import binder as b
from kubesched.state.cache import ClusterState
from kubesched.state.storage import NO_LIMIT, UNBOUNDED, AttachBounds, Storage, storage_of
from kubesched.testing import FakeApi
from tests.plugins._storage import ZONE, claim_volume, csinode, disk_volume, node, pod, pv, pvc

EBS = "ebs.csi.aws.com"
OTHER = "other.csi.example.com"
MIGRATED = "storage.alpha.kubernetes.io/migrated-plugins"


def attachment(name: str, node_name: str, pv_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": name},
        "spec": {
            "attacher": EBS,
            "nodeName": node_name,
            "source": {"persistentVolumeName": pv_name},
        },
    }


def ephemeral_volume(name: str) -> dict[str, Any]:
    template = {
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    }
    return {"name": name, "ephemeral": {"volumeClaimTemplate": template}}


def rows_of(cluster: ClusterState, *names: str) -> np.ndarray:
    return np.asarray([cluster.nodes.row_of[n] for n in names], dtype=np.int64)


def test_attach_bounds_follow_pods_csinodes_and_attachments() -> None:
    cluster = ClusterState()
    for n in ("n1", "n2"):
        cluster.add_node(parse_node(node(n)))
    storage = storage_of(cluster)
    rows = rows_of(cluster, "n1", "n2")
    assert storage.attach_bounds(rows).floor.tolist() == [NO_LIMIT, NO_LIMIT]
    cluster.apply_object(csinode("n1", ebs_csi_aws_com=3, other_csi_example_com=2))
    cluster.apply_object(csinode("n2", ebs_csi_aws_com=None))
    got = storage.attach_bounds(rows)
    assert got.floor.tolist() == [2, NO_LIMIT]
    assert got.csinode.tolist() == [True, True]
    two = parse_pod(pod("two", claim_volume("a"), claim_volume("b"), node_name="n1"))
    cluster.add_pod(two)
    cluster.add_pod(parse_pod(pod("eph", ephemeral_volume("e"), node_name="n2")))
    cluster.add_pod(parse_pod(pod("none", node_name="n2")))
    assert storage.attach_bounds(rows).bound.tolist() == [2, UNBOUNDED + 1]
    cluster.apply_object(attachment("va1", "n1", "pv-x"))
    assert storage.attach_bounds(rows).bound.tolist() == [3, UNBOUNDED + 1]
    cluster.remove_pod(two.key)
    cluster.apply_object(csinode("n1", ebs_csi_aws_com=5), deleted=True)
    got = storage.attach_bounds(rows)
    assert got.bound.tolist() == [1, UNBOUNDED + 1]
    assert got.floor.tolist() == [NO_LIMIT, NO_LIMIT]
    assert got.csinode.tolist() == [False, True]


def _statuses(verdict: fw.Verdict) -> list[fw.Status | None]:
    return [verdict.table[c] if c else None for c in verdict.codes.tolist()]


def _random_cluster(rng: random.Random) -> tuple[ClusterState, list[dict[str, Any]]]:
    """Nodes with and without CSINode limits, CSI and in-tree PVs shared among Pods,
    VolumeAttachments, ephemeral volumes (one whose claim is not its Pod's)."""
    cluster = ClusterState()
    names = [f"n{i}" for i in range(6)]
    for n in names:
        cluster.add_node(parse_node(node(n)))
    objects: list[dict[str, Any]] = []
    for n in names:
        if rng.random() < 0.8:
            limits = {"ebs_csi_aws_com": rng.choice([None, 1, 2, 3, 4])}
            if rng.random() < 0.3:
                limits["other_csi_example_com"] = rng.choice([1, 2])
            objects.append(csinode(n, **limits))
    claims = [f"c{i}" for i in range(8)]
    for i, c in enumerate(claims):
        objects.append(pvc(c, volume=f"pv-{c}"))
        if i % 4 == 3:
            objects.append(pv(f"pv-{c}", claim=c, awsElasticBlockStore={"volumeID": f"vol-{c}"}))
        else:
            objects.append(pv(f"pv-{c}", claim=c, csi=(rng.choice([EBS, EBS, OTHER]), f"h-{c}")))
    for j in range(rng.randint(0, 3)):
        objects.append(attachment(f"va{j}", rng.choice(names), f"pv-{rng.choice(claims)}"))
    objects.append(pvc("p-eph-e"))  # not the ephemeral Pod's claim (no owner)
    for obj in objects:
        cluster.apply_object(obj)
    pods = []
    for k in range(rng.randint(0, 10)):
        volumes = [claim_volume(c) for c in rng.sample(claims, rng.randint(0, 3))]
        if rng.random() < 0.2:
            volumes.append(disk_volume("awsElasticBlockStore", volumeID=f"vol-in{k}"))
        pods.append(pod(f"p{k}", *volumes, node_name=rng.choice(names)))
    if rng.random() < 0.2:
        pods.append(pod("p-eph", ephemeral_volume("e"), node_name=rng.choice(names)))
    for p in pods:
        cluster.add_pod(parse_pod(p))
    return cluster, pods


@pytest.mark.parametrize("seed", range(60))
def test_node_volume_limits_columns_agree_with_the_exact_check(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    cluster, _ = _random_cluster(rng)
    plugin = nvl.NodeVolumeLimits(None, fw.Handle(cluster, FakeApi(cluster)))
    rows = np.asarray(sorted(cluster.nodes.row_of.values()), dtype=np.int64)
    claims = [f"c{i}" for i in range(8)]
    new = parse_pod(pod("new", *(claim_volume(c) for c in rng.sample(claims, rng.randint(1, 3)))))

    def run() -> list[fw.Status | None]:
        state = fw.CycleState()
        plugin.pre_filter(state, new, cluster)
        return _statuses(plugin.filter(state, new, cluster, rows))

    fast = run()
    with monkeypatch.context() as m:  # every node one by one
        m.setattr(
            Storage,
            "attach_bounds",
            lambda self, r: AttachBounds(
                np.zeros(len(r), np.int64), np.full(len(r), -1, np.int64), np.ones(len(r), bool)
            ),
        )
        exact = run()
    assert fast == exact


def test_a_node_add_pod_puts_a_pod_on_is_checked_one_by_one() -> None:
    """Preemption's AddPod: a nominated Pod's volume counts on its node though the
    observer's bound does not hold it."""
    cluster = ClusterState()
    cluster.add_node(parse_node(node("n1")))
    for obj in [
        csinode("n1", ebs_csi_aws_com=1),
        pvc("a", volume="pv-a"),
        pv("pv-a", claim="a", csi=(EBS, "h-a")),
        pvc("b", volume="pv-b"),
        pv("pv-b", claim="b", csi=(EBS, "h-b")),
    ]:
        cluster.apply_object(obj)
    plugin = nvl.NodeVolumeLimits(None, fw.Handle(cluster, FakeApi(cluster)))
    new = parse_pod(pod("new", claim_volume("b")))
    other = parse_pod(pod("nominated", claim_volume("a")))
    rows = rows_of(cluster, "n1")
    state = fw.CycleState()
    plugin.pre_filter(state, new, cluster)
    assert plugin.filter(state, new, cluster, rows).codes.tolist() == [0]
    plugin.pre_filter_add_pod(state, new, other, int(rows[0]), cluster)
    assert plugin.filter(state, new, cluster, rows).codes.tolist() == [1]


def _migrated_csinode(
    name: str, plugins: str = "kubernetes.io/gce-pd,kubernetes.io/aws-ebs"
) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {
            "name": name,
            "annotations": {MIGRATED: plugins},
        },
        "spec": {"drivers": []},
    }


@pytest.mark.parametrize("seed", range(60))
def test_bound_claims_on_every_node_agree_with_find_pod_volumes(seed: int) -> None:
    """Zonal CSI PVs, in-tree PVs translated on nodes whose CSINode migrates them (one of
    them untranslatable: an error), a missing PV, nodes removed: the outcome of each node as
    :func:`~kubesched.plugins.volumebinding.binder.find_pod_volumes` finds it."""
    rng = random.Random(seed)
    cluster = ClusterState()
    names = [f"n{i}" for i in range(8)]
    for n in names:
        labels = {ZONE: rng.choice(["z1", "z2", "z1__z2"])}
        if rng.random() < 0.5:
            labels["topology.ebs.csi.aws.com/zone"] = labels[ZONE]
        cluster.add_node(parse_node(node(n, **labels)))
        if rng.random() < 0.4:
            plugins = ["kubernetes.io/gce-pd,kubernetes.io/aws-ebs", "kubernetes.io/aws-ebs", ""]
            cluster.apply_object(_migrated_csinode(n, rng.choice(plugins)))
    volumes = []
    for i in range(rng.randint(1, 3)):
        c = f"c{i}"
        volumes.append(claim_volume(c))
        cluster.apply_object(pvc(c, volume=f"pv-{c}"))
        kind = rng.choice(["zonal", "plain", "ebs", "gce-two-regions", "missing"])
        if kind == "zonal":
            cluster.apply_object(pv(f"pv-{c}", claim=c, zone=rng.choice(["z1", "z2"])))
        elif kind == "plain":
            cluster.apply_object(pv(f"pv-{c}", claim=c))
        elif kind == "ebs":
            zone = rng.choice(["z1", "z2"])
            cluster.apply_object(
                pv(f"pv-{c}", claim=c, labels={ZONE: zone}, awsElasticBlockStore={"volumeID": c})
            )
        elif kind == "gce-two-regions":
            labels = {ZONE: "us-east1-b__us-west1-a"}
            cluster.apply_object(
                pv(f"pv-{c}", claim=c, labels=labels, gcePersistentDisk={"pdName": c})
            )
    if rng.random() < 0.3:
        cluster.remove_node(rng.choice(names))
    storage = storage_of(cluster)
    new = parse_pod(pod("new", *volumes))
    claims = b.pod_volume_claims(storage, new)
    rows = np.asarray(sorted(cluster.nodes.row_of.values()), dtype=np.int64)
    outcome, errors = b.bound_claims_on(storage, claims, cluster.nodes, rows)
    for i, row in enumerate(rows.tolist()):
        the_node = cluster.nodes.nodes[row]
        assert the_node is not None
        try:
            found, reasons = b.find_pod_volumes(storage, claims, the_node)
        except b.BinderError as err:
            assert outcome[i] >= 2 and errors[outcome[i] - 2] == str(err)
            continue
        assert not found.static and not found.dynamic
        want = {
            (): b.BOUND_FITS,
            (b.ERR_REASON_NODE_CONFLICT,): b.BOUND_NODE_CONFLICT,
            (b.ERR_REASON_PV_NOT_EXIST,): b.BOUND_PV_MISSING,
        }[tuple(reasons)]
        assert outcome[i] == want
    plugin = vb.VolumeBinding(None, fw.Handle(cluster, FakeApi(cluster)))
    state = fw.CycleState()
    plugin.pre_filter(state, new, cluster)
    verdict = plugin.filter(state, new, cluster, rows)
    assert (verdict.codes == 0).tolist() == (outcome == b.BOUND_FITS).tolist()


def _zone_reference(labels: dict[str, str], topologies: list[vz.Topology]) -> bool:
    """VolumeZone's Filter on one node, as upstream's loop reads it."""
    if not any(k in labels for k in vz.TOPOLOGY_LABELS):
        return True
    for _pv, key, values in topologies:
        value = labels.get(key)
        if value is None:
            value = labels.get({vz.BETA_ZONE: vz.ZONE, vz.BETA_REGION: vz.REGION}.get(key, key))
        if value is None or value not in values:
            return False
    return True


@pytest.mark.parametrize("seed", range(40))
def test_volume_zone_columns_agree_with_the_one_node_check(seed: int) -> None:
    """Beta and GA zone and region labels on nodes and PVs (multi-zone ``__`` values, a node
    with only the GA twin of a PV's beta key, nodes without any), a removed node."""
    rng = random.Random(seed)
    cluster = ClusterState()
    zones = ["z1", "z2", "z3"]
    for i in range(10):
        labels = {}
        for key in vz.TOPOLOGY_LABELS:
            if rng.random() < 0.4:
                labels[key] = rng.choice(zones)
        cluster.add_node(parse_node(node(f"n{i}", **labels)))
    if rng.random() < 0.3:
        cluster.remove_node(f"n{rng.randrange(10)}")
    topologies: list[vz.Topology] = []
    for p in range(rng.randint(1, 3)):
        for key in rng.sample(vz.TOPOLOGY_LABELS, rng.randint(1, 2)):
            topologies.append((f"pv{p}", key, frozenset(rng.sample([*zones, "z9"], 2))))
    rows = np.asarray(sorted(cluster.nodes.row_of.values()), dtype=np.int64)
    got = vz.zones_admit(cluster.nodes, topologies, rows)
    for i, row in enumerate(rows.tolist()):
        the_node = cluster.nodes.nodes[row]
        assert the_node is not None
        assert bool(got[i]) == _zone_reference(dict(the_node.labels), topologies)
