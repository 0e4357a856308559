"""Live VolumeBinding PreBind (:mod:`kubesched.live.volumes`), against the fake API server.

A ``WaitForFirstConsumer`` claim matched to a static local PV: PreBind PUTs the PV with its
``claimRef`` and waits until a PV controller (a thread here, playing kube-controller-manager's
binder) has bound the claim; only then is the Pod bound, on a node inside the PV's node
affinity.  A claim to provision gets the selected-node annotation, and the Pod waits for a
provisioner (a thread too).  Without a controller PreBind times out after
``bindTimeoutSeconds`` with upstream's error; a refused PV update fails PreBind with the API
server's message, Unreserve drops the assumed PV, and the next attempt binds.
VolumeAttachments are watched like the other storage kinds, and every call is one
``deploy/rbac.yaml`` allows.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kubesched.api import objects as api
from kubesched.api import storage as st
from kubesched.api.pods import parse_pod
from kubesched.config.load import load_config
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.live.client import ApiError
from kubesched.live.volumes import LiveVolumes, VolumeBindingError, fully_bound
from kubesched.plugins.registry import known_plugin_names
from kubesched.state.storage import storage_of
from tests.live import rbac
from tests.live.conftest import Api, Replica, node, pod
from tests.live.conftest import wait_for as wait
from tests.live.fakestore import Obj, by_plural
from tests.plugins import _storage as storage

PV, PVC = by_plural("persistentvolumes"), by_plural("persistentvolumeclaims")


def config(bind_timeout: int | None = None) -> KubeSchedulerConfiguration:
    """Profile ``kubesched``, no leader election; VolumeBinding's ``bindTimeoutSeconds``."""
    profile: dict[str, Any] = {"schedulerName": "kubesched"}
    if bind_timeout is not None:
        args = {"bindTimeoutSeconds": bind_timeout}
        profile["pluginConfig"] = [{"name": "VolumeBinding", "args": args}]
    raw = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [profile],
    }
    return load_config(raw, known_plugins=known_plugin_names())


def local_pv(name: str, node_name: str) -> Obj:
    """A local PV of class ``local`` usable only on ``node_name``."""
    return storage.pv(
        name,
        "1Gi",
        klass="local",
        host=node_name,
        csi=None,
        persistentVolumeReclaimPolicy="Retain",
        local={"path": f"/mnt/{name}"},
    )


def claim(name: str) -> Obj:
    """An unbound claim of class ``local``."""
    return storage.pvc(name, klass="local", phase="Pending")


def pod_with_claim(name: str, claim_name: str) -> Obj:
    manifest = pod(name)
    manifest["spec"]["volumes"] = [
        {"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}
    ]
    return manifest


LOCAL_CLASS = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "local"},
    "provisioner": st.NOT_SUPPORTED_PROVISIONER,
    "volumeBindingMode": "WaitForFirstConsumer",
}


def world(api: Api) -> None:
    """Two nodes; a PV on n2 only; claim ``data`` unbound; the StorageClass."""
    api.create(node("n1"))
    api.create(node("n2"))
    api.store.create(by_plural("storageclasses"), "", LOCAL_CLASS)
    api.store.create(PV, "", local_pv("pv-n2", "n2"))
    api.store.create(PVC, "default", claim("data"))


class Controller:
    """kube-controller-manager's PV binder, as far as this test needs it: a PV whose
    ``claimRef`` names an unbound claim gets it bound (claim ``volumeName``, bind-completed
    annotation, both ``Bound``)."""

    def __init__(self, api: Api) -> None:
        self.store = api.store
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(0.05):
            items, _ = self.store.list(PV, "", "", "")
            for pv in items:
                ref = pv["spec"].get("claimRef")
                if not ref:
                    continue
                c = self.store.get(PVC, ref["namespace"], ref["name"])
                if fully_bound(c) or c["metadata"]["uid"] != ref.get("uid"):
                    continue
                c["spec"]["volumeName"] = pv["metadata"]["name"]
                c["metadata"].setdefault("annotations", {})[st.ANN_BIND_COMPLETED] = "yes"
                c["status"] = {"phase": "Bound"}
                self.store.update(PVC, ref["namespace"], ref["name"], c, status_only=False)
                pv["status"] = {"phase": "Bound"}
                self.store.update(PV, "", pv["metadata"]["name"], pv, status_only=True)


@pytest.fixture
def controller(api: Api) -> Iterator[Controller]:
    c = Controller(api)
    c.thread.start()
    yield c
    c.stop.set()
    c.thread.join(2)


