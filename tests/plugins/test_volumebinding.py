"""VolumeBinding, the cases of upstream's ``volume_binding_test.go`` and ``binder_test.go``:
bound claims' PV node affinity, unbound Immediate claims, WaitForFirstConsumer claims
matched to the smallest sufficient static PV or provisioned where the class's topology and
CSIStorageCapacity allow, and Reserve / PreBind binding them so the next Pod sees it."""

from __future__ import annotations

from typing import Any

import pytest

import kubesched
from kubesched.api import pods as podparse
from kubesched.api.errors import InputError
from kubesched.api.parse import parse_objects
from kubesched.explainer.cycle import build_cluster
from kubesched.framework.interface import Code, CycleState, Handle
from kubesched.plugins import volumebinding as vb
from kubesched.plugins.volumebinding import binder as b
from kubesched.state.storage import storage_of
from tests.plugins._storage import (
    ZONE,
    claim_volume,
    explain,
    node,
    pod,
    pv,
    pvc,
    storage_class,
    verdicts,
)

NAME = vb.NAME
MIGRATED = "storage.alpha.kubernetes.io/migrated-plugins"


def test_bound_claim_pv_node_affinity() -> None:
    items = [
        node("n1", **{ZONE: "z1"}),
        node("n2", **{ZONE: "z2"}),
        pvc("data", volume="pv1"),
        pv("pv1", claim="data", zone="z1"),
    ]
    answer = explain(items, pod("db-0", claim_volume("data")))
    assert answer["selectedNode"] == "n1"
    assert verdicts(answer)["n2"] == (NAME, [b.ERR_REASON_NODE_CONFLICT])


def test_bound_claim_to_missing_pv() -> None:
    """(VolumeZone's PreFilter turns such a Pod away first in the default profile.)"""
    objs = parse_objects([node("n1"), pvc("data", volume="gone")])
    cluster, _ = build_cluster(objs)
    storage = storage_of(cluster)
    claims = b.pod_volume_claims(storage, podparse.parse_pod(pod("p", claim_volume("data"))))
    assert b.find_pod_volumes(storage, claims, objs.nodes[0])[1] == [b.ERR_REASON_PV_NOT_EXIST]


@pytest.mark.parametrize(
    "claim",
    [
        pvc("data", klass="now"),  # an Immediate class
        pvc("data", klass="missing"),  # a class that does not exist
        pvc("data", klass=None),  # no class
        pvc("data", volume="pv1", bound=False),  # a volume name without bind-completed
    ],
)
def test_unbound_immediate_claims(claim: dict[str, Any]) -> None:
    items = [node("n1"), storage_class("now", mode="Immediate"), claim]
    answer = explain(items, pod("p", claim_volume("data")))
    assert answer["result"] == "Unschedulable"
    assert verdicts(answer)["n1"] == (NAME, [vb.plugin.ERR_UNBOUND_IMMEDIATE])


def test_wait_for_first_consumer_takes_the_smallest_sufficient_pv() -> None:
    items = [
        node("n1", **{ZONE: "z1"}),
        node("n2", **{ZONE: "z2"}),
        storage_class("local", provisioner="kubernetes.io/no-provisioner"),
        pvc("data", "5Gi", klass="local"),
        pv("big", "100Gi", klass="local", zone="z2"),
        pv("small", "6Gi", klass="local", zone="z2"),
        pv("tiny", "1Gi", klass="local", zone="z1"),
        pv("other-class", "6Gi", klass="else", zone="z1"),
        pv("wrong-mode", "6Gi", klass="local", zone="z1", modes=("ReadOnlyMany",)),
    ]
    got = verdicts(explain(items, pod("p", claim_volume("data"))))
    assert got == {"n1": (NAME, [b.ERR_REASON_BIND_CONFLICT]), "n2": (None, [])}
    objs = parse_objects(items)
    cluster, _ = build_cluster(objs)
    storage = storage_of(cluster)
    claims = b.pod_volume_claims(storage, podparse.parse_pod(pod("p", claim_volume("data"))))
    volumes, reasons = b.find_pod_volumes(storage, claims, objs.nodes[1])
    assert reasons == [] and [p.name for p, _ in volumes.static] == ["small"]


