"""kube-oracle over storage objects: upstream's four volume plugins see the snapshot's
PersistentVolumes, claims, StorageClasses, CSINodes, CSIDrivers and CSIStorageCapacities,
``schedule`` completes VolumeBinding's PreBind as the PV controller would
(``oracle/internal/oracle/pvcontroller.go``), and it answers every case of the storage
family (``oracle/storage_cases.py``).  kubesched's answers to the family are compared by
``oracle/diff.py --family storage`` (``.ci/run`` runs it), not here."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from storage_cases import storage_case, storage_schedule_case

ZONE = "topology.kubernetes.io/zone"


def _node(name: str, zone: str) -> dict[str, Any]:
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    labels = {"kubernetes.io/hostname": name, ZONE: zone}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": alloc, "capacity": alloc}}  # fmt: skip


def _claim(name: str, cls: str, **spec: Any) -> dict[str, Any]:
    body = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}}
    meta = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    spec = {**body, "storageClassName": cls, **spec}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta,
            "spec": spec, "status": {"phase": "Pending"}}  # fmt: skip


def _pod(name: str, *claims: str, ts: int = 0) -> dict[str, Any]:
    vols = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default",
                         "creationTimestamp": f"2026-01-01T00:00:{ts:02d}Z"},
            "spec": {"containers": [{"name": "c", "image": "x"}], "volumes": vols}}  # fmt: skip


def _list(*items: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": list(items)}


def test_a_bound_claims_volume_decides_the_node(oracle: Any) -> None:
    """The issue's StatefulSet-shaped Pod: its claim is bound to a volume in zone z1 (node
    affinity, and the zone label VolumeZone reads): upstream rejects the node in z2."""
    affinity = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": ZONE, "operator": "In", "values": ["z1"]}]}]}}  # fmt: skip
    pv = {"apiVersion": "v1", "kind": "PersistentVolume",
          "metadata": {"name": "pv1", "labels": {ZONE: "z1"}},
          "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                   "csi": {"driver": "pd.csi.storage.gke.io", "volumeHandle": "h1"},
                   "claimRef": {"namespace": "default", "name": "data", "uid": "uid-data"},
                   "storageClassName": "sc", "nodeAffinity": affinity},
          "status": {"phase": "Bound"}}  # fmt: skip
    claim = _claim("data", "sc", volumeName="pv1")
    claim["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    claim["status"] = {"phase": "Bound", "capacity": {"storage": "10Gi"}}
    cluster = _list(_node("n1", "z1"), _node("n2", "z2"), pv, claim)
    answer = oracle.ask({"cluster": cluster, "pod": _pod("p", "data"), "config": None})
    assert answer["selectedNode"] == "n1"
    assert answer["nodes"]["n2"]["plugin"] == "VolumeBinding"
    assert answer["nodes"]["n2"]["reasons"] == [
        "node(s) didn't match PersistentVolume's node affinity"
    ]
    del pv["spec"]["nodeAffinity"]  # the zone label alone: VolumeZone's verdict
    answer = oracle.ask({"cluster": cluster, "pod": _pod("p", "data"), "config": None})
    assert answer["nodes"]["n2"]["plugin"] == "VolumeZone"
    assert answer["nodes"]["n2"]["reasons"] == ["node(s) had no available volume zone"]


def test_schedule_binds_and_provisions_claims_as_the_pv_controller_would(
    schedule_oracle: Any,
) -> None:
    """WaitForFirstConsumer claims: a static node-local volume and three provisioned
    volumes under an attach limit of 2 (the local volume is not a CSI one); without the PV
    controller's part PreBind would wait until the run times out."""
    csi = "csi.example.com"
    on_n1 = {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}
    local = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "local-1"},
             "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                      "local": {"path": "/mnt/1"}, "storageClassName": "local",
                      "nodeAffinity": {"required": {"nodeSelectorTerms": [
                          {"matchExpressions": [on_n1]}]}}},
             "status": {"phase": "Available"}}  # fmt: skip
    classes = [
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
         "provisioner": prov, "volumeBindingMode": "WaitForFirstConsumer"}
        for name, prov in (("local", "kubernetes.io/no-provisioner"), ("csi", csi))
    ]  # fmt: skip
    csinode = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "n1"},
               "spec": {"drivers": [{"name": csi, "nodeID": "n1", "topologyKeys": [ZONE],
                                     "allocatable": {"count": 2}}]}}  # fmt: skip
    claims = [_claim("data", "local"), *(_claim(f"dyn{i}", "csi") for i in range(3))]
    cluster = _list(_node("n1", "z1"), *classes, csinode, local, *claims)
    pods = [_pod("p0", "data", "dyn0", ts=0), _pod("p1", "dyn1", ts=1),
            _pod("p2", "dyn2", ts=2)]  # fmt: skip
    answer = schedule_oracle.ask({"cluster": cluster, "pods": pods, "config": None})
    assert "error" not in answer, answer
    res = answer["pods"]
    assert res["default/p0"]["node"] == res["default/p1"]["node"] == "n1"
    assert res["default/p2"]["result"] == "Unschedulable"
    assert "1 node(s) exceed max volume count" in res["default/p2"]["message"]