class Provisioner:
    """A CSI external-provisioner and the PV binder, as far as this test needs them: a claim
    with the selected-node annotation and no volume gets a PV ``pvc-<uid>`` on that node,
    and both are bound."""

    def __init__(self, api: Api) -> None:
        self.store = api.store
        self.stop = threading.Event()
        self.seen: list[str] = []
        """The selected nodes it provisioned for."""
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(0.05):
            items, _ = self.store.list(PVC, "", "", "")
            for c in items:
                meta = c["metadata"]
                selected = (meta.get("annotations") or {}).get(st.ANN_SELECTED_NODE)
                if not selected or c["spec"].get("volumeName"):
                    continue
                name = f"pvc-{meta['uid']}"
                pv = local_pv(name, selected)
                pv["spec"]["storageClassName"] = c["spec"]["storageClassName"]
                pv["spec"]["claimRef"] = {
                    "namespace": meta["namespace"],
                    "name": meta["name"],
                    "uid": meta["uid"],
                }
                pv["status"] = {"phase": "Bound"}
                self.store.create(PV, "", pv)
                c["spec"]["volumeName"] = name
                meta.setdefault("annotations", {})[st.ANN_BIND_COMPLETED] = "yes"
                c["status"] = {"phase": "Bound"}
                self.store.update(PVC, meta["namespace"], meta["name"], c, status_only=False)
                self.seen.append(selected)


def _failures(api: Api, name: str) -> list[str]:
    return [
        str(e.get("note"))
        for e in api.events("FailedScheduling")
        if e.get("regarding", {}).get("name") == name
    ]


def test_prebind_writes_the_claim_ref_and_waits_for_the_pv_controller(
    api: Api, replicas: Callable[..., Replica], controller: Controller
) -> None:
    world(api)
    r = replicas("a", config())
    api.store.create(by_plural("pods"), "default", pod_with_claim("db-0", "data"))
    wait(lambda: api.node_of("db-0"), timeout=20)
    assert api.node_of("db-0") == "n2"  # the only node in the PV's node affinity
    pv = api.store.get(PV, "", "pv-n2")
    c = api.store.get(PVC, "default", "data")
    assert pv["spec"]["claimRef"]["uid"] == c["metadata"]["uid"]
    assert pv["metadata"]["annotations"][st.ANN_BOUND_BY_CONTROLLER] == "yes"
    assert fully_bound(c)  # bound before the Pod was: PreBind waited
    assert r.live.api.volumes.updates == 1
    made = rbac.calls_of(api.store.stats, "kubesched-test (a)")
    assert ("update", "", "persistentvolumes", "pv-n2") in made
    assert ("get", "", "persistentvolumeclaims", "data") in made
    assert ("list", "storage.k8s.io", "volumeattachments", "") in made
    rules = rbac.rules_of(rbac.manifests(rbac.DEPLOY), "kubesched")
    assert rbac.denied(rules, made) == []


def test_without_a_pv_controller_prebind_times_out_with_upstreams_error(
    api: Api, replicas: Callable[..., Replica]
) -> None:
    world(api)
    r = replicas("a", config(bind_timeout=1))
    api.store.create(by_plural("pods"), "default", pod_with_claim("db-0", "data"))
    wait(lambda: _failures(api, "db-0"), timeout=20)
    assert any("binding volumes: context deadline exceeded" in n for n in _failures(api, "db-0"))
    assert api.node_of("db-0") == ""
    assert r.live.api.volumes.updates >= 1  # the claimRef was written (no API rollback)


def test_a_refused_pv_update_fails_prebind_and_unreserve_drops_the_assumed_pv(
    api: Api, replicas: Callable[..., Replica], controller: Controller
) -> None:
    world(api)
    api.server.fail(r"PUT /api/v1/persistentvolumes/pv-n2", 409, times=1)
    r = replicas("a", config())
    api.store.create(by_plural("pods"), "default", pod_with_claim("db-0", "data"))
    wait(lambda: _failures(api, "db-0"), timeout=20)
    assert r.live.api.volumes.update_errors == 1
    # The next attempt (after backoff) binds: the assumed PV was dropped by Unreserve, so
    # the PV is matched again from the informer's version and written this time.
    wait(lambda: api.node_of("db-0") == "n2", timeout=20)
    assert fully_bound(api.store.get(PVC, "default", "data"))
    assert storage_of(r.live.scheduler.cluster).assumed_pvs == {}