def test_selector_and_prebound_pv() -> None:
    items = [
        node("n1"),
        storage_class("local", provisioner="kubernetes.io/no-provisioner"),
        pvc("data", klass="local", selector={"matchLabels": {"tier": "gold"}}),
        pv("plain", klass="local"),
    ]
    assert verdicts(explain(items, pod("p", claim_volume("data"))))["n1"][0] == NAME
    gold = pv("gold", klass="local", labels={"tier": "gold"})
    assert verdicts(explain([*items, gold], pod("p", claim_volume("data"))))["n1"] == (None, [])


def test_provisioning_follows_allowed_topologies() -> None:
    topo = [{"matchLabelExpressions": [{"key": ZONE, "values": ["z1"]}]}]
    items = [
        node("n1", **{ZONE: "z1"}),
        node("n2", **{ZONE: "z2"}),
        storage_class("zonal", allowedTopologies=topo),
        pvc("data", klass="zonal"),
    ]
    got = verdicts(explain(items, pod("p", claim_volume("data"))))
    assert got == {"n1": (None, []), "n2": (NAME, [b.ERR_REASON_BIND_CONFLICT])}


def _capacity_items(z1: str, z2: str) -> list[dict[str, Any]]:
    return [
        node("n1", **{ZONE: "z1"}),
        node("n2", **{ZONE: "z2"}),
        storage_class("fast"),
        pvc("data", "10Gi", klass="fast"),
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": "ebs.csi.aws.com"},
            "spec": {"storageCapacity": True},
        },
        *(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSIStorageCapacity",
                "metadata": {"name": zone, "namespace": "kube-system"},
                "storageClassName": "fast",
                "capacity": size,
                "nodeTopology": {"matchLabels": {ZONE: zone}},
            }
            for zone, size in (("z1", z1), ("z2", z2))
        ),
    ]


@pytest.mark.parametrize(
    ("version", "gates", "want"),
    [
        # StorageCapacityScoring (Beta, on from v1.37): the provisioned claim's utilization of
        # each node's CSIStorageCapacity through the default shape (0 -> 100, 100 -> 0):
        # n1 10Gi of 100Gi -> 90, n2 10Gi of 20Gi -> 50 (upstream v1.37.2's answer)
        ("1.37", None, {"n1": 90, "n2": 50}),
        ("1.36", None, {"n1": None, "n2": None}),  # Alpha, off: no scorer
        ("1.36", {"StorageCapacityScoring": True}, {"n1": 90, "n2": 50}),
    ],
)
def test_storage_capacity_scoring(
    version: str, gates: dict[str, bool] | None, want: dict[str, int | None]
) -> None:
    answer = kubesched.explain(
        {"apiVersion": "v1", "kind": "List", "items": _capacity_items("100Gi", "20Gi")},
        pod("p", claim_volume("data")),
        kubernetes_version=version,
        feature_gates=gates,
    )
    got = {n: v.get("scores", {}).get(NAME) for n, v in answer["nodes"].items()}
    assert got == want
    if want["n1"] is not None:
        assert answer["selectedNode"] == "n1"  # (without a scorer the two nodes tie)


def test_storage_capacity() -> None:
    items = [
        node("n1", **{ZONE: "z1"}),
        node("n2", **{ZONE: "z2"}),
        storage_class("fast"),
        pvc("data", "10Gi", klass="fast"),
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": "ebs.csi.aws.com"},
            "spec": {"storageCapacity": True},
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIStorageCapacity",
            "metadata": {"name": "z1", "namespace": "kube-system"},
            "storageClassName": "fast",
            "capacity": "100Gi",
            "nodeTopology": {"matchLabels": {ZONE: "z1"}},
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIStorageCapacity",
            "metadata": {"name": "z2", "namespace": "kube-system"},
            "storageClassName": "fast",
            "capacity": "5Gi",
            "nodeTopology": {"matchLabels": {ZONE: "z2"}},
        },
    ]
    got = verdicts(explain(items, pod("p", claim_volume("data"))))
    assert got == {"n1": (None, []), "n2": (NAME, [b.ERR_REASON_NOT_ENOUGH_SPACE])}