def test_kube_oracle_answers_every_storage_case(oracle: Any) -> None:
    """Every generated storage case is answered (no request error, no plugin error but the
    two ``storage_extras`` draws on purpose: an inline Azure Disk that does not translate to
    CSI, VolumeRestrictions' Filter with its PreFilter disabled), and the family reaches
    each volume plugin's rejections."""
    results: Counter[str] = Counter()
    reasons: set[tuple[str, str]] = set()
    drawn_errors = (
        "is not supported in csi migration",
        'cannot read "PreFilterVolumeRestrictions"',
    )
    for i in range(150):
        answer = oracle.ask(storage_case(11, i))
        assert "error" not in answer, (i, answer)
        if answer["result"] == "Error" and any(e in answer["message"] for e in drawn_errors):
            continue
        results[answer["result"]] += 1
        for verdict in answer["nodes"].values():
            reasons.update((verdict["plugin"], r) for r in verdict["reasons"])
    assert set(results) == {"Scheduled", "Unschedulable"}, results
    for plugin, reason in [
        ("VolumeBinding", "node(s) didn't match PersistentVolume's node affinity"),
        ("VolumeBinding", "node(s) didn't find available persistent volumes to bind"),
        ("VolumeBinding", "pod has unbound immediate PersistentVolumeClaims"),
        ("NodeVolumeLimits", "node(s) exceed max volume count"),
        ("VolumeRestrictions", "node(s) unavailable due to PersistentVolumeClaim with "
         "ReadWriteOncePod access mode already in-use by another pod"),
    ]:  # fmt: skip
        assert (plugin, reason) in reasons, (plugin, reason)


def test_storage_schedule_cases_are_answered(schedule_oracle: Any) -> None:
    for i in range(4):
        answer = schedule_oracle.ask(storage_schedule_case(11, i))
        assert "error" not in answer, (i, answer)


def test_the_storage_family_is_reproducible() -> None:
    a = json.dumps([storage_case(5, i) for i in range(20)], sort_keys=True)
    b = json.dumps([storage_case(5, i) for i in range(20)], sort_keys=True)
    assert a == b


def test_schedule_cases_have_every_ephemeral_claim_made() -> None:
    """kubesched.schedule runs the ephemeral volume controller, kube-oracle does not: the
    schedule cases carry each ephemeral volume's claim (owned by its Pod or not) already;
    explain cases still leave some out."""
    missing_in_explain = 0
    for i in range(60):
        request = storage_schedule_case(3, i)
        claims = {
            (o["metadata"]["namespace"], o["metadata"]["name"])
            for o in request["cluster"]["items"]
            if o["kind"] == "PersistentVolumeClaim"
        }
        for pod in request["pods"]:
            meta = pod["metadata"]
            for v in pod["spec"]["volumes"]:
                if "ephemeral" in v:
                    assert (meta["namespace"], f"{meta['name']}-{v['name']}") in claims, (i, v)
        explain = storage_case(3, i)
        names = {o["metadata"]["name"] for o in explain["cluster"]["items"]}
        missing_in_explain += sum(
            f"{explain['pod']['metadata']['name']}-{v['name']}" not in names
            for v in explain["pod"]["spec"]["volumes"]
            if "ephemeral" in v
        )
    assert missing_in_explain > 0


def test_diff_keeps_missing_claim_warnings_off_stderr(capsys: Any) -> None:
    """``oracle/diff.py`` counts kubesched's missing-reference warnings (the storage family
    names missing claims on purpose) instead of printing one per case."""
    import logging

    import diff
    from compare import ours

    logger = logging.getLogger("kubesched.admission.references")
    handlers, propagate = list(logger.handlers), logger.propagate
    try:
        kept = diff.quiet_missing_references()
        request = {"cluster": _list(_node("n1", "z1")), "pod": _pod("p", "gone"), "config": None}
        answer = ours(request)
        assert answer["result"] == "Unschedulable"
        assert kept.count == 1
        assert "not found" not in capsys.readouterr().err
    finally:
        logger.handlers[:] = handlers
        logger.propagate = propagate


def test_schedule_plays_the_declared_volume_faults_as_kubesched_does(schedule_oracle: Any) -> None:
    """``volumeFaults``: a refused PV write, a claimRef reset, a refused claim write and a
    provisioning given up end the Pod an Error on both sides; ``bindLater`` binds (upstream
    polls once more).  Upstream's answer holds the fault model kubesched follows."""
    import kubesched

    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "static"},
          "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                   "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "static"},
                   "storageClassName": "local"},
          "status": {"phase": "Available"}}  # fmt: skip
    classes = [
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
         "provisioner": prov, "volumeBindingMode": "WaitForFirstConsumer"}
        for name, prov in (("local", "kubernetes.io/no-provisioner"), ("csi", "ebs.csi.aws.com"))
    ]  # fmt: skip
    cluster = _list(_node("n1", "z1"), *classes, pv, _claim("a", "local"), _claim("p", "csi"))
    pods = [_pod("pa", "a", ts=0), _pod("pp", "p", ts=1)]
    for faults, failing in (
        ({"PersistentVolume/static": "refuseUpdate"}, "default/pa"),
        ({"PersistentVolume/static": "resetClaimRef"}, "default/pa"),
        ({"PersistentVolumeClaim/default/p": "refuseUpdate"}, "default/pp"),
        ({"PersistentVolumeClaim/default/p": "failProvisioning"}, "default/pp"),
        (
            {
                "PersistentVolume/static": "bindLater",
                "PersistentVolumeClaim/default/p": "bindLater",
            },
            "",
        ),
    ):
        request = {"cluster": cluster, "pods": pods, "config": None, "volumeFaults": faults}
        theirs = schedule_oracle.ask(request)["pods"]
        mine = kubesched.schedule(cluster, pods, None, kubernetes_version="1.34",
                                  volume_faults=faults)["pods"]  # fmt: skip
        for key in ("default/pa", "default/pp"):
            want = "Error" if key == failing else "Scheduled"
            assert theirs[key]["result"] == mine[key]["result"] == want, (faults, key, theirs)