def test_prebind_writes_the_selected_node_of_a_claim_to_provision_and_waits(
    api: Api, replicas: Callable[..., Replica]
) -> None:
    api.create(node("n1"))
    api.store.create(
        by_plural("storageclasses"),
        "",
        {**LOCAL_CLASS, "metadata": {"name": "csi"}, "provisioner": "csi.example.com"},
    )
    c = claim("scratch")
    c["spec"]["storageClassName"] = "csi"
    api.store.create(PVC, "default", c)
    provisioner = Provisioner(api)
    provisioner.thread.start()
    try:
        r = replicas("a", config())
        api.store.create(by_plural("pods"), "default", pod_with_claim("job-0", "scratch"))
        wait(lambda: api.node_of("job-0") == "n1", timeout=20)
    finally:
        provisioner.stop.set()
        provisioner.thread.join(2)
    assert provisioner.seen == ["n1"]  # the annotation kubesched wrote named the node
    bound = api.store.get(PVC, "default", "scratch")
    assert bound["metadata"]["annotations"][st.ANN_SELECTED_NODE] == "n1" and fully_bound(bound)
    made = rbac.calls_of(api.store.stats, "kubesched-test (a)")
    assert ("update", "", "persistentvolumeclaims", "scratch") in made
    assert r.live.api.volumes.updates == 1


# --------------------------------------------------------------------------- LiveVolumes alone
class _Client:
    """A KubeClient stand-in answering GETs from a dict (path -> object)."""

    def __init__(self, objects: dict[str, Obj]) -> None:
        self.objects = objects
        self.requests: list[tuple[str, str]] = []

    def request(self, method: str, path: str, **kw: Any) -> Obj:
        self.requests.append((method, path))
        if method == "PUT":
            body: Obj = kw["body"]
            self.objects[path] = body
            return body
        found = self.objects.get(path)
        if found is None:
            raise ApiError(404, f'"{path.rsplit("/", 1)[-1]}" not found', "NotFound")
        return found


def _volumes(objects: dict[str, Obj]) -> tuple[LiveVolumes, _Client, list[float]]:
    """LiveVolumes over a :class:`_Client` of ``objects``, on a virtual clock; the
    pauses it slept."""
    slept: list[float] = []
    now = [0.0]

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    client = _Client(objects)
    given: Any = client
    return LiveVolumes(given, sleep=sleep, clock=lambda: now[0]), client, slept


POD_PATH = "/api/v1/namespaces/default/pods/db-0"
CLAIM_PATH = "/api/v1/namespaces/default/persistentvolumeclaims/data"


def _pod() -> api.Pod:
    return parse_pod(pod_with_claim("db-0", "data"))


def test_the_wait_polls_every_second_up_to_the_timeout() -> None:
    pv = local_pv("pv-n2", "n2")
    pv["spec"]["claimRef"] = {"namespace": "default", "name": "data", "uid": "u1"}
    volumes, _, slept = _volumes({POD_PATH: pod("db-0"), CLAIM_PATH: claim("data")})
    volumes.update_volume(pv)
    assert volumes.wait_for_volumes(_pod(), ["default/data"], 3.5) is False
    assert slept == [1.0, 1.0, 1.0]  # polls at 1, 2, 3 s; the 4th would be past 3.5 s


def test_a_claim_ref_reset_by_the_controller_fails_the_wait() -> None:
    pv = local_pv("pv-n2", "n2")
    pv["spec"]["claimRef"] = {"namespace": "default", "name": "data", "uid": "u1"}
    volumes, client, _ = _volumes({POD_PATH: pod("db-0"), CLAIM_PATH: claim("data")})
    volumes.update_volume(pv)
    client.objects["/api/v1/persistentvolumes/pv-n2"] = local_pv("pv-n2", "n2")  # dropped
    with pytest.raises(VolumeBindingError, match='ClaimRef got reset for pv "pv-n2"'):
        volumes.wait_for_volumes(_pod(), ["default/data"], 10)


def test_a_provisioning_claim_whose_selected_node_is_dropped_failed_to_provision() -> None:
    c = claim("data")
    c["metadata"]["annotations"] = {st.ANN_SELECTED_NODE: "n2"}
    volumes, client, _ = _volumes({POD_PATH: pod("db-0")})
    volumes.update_volume(c)
    dropped = claim("data")
    dropped["metadata"]["annotations"] = {"other": "x"}
    client.objects[CLAIM_PATH] = dropped
    with pytest.raises(VolumeBindingError, match='provisioning failed for PVC "data"'):
        volumes.wait_for_volumes(_pod(), ["default/data"], 10)


def test_a_deleted_pod_ends_the_wait() -> None:
    volumes, _, _ = _volumes({CLAIM_PATH: claim("data")})
    with pytest.raises(VolumeBindingError, match="pod does not exist any more"):
        volumes.wait_for_volumes(_pod(), ["default/data"], 10)


def test_a_bound_claim_ends_the_wait_at_the_first_poll() -> None:
    bound = claim("data")
    bound["spec"]["volumeName"] = "pv-n2"
    bound["metadata"]["annotations"] = {st.ANN_BIND_COMPLETED: "yes"}
    volumes, _, slept = _volumes({POD_PATH: pod("db-0"), CLAIM_PATH: bound})
    start = time.monotonic()
    assert volumes.wait_for_volumes(_pod(), ["default/data"], 10) is True
    assert slept == [1.0] and time.monotonic() - start < 1.0