def test_selected_node_annotation_pins_the_claim() -> None:
    items = [
        node("n1"),
        node("n2"),
        storage_class("fast"),
        pvc("data", klass="fast", annotations={"volume.kubernetes.io/selected-node": "n2"}),
    ]
    got = verdicts(explain(items, pod("p", claim_volume("data"))))
    assert got == {"n1": (NAME, [b.ERR_REASON_BIND_CONFLICT]), "n2": (None, [])}


@pytest.mark.parametrize(
    ("claim", "message"),
    [
        (pvc("data", klass="x", status={"phase": "Lost"}, volume="pv9"), None),
        (None, 'persistentvolumeclaim "data" not found'),
    ],
)
def test_pre_filter_problems(claim: dict[str, Any] | None, message: str | None) -> None:
    items: list[dict[str, Any]] = [node("n1")]
    if claim is not None:
        claim = dict(claim)
        status = claim["spec"].pop("status", None)
        if status:
            claim["status"] = status
            message = 'persistentvolumeclaim "data" bound to non-existent persistentvolume "pv9"'
        items.append(claim)
    cluster, _ = build_cluster(items)
    plugin = vb.new({"bindTimeoutSeconds": 600}, Handle(cluster))
    _, status = plugin.pre_filter(
        CycleState(), podparse.parse_pod(pod("p", claim_volume("data"))), cluster
    )
    assert (status.code, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,))


def test_ephemeral_claim_waits_for_its_controller() -> None:
    cluster, _ = build_cluster([node("n1")])
    plugin = vb.new(None, Handle(cluster))
    vol = {
        "name": "scratch",
        "ephemeral": {
            "volumeClaimTemplate": {
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                }
            }
        },
    }
    _, status = plugin.pre_filter(CycleState(), podparse.parse_pod(pod("p", vol)), cluster)
    assert status.reasons == (
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "p-scratch"',
    )


def test_pods_without_claims_are_skipped() -> None:
    cluster, _ = build_cluster([node("n1")])
    plugin = vb.new(None, Handle(cluster))
    _, status = plugin.pre_filter(CycleState(), podparse.parse_pod(pod("p")), cluster)
    assert status.code == Code.SKIP


def test_reserve_assumes_and_unreserve_restores() -> None:
    items = [
        node("n1"),
        storage_class("local", provisioner="kubernetes.io/no-provisioner"),
        pvc("data", klass="local"),
        pv("only", klass="local"),
    ]
    cluster, _ = build_cluster(items)
    plugin = vb.new(None, Handle(cluster))
    p = podparse.parse_pod(pod("p", claim_volume("data")))
    state = CycleState()
    plugin.pre_filter(state, p, cluster)
    import numpy as np

    assert plugin.filter(state, p, cluster, np.asarray([0], dtype=np.int64)).codes.tolist() == [0]
    storage = storage_of(cluster)
    assert plugin.reserve(state, p, "n1").is_success()
    assumed = storage.pv("only")
    assert assumed is not None and assumed.claim_ref == ("default", "data", "uid-data")
    plugin.unreserve(state, p, "n1")
    restored = storage.pv("only")
    assert restored is not None and restored.claim_ref is None


def test_schedule_binds_claims_so_the_next_pod_finds_none() -> None:
    """Two Pods, two WaitForFirstConsumer claims, one static PV: the first Pod's PreBind
    binds it, the second finds none to bind."""
    items = [
        node("n1"),
        storage_class("local", provisioner="kubernetes.io/no-provisioner"),
        pvc("a", klass="local"),
        pvc("b", klass="local"),
        pv("only", klass="local"),
    ]
    cluster = {"apiVersion": "v1", "kind": "List", "items": items}
    out = kubesched.schedule(cluster, [pod("pa", claim_volume("a")), pod("pb", claim_volume("b"))])
    by_pod = out["pods"]
    assert by_pod["default/pa"]["node"] == "n1"
    assert by_pod["default/pb"]["node"] is None
    assert b.ERR_REASON_BIND_CONFLICT in by_pod["default/pb"]["message"]


