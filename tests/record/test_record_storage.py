"""``kubesched record`` records the storage objects (issue 28): a PersistentVolume and its
claim in the snapshot and another pair created while recording, each PV pinned to one node;
``kubesched replay`` then places each Pod where its claim's volume allows, as the real
scheduler did (without the storage objects the claims are not found and nothing binds)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubesched.cli import main
from kubesched.record import format as fmt
from tests.live.conftest import Api, node, pod, wait_for
from tests.live.fakestore import by_plural
from tests.plugins._storage import pv, pvc
from tests.record.conftest import Session

SECRET = "csi-secret-do-not-record"


def volume(name: str, claim: str, node_name: str) -> dict[str, Any]:
    """A bound CSI PersistentVolume reachable from ``node_name`` only, with a secret."""
    m = pv(name, "1Gi", host=node_name, claim=claim, phase="Bound")
    m["spec"]["csi"] = {
        "driver": "csi.example.com",
        "volumeHandle": f"handle-{name}",
        "nodePublishSecretRef": {"name": SECRET, "namespace": "default"},
    }
    return m


def claiming(name: str, claim_name: str) -> dict[str, Any]:
    """A default-scheduler Pod mounting ``claim_name``."""
    m = pod(name, scheduler="default-scheduler")
    m["spec"]["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": claim_name}}]
    return m


def put(api: Api, obj: dict[str, Any]) -> None:
    """Create a PersistentVolume or a claim in the fake API server."""
    plural = {
        "PersistentVolume": "persistentvolumes",
        "PersistentVolumeClaim": "persistentvolumeclaims",
    }
    api.store.create(by_plural(plural[obj["kind"]]), obj["metadata"].get("namespace", ""), obj)


def bind(api: Api, name: str, node_name: str) -> None:
    api.store.bind("default", name, {"target": {"name": node_name}}, "other-scheduler", time.time())


def test_storage_objects_are_recorded_and_replayed(
    api: Api, record: Callable[..., Session], tmp_path: Path
) -> None:
    api.create(node("n1", cpu="2"))
    api.create(node("n2", cpu="2"))
    put(api, volume("pv-a", "data-a", "n2"))
    put(api, pvc("data-a", volume="pv-a", phase="Bound"))
    api.create(claiming("a", "data-a"))  # Pending at time 0
    s = record()
    put(api, volume("pv-b", "data-b", "n1"))
    put(api, pvc("data-b", volume="pv-b", phase="Bound"))
    api.create(claiming("b", "data-b"))
    time.sleep(0.2)
    bind(api, "a", "n2")  # the real scheduler followed the volumes
    bind(api, "b", "n1")
    wait_for(lambda: s.recorder.progress().counts.get(fmt.POD_BOUND) == 2)
    s.stop()

    snapshot = json.loads((s.out / fmt.SNAPSHOT).read_text())["items"]
    kinds = {o["kind"]: o for o in snapshot}
    assert kinds["PersistentVolume"]["status"]["phase"] == "Bound"
    assert kinds["PersistentVolumeClaim"]["status"]["phase"] == "Bound"
    applied = {
        (e["object"]["kind"], e["object"]["metadata"]["name"])
        for e in s.events()
        if e["type"] == fmt.OBJECT_APPLIED and isinstance(e["object"], dict)
    }
    assert {("PersistentVolume", "pv-b"), ("PersistentVolumeClaim", "data-b")} <= applied
    header = json.loads((s.out / fmt.HEADER).read_text())
    assert {"PersistentVolume", "PersistentVolumeClaim", "VolumeAttachment"} <= set(header["kinds"])
    everything = "".join(p.read_text() for p in s.out.iterdir())
    assert SECRET not in everything and "csi.example.com" in everything

    out = tmp_path / "doc.json"
    assert main(["replay", str(s.out), "-o", str(out)]) == 0
    p = json.loads(out.read_text())["comparison"]["placements"]
    assert p["boundBoth"] == 2 and p["different"] == 0, p
