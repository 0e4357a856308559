"""Storage objects (:mod:`kubesched.api.storage`): the API server's defaults, and its
refusals as errors with their field path, through the snapshot reader too."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import storage as st
from kubesched.api.errors import InputError
from kubesched.api.parse import parse_objects


def pv(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "capacity": {"storage": "10Gi"},
        "accessModes": ["ReadWriteOnce"],
        "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"},
    }
    base.update(spec)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "pv"},
        "spec": base,
    }


def pvc(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}},
    }
    base.update(spec)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": base,
    }


def test_defaults() -> None:
    v = st.parse_pv(pv(storageClassName="fast"))
    assert (v.capacity, v.phase, v.volume_mode, v.driver, v.handle) == (
        10 * 2**30,
        "Available",
        "Filesystem",
        "ebs.csi.aws.com",
        "vol-1",
    )
    c = st.parse_pvc(pvc(storageClassName="fast"))
    assert (c.key, c.request, c.storage_class, c.fully_bound) == ("ns/c", 2**30, "fast", False)
    sc = st.parse_class({"kind": "StorageClass", "metadata": {"name": "s"}, "provisioner": "p"})
    assert (sc.binding_mode, sc.reclaim_policy, sc.allows({})) == ("Immediate", "Delete", True)
    d = st.parse_driver({"kind": "CSIDriver", "metadata": {"name": "d"}, "spec": {}})
    assert (d.attach_required, d.storage_capacity) == (True, False)


def test_beta_class_annotation_wins() -> None:
    obj = pvc(storageClassName="spec")
    obj["metadata"]["annotations"] = {st.ANN_BETA_STORAGE_CLASS: "beta"}
    assert st.parse_pvc(obj).storage_class == "beta"


@pytest.mark.parametrize(
    ("obj", "path", "message"),
    [
        (pv(capacity={}), "items[0].spec.capacity", "Required value"),
        (pv(accessModes=[]), "items[0].spec.accessModes", "at least 1 access mode"),
        (pv(accessModes=["Sometimes"]), "items[0].spec.accessModes[0]", "Unsupported value"),
        (
            pv(accessModes=["ReadWriteOncePod", "ReadWriteOnce"]),
            "items[0].spec.accessModes",
            "may not use ReadWriteOncePod with other access modes",
        ),
        (pv(csi=None), "items[0].spec", "must specify a volume type"),
        (
            pv(nodeAffinity={"required": {"nodeSelectorTerms": []}}),
            "items[0].spec.nodeAffinity.required.nodeSelectorTerms",
            "at least one node selector term",
        ),
        (
            pv(
                nodeAffinity={
                    "required": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "z", "operator": "Near"}]}
                        ]
                    }
                }
            ),
            "items[0].spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator",
            "Unsupported value",
        ),
        (pvc(resources={}), "items[0].spec.resources.requests.storage", "Required value"),
        (
            {"kind": "StorageClass", "metadata": {"name": "s"}},
            "items[0].provisioner",
            "Required value",
        ),
        (
            {
                "kind": "StorageClass",
                "metadata": {"name": "s"},
                "provisioner": "p",
                "volumeBindingMode": "Later",
            },
            "items[0].volumeBindingMode",
            "Unsupported value",
        ),
        (
            {
                "kind": "CSINode",
                "metadata": {"name": "n"},
                "spec": {"drivers": [{"name": "d", "nodeID": "n", "allocatable": {"count": -1}}]},
            },
            "items[0].spec.drivers[0].allocatable.count",
            "must be greater than or equal to 0",
        ),
        (
            {"kind": "CSIStorageCapacity", "metadata": {"name": "c", "namespace": "x"}},
            "items[0].storageClassName",
            "Required value",
        ),
        (
            {"kind": "VolumeAttachment", "metadata": {"name": "va"}, "spec": {"nodeName": "n"}},
            "items[0].spec.attacher",
            "Required value",
        ),
    ],
)
def test_refused_with_field_path(obj: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        parse_objects([{"kind": "List", "items": [obj]}])
    text = str(err.value)
    assert f"{path}:" in text and message in text, text