def test_shape_is_refused_while_storage_capacity_scoring_is_off() -> None:
    from kubesched.api.errors import InputError
    from kubesched.config.load import load_config
    from kubesched.plugins.registry import known_plugin_names

    cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "pluginConfig": [
                    {"name": "VolumeBinding", "args": {"shape": [{"utilization": 0, "score": 0}]}}
                ]
            }
        ],
    }
    from kubesched.config.featuregates import FeatureGates

    with pytest.raises(InputError, match="turn on the feature gate StorageCapacityScoring"):
        load_config(cfg, known_plugins=known_plugin_names(), gates=FeatureGates("1.36"))
    # on from v1.37: the shape is taken, and checked as upstream's validateFunctionShape
    load_config(cfg, known_plugins=known_plugin_names(), gates=FeatureGates("1.37"))
    bad = cfg["profiles"][0]["pluginConfig"][0]["args"]  # type: ignore[index]
    bad["shape"] = [{"utilization": 50, "score": 1}, {"utilization": 10, "score": 11}]
    with pytest.raises(InputError, match="values must be sorted in increasing order"):
        load_config(cfg, known_plugins=known_plugin_names(), gates=FeatureGates("1.37"))


def test_bound_in_tree_pv_is_checked_as_its_migrated_csi_form() -> None:
    """Upstream ``tryTranslatePVToCSI``: on a node whose CSINode lists ``kubernetes.io/aws-ebs``
    as migrated, a bound EBS PV's zone label becomes a ``topology.ebs.csi.aws.com/zone``
    requirement, which a node without that label fails (VolumeZone, reading the zone label,
    passes it).  Without a CSINode the PV keeps its own (empty) node affinity."""
    migrated = {
        "kind": "CSINode",
        "apiVersion": "storage.k8s.io/v1",
        "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "x"}]},
    }
    items = [
        node("n1", **{ZONE: "us-east1-b"}),
        node("n2", **{ZONE: "us-east1-b"}),
        node("n3", **{ZONE: "us-east1-b", "topology.ebs.csi.aws.com/zone": "us-east1-b"}),
        *(
            {
                **migrated,
                "metadata": {
                    "name": n,
                    "annotations": {
                        "storage.alpha.kubernetes.io/migrated-plugins": "a,kubernetes.io/aws-ebs"
                    },
                },
            }
            for n in ("n1", "n3")
        ),
        pvc("data", volume="pv1"),
        pv(
            "pv1",
            claim="data",
            labels={ZONE: "us-east1-b"},
            awsElasticBlockStore={"volumeID": "vol-1"},
        ),
    ]
    answer = explain(items, pod("db-0", claim_volume("data")))
    got = verdicts(answer)
    assert got["n1"] == (NAME, [b.ERR_REASON_NODE_CONFLICT])
    assert got["n2"] == (None, [])
    assert got["n3"] == (None, [])


def test_bound_regional_gce_pd_with_zones_of_two_regions_is_an_error() -> None:
    """Upstream: TranslateInTreePVToCSI fails (``gceGetRegionFromZones``), and so does Filter."""
    items = [
        node("n1", **{ZONE: "us-east1-b"}),
        {
            "kind": "CSINode",
            "apiVersion": "storage.k8s.io/v1",
            "metadata": {
                "name": "n1",
                "annotations": {
                    "storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/gce-pd"
                },
            },
            "spec": {"drivers": []},
        },
        pvc("data", volume="pv1"),
        pv(
            "pv1",
            claim="data",
            labels={ZONE: "us-east1-b__us-west1-a"},
            gcePersistentDisk={"pdName": "d1"},
        ),
    ]
    objs = parse_objects(items)
    cluster, _ = build_cluster(objs)
    storage = storage_of(cluster)
    claims = b.pod_volume_claims(storage, podparse.parse_pod(pod("p", claim_volume("data"))))
    with pytest.raises(b.BinderError) as err:
        b.find_pod_volumes(storage, claims, objs.nodes[0])
    assert str(err.value) == (  # checkBoundClaims returns tryTranslatePVToCSI's error as is
        "could not translate pv: failed to get region from "
        "zones: multiple or no regions gotten from zones, got: map[us-east1:{} us-west1:{}]"
    )


