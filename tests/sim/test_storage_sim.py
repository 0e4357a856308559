"""Storage in the simulator: workloads with ``volumeClaimTemplates`` get a claim per Pod,
VolumeBinding's PreBind binds them in the simulated API server, and the four storage
invariants are checked (and catch what breaks them)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.api import pods as podparse
from kubesched.api.errors import InputError
from kubesched.sim import storagecheck
from kubesched.sim.scenario import build_scenario
from kubesched.sim.simulate import run_scenario
from tests.plugins._storage import claim_volume, csinode, node, pod, pv, pvc

SCENARIO = Path(__file__).with_name("stateful_scenario.yaml")


def _doc() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(SCENARIO.read_text())
    return doc


def test_volume_claim_templates_make_a_claim_per_pod() -> None:
    sc = build_scenario(_doc())
    claims = [o for o in sc.others if o["kind"] == "PersistentVolumeClaim"]
    assert [c["metadata"]["name"] for c in claims] == [f"data-db-{j:06d}" for j in range(6)]
    first = next(a.pod for a in sc.arrivals if a.pod.name == "db-000000")
    assert [(v.name, v.claim) for v in first.volumes] == [("data", "data-db-000000")]


def test_an_invalid_claim_template_names_its_field() -> None:
    doc = _doc()
    doc["spec"]["workloads"][0]["volumeClaimTemplates"][0]["spec"]["accessModes"] = []
    with pytest.raises(InputError, match=r"volumeClaimTemplates\[0\]\.spec\.accessModes"):
        build_scenario(doc)


def test_the_run_binds_one_claim_per_pv_within_its_topology() -> None:
    held: list[Any] = []
    summary = run_scenario(build_scenario(_doc()), setup=held.append)
    assert summary["podsScheduled"] == 3  # three PVs for six claims
    objects = held[0].api.objects
    bound = {
        o["metadata"]["name"]: o["spec"].get("volumeName")
        for (kind, _), o in objects.items()
        if kind == "PersistentVolumeClaim" and o["spec"].get("volumeName")
    }
    assert sorted(bound.values()) == ["pv-a", "pv-b", "pv-c"]
    for name, volume in bound.items():
        assert (
            objects[("PersistentVolume", f"default/{volume}")]["spec"]["claimRef"]["name"] == name
        )
    inv = summary["invariants"]
    assert all(inv[k] == [] for k in storagecheck_keys())


def storagecheck_keys() -> tuple[str, ...]:
    return ("pvClaimedTwice", "rwopClaimsShared", "outsideVolumeTopology", "overAttachLimit")


def test_a_run_without_storage_reports_no_storage_invariants() -> None:
    doc = _doc()
    del doc["spec"]["workloads"][0]["volumeClaimTemplates"]
    doc["spec"]["objects"] = []
    summary = run_scenario(build_scenario(doc))
    assert not set(storagecheck_keys()) & set(summary["invariants"])


def _objects(*items: dict[str, Any]) -> dict[tuple[str, str], Any]:
    out = {}
    for o in items:
        meta = o["metadata"]
        out[(o["kind"], f"{meta.get('namespace') or 'default'}/{meta['name']}")] = o
    return out


def test_invariants_catch_what_breaks_them() -> None:
    nodes = {"n1": _node("n1", "z1")}
    objects = _objects(
        pv("pv1", zone="z2", csi=("d.csi", "h1")),
        pv("pv2", csi=("d.csi", "h2")),
        pvc("a", volume="pv1"),
        pvc("b", volume="pv1"),
        pvc("rwop", volume="pv2", modes=("ReadWriteOncePod",)),
        csinode("n1", d_csi=1),
    )
    pods = [
        podparse.parse_pod(pod("p1", claim_volume("a"), claim_volume("rwop"), node_name="n1")),
        podparse.parse_pod(pod("p2", claim_volume("rwop"), node_name="n1")),
    ]
    got = storagecheck.storage_invariants(objects, pods, nodes)
    assert got == {
        "pvClaimedTwice": ["pv1"],
        "rwopClaimsShared": ["default/rwop"],
        "outsideVolumeTopology": ["default/p1"],
        "overAttachLimit": ["n1"],
    }


def _node(name: str, zone: str) -> Any:
    from kubesched.api.parse import parse_node

    return parse_node(copy.deepcopy(node(name, **{"topology.kubernetes.io/zone": zone})))


def test_ephemeral_volumes_get_claims_and_provisioned_pvs() -> None:
    """The ephemeral volume controller makes ``<pod>-<volume>``; VolumeBinding provisions it
    where the class's topology allows."""
    doc = _doc()
    wl = doc["spec"]["workloads"][0]
    del wl["volumeClaimTemplates"]
    wl["count"] = 4
    wl["template"]["spec"]["volumes"] = [
        {
            "name": "scratch",
            "ephemeral": {
                "volumeClaimTemplate": {
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": "zonal",
                        "resources": {"requests": {"storage": "1Gi"}},
                    }
                }
            },
        }
    ]
    doc["spec"]["objects"] = [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "zonal"},
            "provisioner": "ebs.csi.aws.com",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [
                {
                    "matchLabelExpressions": [
                        {"key": "topology.kubernetes.io/zone", "values": ["z2"]}
                    ]
                }
            ],
        }
    ]
    held: list[Any] = []
    summary = run_scenario(build_scenario(doc), setup=held.append)
    assert summary["podsScheduled"] == 4
    sim = held[0]
    assert {p.node_name[:2] for p in sim.api.pods.values()} == {"zb"}
    claims = [o for (k, _), o in sim.api.objects.items() if k == "PersistentVolumeClaim"]
    assert sorted(c["metadata"]["name"] for c in claims) == [
        f"db-{j:06d}-scratch" for j in range(4)
    ]
    assert all(c["spec"].get("volumeName") for c in claims)
    assert all(summary["invariants"][k] == [] for k in storagecheck_keys())


def test_sharded_run_binds_each_pv_once() -> None:
    """With two shards, Pods with claims never take the fast path: the binder checks each
    on the authoritative state, so no PV is bound twice."""
    held: list[Any] = []
    summary = run_scenario(build_scenario(_doc()), shards=2, setup=held.append)
    assert summary["podsScheduled"] == 3
    assert all(summary["invariants"][k] == [] for k in storagecheck_keys())
    volumes = [
        o["spec"].get("volumeName")
        for (kind, _), o in held[0].api.objects.items()
        if kind == "PersistentVolumeClaim" and o["spec"].get("volumeName")
    ]
    assert sorted(volumes) == ["pv-a", "pv-b", "pv-c"]