def test_pre_bind_checks_a_static_in_tree_pv_as_its_csi_translation() -> None:
    """Upstream ``checkBindings``: a WaitForFirstConsumer claim matches a GCE PD PV with no
    node affinity (Filter does not translate), PreBind binds it, then finds its translation
    (``topology.gke.io/zone``, on a node where gce-pd is migrated) not admitting the node: an
    error; the next attempt finds the claim bound to a PV in conflict."""
    items = [
        node("n1", **{ZONE: "z1"}),
        {
            "kind": "CSINode",
            "apiVersion": "storage.k8s.io/v1",
            "metadata": {"name": "n1", "annotations": {MIGRATED: "kubernetes.io/gce-pd"}},
            "spec": {"drivers": []},
        },
        storage_class("gce", provisioner="kubernetes.io/gce-pd"),
        pvc("a", klass="gce"),
        pv("disk", klass="gce", labels={ZONE: "z1"}, gcePersistentDisk={"pdName": "d1"}),
    ]
    cluster = {"apiVersion": "v1", "kind": "List", "items": items}
    got = kubesched.schedule(cluster, [pod("pa", claim_volume("a"))])["pods"]["default/pa"]
    assert got["result"] == "Unschedulable"
    assert got["attempts"] == 2
    assert b.ERR_REASON_NODE_CONFLICT in got["message"]


def _fault_cluster() -> dict[str, Any]:
    """One node, a static PV for claim ``a`` (no provisioner) and a claim ``p`` to provision."""
    items = [
        node("n1"),
        storage_class("local", provisioner="kubernetes.io/no-provisioner"),
        storage_class("csi", provisioner="ebs.csi.aws.com"),
        pvc("a", klass="local"),
        pvc("p", klass="csi"),
        pv("only", klass="local"),
    ]
    return {"apiVersion": "v1", "kind": "List", "items": items}


@pytest.mark.parametrize(
    ("faults", "message"),
    [
        (
            {"PersistentVolume/only": "refuseUpdate"},
            'persistentvolumes "only" is forbidden: refused (the case\'s volumeFaults)',
        ),
        (
            {"PersistentVolume/only": "resetClaimRef"},
            'binding volumes: ClaimRef got reset for pv "only"',
        ),
        (
            {"PersistentVolumeClaim/default/p": "refuseUpdate"},
            'persistentvolumeclaims "p" is forbidden: refused (the case\'s volumeFaults)',
        ),
        (
            {"PersistentVolumeClaim/default/p": "failProvisioning"},
            'binding volumes: selectedNode annotation reset for PVC "p"',
        ),
    ],
)
def test_volume_faults_fail_pre_bind_every_attempt(faults: dict[str, str], message: str) -> None:
    """``volume_faults`` (kube-oracle's fake API server and PV controller play the same,
    oracle/internal/oracle/pvcontroller.go): PreBind fails with upstream's error each
    attempt, so the Pod ends an Error; the other Pod, whose writes go through, binds."""
    pods = [pod("pa", claim_volume("a")), pod("pp", claim_volume("p"))]
    out = kubesched.schedule(_fault_cluster(), pods, volume_faults=faults)["pods"]
    failing = "default/pa" if "PersistentVolume/" in next(iter(faults)) else "default/pp"
    other = "default/pp" if failing == "default/pa" else "default/pa"
    assert out[failing]["result"] == "Error"
    assert out[failing]["message"].endswith(message)
    assert out[other]["result"] == "Scheduled"


def test_volume_faults_bind_later_ends_bound_and_bad_keys_are_refused() -> None:
    """``bindLater`` ends as no fault does (PreBind polls until the claim is bound); a key
    of another kind, or an unknown fault, is an input error."""
    pods = [pod("pa", claim_volume("a")), pod("pp", claim_volume("p"))]
    faults = {"PersistentVolume/only": "bindLater", "PersistentVolumeClaim/default/p": "bindLater"}
    out = kubesched.schedule(_fault_cluster(), pods, volume_faults=faults)["pods"]
    assert [out[k]["result"] for k in ("default/pa", "default/pp")] == ["Scheduled"] * 2
    with pytest.raises(InputError, match="PersistentVolumeClaim/NAMESPACE/NAME"):
        kubesched.schedule(_fault_cluster(), pods, volume_faults={"Pod/x": "refuseUpdate"})
    with pytest.raises(InputError, match="must be one of"):
        kubesched.schedule(_fault_cluster(), pods, volume_faults={"PersistentVolume/only": "x"})
