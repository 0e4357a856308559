"""What the storage family's first draws (``oracle/storage_cases.py``) leave out, drawn into a
storage request afterwards from a stream of its own (a seed's other draws stay as they were).

Each kind reaches lines of upstream's volume plugins the first draws never ran (issue 30,
``oracle/diff.py --coverage``):

- inline iSCSI and RBD disks on the incoming and running Pods (VolumeRestrictions'
  ``isVolumeConflict`` for both, ``haveOverlap`` of Ceph monitors, read-only mounts, RBD's
  defaulted pool);
- the other in-tree kinds CSI migration knows, Azure Disk, Cinder and Portworx: their
  StorageClasses, PersistentVolumes (claims bound to them), inline volumes and the CSINode
  drivers and migrated-plugins annotation (NodeVolumeLimits' ``isCSIMigrationOn`` per
  plugin, ``getCSIDriverInfoFromSC``; VolumeBinding's translation of such PVs);
- PersistentVolumes no CSI driver backs (NFS, hostPath) bound to the Pod's claims;
- a claim of the Pod that is ``Lost`` or being deleted;
- VolumeAttachments of an inline volume, of a missing PersistentVolume and of a non-CSI one;
- StorageClasses of Azure File and vSphere (in-tree provisioners whose migration the volume
  plugins never turn on) with unbound claims; CSINodes annotated without the migrated-plugins
  key (or with it empty); a running Pod naming a claim that does not exist; a
  CSIStorageCapacity without ``nodeTopology``;
- configurations: one of the four volume plugins disabled (so the others meet the claims it
  would have rejected first), or VolumeBinding and VolumeRestrictions both, VolumeZone's or
  VolumeRestrictions' PreFilter disabled (their Filter without its state), and
  StorageCapacityScoring turned on (a user may at v1.34; on by default from v1.37) with
  VolumeBinding's ``shape`` at times (its Score).

``volume_faults`` (the schedule cases only, a stream of its own too) declares what goes wrong
with VolumeBinding's PreBind writes in about half of them (``volumeFaults``, which
kube-oracle's fake API server and PV controller play, ``oracle/internal/oracle/pvcontroller.go``,
and ``kubesched.schedule`` takes): the API server refusing the write of an unbound PV or
claim, the PV controller resetting a pre-bound PV's ``claimRef``, a provisioner giving up on
a claim (its selected-node annotation removed: with the annotation a real claim carries from
the PV controller, ``volume.kubernetes.io/storage-provisioner``, or with no other), or the
binding done after PreBind's first check.  They reach the binding cycle's failure paths:
``bindAPIUpdate``'s failed writes and reverts, ``checkBindings``' reset claimRef, lost
selected node and not-yet-bound claims, and Unreserve after them.

``release_storage`` (explain and schedule cases, drawn after everything else from a stream
of its own, and only from v1.35 on: a seed's v1.34 cases stay as they were) draws what a
release adds: the gate VolumeLimitScaling set at random where the release lets a user set it
(alpha, off, at v1.35 and v1.36; beta, on, at v1.37), and from v1.36 (where the API has the
field; its server drops it with the gate off) CSIDrivers' ``preventPodSchedulingIfMissing``
(NodeVolumeLimits reads it from v1.36; v1.35's asks any CSIDriver's driver to be on the node);
and ``volumeAttributesClassName`` on some CSI PersistentVolumes and claims (a stream of its
own; VolumeAttributesClass is on in every release: VolumeBinding matches a claim only to a
volume of its class).
"""

from __future__ import annotations

import copy
import random
from typing import Any

from request_shape import cluster_items, incoming_pods

AZURE, CINDER, PORTWORX = (
    "kubernetes.io/azure-disk",
    "kubernetes.io/cinder",
    "kubernetes.io/portworx-volume",
)
# in-tree plugin -> (StorageClass name, CSI driver, volume source key)
IN_TREE = {
    AZURE: ("azure", "disk.csi.azure.com", "azureDisk"),
    CINDER: ("cinder", "cinder.csi.openstack.org", "cinder"),
    PORTWORX: ("portworx", "pxd.portworx.com", "portworxVolume"),
}
MIGRATED = "storage.alpha.kubernetes.io/migrated-plugins"
DISKS = "/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/disks"
MONITORS = ["10.0.0.1:6789", "10.0.0.2:6789", "10.0.0.3:6789"]
ZONE = "topology.kubernetes.io/zone"
VOLUME_PLUGINS = ["VolumeBinding", "VolumeRestrictions", "NodeVolumeLimits", "VolumeZone"]


def storage_extras(stream: str, request: dict[str, Any]) -> None:
    """Draw the kinds above into ``request`` (an explain request; a schedule request with
    ``pods`` takes them too, without the configurations) from the random stream named
    ``stream``.  ``storage_cases.storage_case`` calls it; its schedules do not (yet)."""
    r = random.Random(stream)
    items = cluster_items(request)
    incoming = incoming_pods(request)
    running = [i for i in items if i["kind"] == "Pod" and i["spec"].get("nodeName")]
    if r.random() < 0.3:
        _iscsi_rbd(r, incoming, running)
    if r.random() < 0.35:
        _other_in_tree(r, items, incoming, running)
    if r.random() < 0.2:
        _non_csi(r, items, incoming)
    if r.random() < 0.15:
        _lost_or_deleting(r, items, incoming)
    if r.random() < 0.25:
        _odd_attachments(r, items)
    if "pods" not in request and r.random() < 0.35:
        _config(r, request)
    # a stream of its own for the kinds added later: the draws above stay as they were
    more = random.Random(stream + "/more")
    if more.random() < 0.25:
        _unmigrated_classes(more, items, incoming)
    if more.random() < 0.2:
        _other_annotations(more, items)
    if running and more.random() < 0.15:
        more.choice(running)["spec"].setdefault("volumes", []).append(
            {"name": "gone", "persistentVolumeClaim": {"claimName": "no-such-claim"}}
        )
    for item in items:
        if item["kind"] == "CSIStorageCapacity" and more.random() < 0.1:
            del item["nodeTopology"]  # optional: no node has access
    if "pods" not in request and request["config"] is None and more.random() < 0.1:
        profile = {"schedulerName": "default-scheduler", "plugins": {"multiPoint": {"disabled": [
            {"name": "VolumeBinding"}, {"name": "VolumeRestrictions"}]}}}  # fmt: skip
        request["config"] = _configuration(profile)


LIMIT_SCALING = "VolumeLimitScaling"


def release_storage(stream: str, request: dict[str, Any], version: str | None) -> None:
    """What ``version`` adds to a storage request (module docstring), in place: the
    request's ``featureGates`` and its CSIDrivers' ``preventPodSchedulingIfMissing``."""
    if version is None or int(version.split(".")[1]) < 35:
        return
    from kubesched.config.featuregates import gate_table

    _attributes_classes(random.Random(stream + "/vac"), request)
    r = random.Random(stream)
    spec = gate_table(version).get(LIMIT_SCALING)
    if spec is None:
        return
    gates = dict(request.get("featureGates") or {})
    if not spec.lock_to_default and r.random() < 0.6:
        gates[LIMIT_SCALING] = r.random() < 0.7
    if gates:
        request["featureGates"] = gates
    on = gates.get(LIMIT_SCALING, spec.default)
    if not on or int(version.split(".")[1]) < 36:
        return
    for item in request["cluster"]["items"]:
        if item["kind"] == "CSIDriver" and r.random() < 0.7:
            item["spec"]["preventPodSchedulingIfMissing"] = r.random() < 0.7


def _attributes_classes(r: random.Random, request: dict[str, Any]) -> None:
    """In a third of the cases, ``volumeAttributesClassName`` on some CSI PersistentVolumes
    and some claims (VolumeAttributesClass, GA and on in every release): a claim to bind
    takes only a volume of its own attributes class (none matches none)."""
    if r.random() >= 0.35:
        return
    for item in request["cluster"]["items"]:
        if item["kind"] == "PersistentVolume" and "csi" in item["spec"]:
            chance = 0.5
        elif item["kind"] == "PersistentVolumeClaim":
            chance = 0.4
        else:
            continue
        if r.random() < chance:
            item["spec"]["volumeAttributesClassName"] = r.choice(["gold", "silver"])


def _iscsi_rbd(
    r: random.Random, incoming: list[dict[str, Any]], running: list[dict[str, Any]]
) -> None:
    def disk(k: int) -> dict[str, Any]:
        if r.random() < 0.5:
            src: dict[str, Any] = {
                "targetPortal": "10.0.1.1:3260",
                "iqn": f"iqn.2026-01.com.example:disk-{r.randint(0, 1)}",
                "lun": 0,
            }
            kind = "iscsi"
        else:
            src = {"monitors": r.sample(MONITORS, r.randint(1, 2))}
            src["image"] = f"img-{r.randint(0, 1)}"
            if r.random() < 0.7:
                src["pool"] = r.choice(["rbd", "kube"])
            kind = "rbd"
        if r.random() < 0.4:
            src["readOnly"] = True
        return {"name": f"{kind}-{k}", kind: src}

    for pod in [*incoming, *(p for p in running if r.random() < 0.5)]:
        vols = pod["spec"].setdefault("volumes", [])
        vols.extend(disk(len(vols) + j) for j in range(r.randint(1, 2)))


def _other_in_tree(
    r: random.Random,
    items: list[dict[str, Any]],
    incoming: list[dict[str, Any]],
    running: list[dict[str, Any]],
) -> None:
    plugins = r.sample(sorted(IN_TREE), r.randint(1, 3))
    nodes = [i for i in items if i["kind"] == "Node"]
    for plugin in plugins:
        cls, _, _ = IN_TREE[plugin]
        if r.random() < 0.9:
            mode = r.choice(["WaitForFirstConsumer", "WaitForFirstConsumer", "Immediate"])
            items.append({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                          "metadata": {"name": cls}, "provisioner": plugin,
                          "reclaimPolicy": "Delete", "volumeBindingMode": mode})  # fmt: skip
    for item in items:
        if item["kind"] != "CSINode":
            continue
        meta = item["metadata"]
        if r.random() < 0.7:
            had = [p for p in meta.get("annotations", {}).get(MIGRATED, "").split(",") if p]
            chosen = sorted({*had, *r.sample(plugins, r.randint(1, len(plugins)))})
            meta.setdefault("annotations", {})[MIGRATED] = ",".join(chosen)
        for plugin in plugins:
            if r.random() < 0.6:
                d: dict[str, Any] = {"name": IN_TREE[plugin][1], "nodeID": meta["name"] + "-id"}
                if r.random() < 0.8:
                    d["allocatable"] = {"count": r.randint(0, 3)}
                item["spec"]["drivers"].append(d)
    for k, pod in enumerate(incoming):
        ns = pod["metadata"].get("namespace", "default")
        vols = pod["spec"].setdefault("volumes", [])
        for j, plugin in enumerate(plugins):
            what = r.choice(["pv", "pv", "unbound", "inline"])
            name = f"{IN_TREE[plugin][0]}-{k}-{j}"
            if what == "inline":
                vols.append({"name": name, **_source(r, plugin, j)})
                continue
            claim = _claim(ns, name, IN_TREE[plugin][0])
            if what == "pv":
                pv = _pv(r, f"pv-{name}", _source(r, plugin, j), IN_TREE[plugin][0], nodes)
                _bind(claim, pv)
                items.append(pv)
            items.append(claim)
            vols.append({"name": name, "persistentVolumeClaim": {"claimName": name}})
    for j, pod in enumerate(running):
        if r.random() < 0.4:
            pod["spec"].setdefault("volumes", []).append(
                {"name": f"intree-{j}", **_source(r, r.choice(plugins), r.randint(0, 2))}
            )


def _source(r: random.Random, plugin: str, j: int) -> dict[str, Any]:
    """An in-tree volume source of ``plugin`` (one of a few disks, so Pods share some)."""
    key = IN_TREE[plugin][2]
    ident = f"disk-{j % 2}"
    if plugin == AZURE:
        src: dict[str, Any] = {
            "diskName": ident,
            "diskURI": f"{DISKS}/{ident}",
        }
        if r.random() < 0.8:  # else the API server's default, Shared
            src["kind"] = r.choice(["Managed", "Managed", "Shared"])
    else:
        src = {"volumeID": ident}
    if r.random() < 0.3:
        src["readOnly"] = True
    return {key: src}


def _pv(
    r: random.Random, name: str, source: dict[str, Any], cls: str, nodes: list[dict[str, Any]]
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "capacity": {"storage": "10Gi"},
        "accessModes": ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": "Delete",
        "storageClassName": cls,
        "volumeMode": "Filesystem",
        **source,
    }
    meta: dict[str, Any] = {"name": name}
    zones = sorted({n["metadata"]["labels"].get(ZONE, "") for n in nodes} - {""})
    if zones and r.random() < 0.6:
        zone = r.choice(zones)
        if r.random() < 0.5:
            meta["labels"] = {ZONE: zone}
        else:
            expr = {"key": ZONE, "operator": "In", "values": [zone]}
            terms = [{"matchExpressions": [expr]}]
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": terms}}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec,
            "status": {"phase": "Available"}}  # fmt: skip


def _claim(ns: str, name: str, cls: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "5Gi"}},
        "volumeMode": "Filesystem",
    }
    if cls is not None:
        spec["storageClassName"] = cls
    meta = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}",
            "finalizers": ["kubernetes.io/pvc-protection"]}  # fmt: skip
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta,
            "spec": spec, "status": {"phase": "Pending"}}  # fmt: skip


def _bind(claim: dict[str, Any], pv: dict[str, Any]) -> None:
    """Bind ``claim`` to ``pv`` as the PV controller leaves both."""
    meta = claim["metadata"]
    claim["spec"]["volumeName"] = pv["metadata"]["name"]
    claim["spec"]["storageClassName"] = pv["spec"].get("storageClassName", "")
    meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes",
                           "pv.kubernetes.io/bound-by-controller": "yes"}  # fmt: skip
    claim["status"] = {"phase": "Bound", "accessModes": list(pv["spec"]["accessModes"]),
                       "capacity": dict(pv["spec"]["capacity"])}  # fmt: skip
    pv["spec"]["claimRef"] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                              "namespace": meta["namespace"], "name": meta["name"],
                              "uid": meta["uid"]}  # fmt: skip
    pv["status"] = {"phase": "Bound"}


def _non_csi(r: random.Random, items: list[dict[str, Any]], incoming: list[dict[str, Any]]) -> None:
    nodes = [i for i in items if i["kind"] == "Node"]
    for k, pod in enumerate(incoming):
        ns = pod["metadata"].get("namespace", "default")
        name = f"share-{k}"
        if r.random() < 0.5:
            source: dict[str, Any] = {"nfs": {"server": "10.0.2.1", "path": f"/export/{k}"}}
        else:
            source = {"hostPath": {"path": f"/data/{k}", "type": "DirectoryOrCreate"}}
        pv = _pv(r, f"pv-{name}", source, r.choice(["manual", "standard"]), nodes)
        claim = _claim(ns, name, None)
        _bind(claim, pv)
        items.extend([pv, claim])
        pod["spec"].setdefault("volumes", []).append(
            {"name": name, "persistentVolumeClaim": {"claimName": name}}
        )


def _lost_or_deleting(
    r: random.Random, items: list[dict[str, Any]], incoming: list[dict[str, Any]]
) -> None:
    for pod in incoming:
        ns = pod["metadata"].get("namespace", "default")
        names = {v["persistentVolumeClaim"]["claimName"] for v in pod["spec"].get("volumes", [])
                 if "persistentVolumeClaim" in v}  # fmt: skip
        mine = [
            i for i in items
            if i["kind"] == "PersistentVolumeClaim"
            and i["metadata"]["namespace"] == ns and i["metadata"]["name"] in names
        ]  # fmt: skip
        if not mine:
            continue
        claim = r.choice(mine)
        if r.random() < 0.5:
            claim["status"] = {**claim.get("status", {}), "phase": "Lost"}
        else:
            claim["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"


def _odd_attachments(r: random.Random, items: list[dict[str, Any]]) -> None:
    nodes = [i["metadata"]["name"] for i in items if i["kind"] == "Node"]
    pvs = [i for i in items if i["kind"] == "PersistentVolume"]
    for k in range(r.randint(1, 3)):
        what = r.choice(["inline", "missing", "non-csi"])
        source: dict[str, Any]
        if what == "inline":
            source = {"inlineVolumeSpec": {"csi": {"driver": "csi.example.com",
                                                   "volumeHandle": f"inline-{k}"}}}  # fmt: skip
        elif what == "missing":
            source = {"persistentVolumeName": f"pv-gone-{k}"}
        else:
            others = [p for p in pvs if "csi" not in p["spec"]]
            if not others:
                continue
            source = {"persistentVolumeName": r.choice(others)["metadata"]["name"]}
        items.append({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
                      "metadata": {"name": f"odd-{k}"},
                      "spec": {"attacher": r.choice(["csi.example.com", "pd.csi.storage.gke.io"]),
                               "nodeName": r.choice(nodes), "source": source},
                      "status": {"attached": True}})  # fmt: skip


def _config(r: random.Random, request: dict[str, Any]) -> None:
    profile: dict[str, Any] = {"schedulerName": "default-scheduler"}
    what = r.choice(["disable", "disable", "prefilter", "scoring", "scoring"])
    if what == "disable":
        name = r.choice(VOLUME_PLUGINS)
        profile["plugins"] = {"multiPoint": {"disabled": [{"name": name}]}}
    elif what == "prefilter":
        name = r.choice(["VolumeZone", "VolumeRestrictions"])
        profile["plugins"] = {"preFilter": {"disabled": [{"name": name}]}}
    else:
        gates = request.get("featureGates", {})
        request["featureGates"] = {**gates, "StorageCapacityScoring": True}
        args: dict[str, Any] = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "VolumeBindingArgs",
            "bindTimeoutSeconds": 600,
        }
        if r.random() < 0.5:
            low, high = r.choice([(0, 10), (10, 0), (3, 7)])
            args["shape"] = [{"utilization": 0, "score": low}, {"utilization": 100, "score": high}]
        profile["pluginConfig"] = [{"name": "VolumeBinding", "args": args}]
        _to_score(r, request)
    request["config"] = _configuration(profile)


def _to_score(r: random.Random, request: dict[str, Any]) -> None:
    """Give VolumeBinding's Score (StorageCapacityScoring on) something to group by class: a
    claim of the ``capacity`` class to provision where a CSIStorageCapacity per node says
    how much is left (its driver tracking capacity), and at times a claim of the
    ``standard`` class a free PersistentVolume matches (a static binding)."""
    items = cluster_items(request)
    pod = request["pod"]
    ns = pod["metadata"].get("namespace", "default")
    nodes = [i for i in items if i["kind"] == "Node"]
    names = {(i["kind"], i["metadata"]["name"]) for i in items}
    if ("StorageClass", "capacity") not in names:
        items.append({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                      "metadata": {"name": "capacity"}, "provisioner": "csi.example.com",
                      "reclaimPolicy": "Delete",
                      "volumeBindingMode": "WaitForFirstConsumer"})  # fmt: skip
    driver = next((i for i in items if i["kind"] == "CSIDriver"
                   and i["metadata"]["name"] == "csi.example.com"), None)  # fmt: skip
    if driver is None:
        driver = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                  "metadata": {"name": "csi.example.com"},
                  "spec": {"attachRequired": False}}  # fmt: skip
        items.append(driver)
    driver["spec"]["storageCapacity"] = True
    # One CSIStorageCapacity per node: where several have room, upstream's Score takes the
    # first its lister returns (Go map order), so the score would be upstream's coin toss.
    items[:] = [i for i in items if i["kind"] != "CSIStorageCapacity"
                or i["storageClassName"] != "capacity"]  # fmt: skip
    for k, node in enumerate(nodes):
        host = node["metadata"]["name"]
        items.append({"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                      "metadata": {"name": f"score-{k}", "namespace": "kube-system"},
                      "storageClassName": "capacity",
                      "nodeTopology": {"matchLabels": {"kubernetes.io/hostname": host}},
                      "capacity": r.choice(["10Gi", "20Gi", "100Gi"])})  # fmt: skip
    vols = pod["spec"].setdefault("volumes", [])
    for j in range(r.randint(1, 2)):
        claim = _claim(ns, f"scored-{j}", "capacity")
        claim["spec"]["resources"]["requests"]["storage"] = r.choice(["1Gi", "5Gi", "10Gi"])
        items.append(claim)
        vols.append({"name": f"scored-{j}", "persistentVolumeClaim": {"claimName": f"scored-{j}"}})
    if nodes and r.random() < 0.5:
        source = {"csi": {"driver": "pd.csi.storage.gke.io", "volumeHandle": "static-0"}}
        pv = _pv(r, "pv-static", source, "standard", nodes)
        pv["spec"]["capacity"]["storage"] = r.choice(["5Gi", "50Gi"])
        if ("StorageClass", "standard") not in names:
            items.append({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                          "metadata": {"name": "standard"},
                          "provisioner": "pd.csi.storage.gke.io", "reclaimPolicy": "Delete",
                          "volumeBindingMode": "WaitForFirstConsumer"})  # fmt: skip
        items.extend([pv, _claim(ns, "static", "standard")])
        vols.append({"name": "static", "persistentVolumeClaim": {"claimName": "static"}})


def _configuration(profile: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "percentageOfNodesToScore": 100,
        "profiles": [copy.deepcopy(profile)],
    }


def _unmigrated_classes(
    r: random.Random, items: list[dict[str, Any]], incoming: list[dict[str, Any]]
) -> None:
    """StorageClasses of in-tree provisioners CSI migration knows but whose migration the
    volume plugins never turn on (Azure File, vSphere), and unbound claims of them."""
    for k, (cls, provisioner) in enumerate(
        [("azure-file", "kubernetes.io/azure-file"), ("vsphere", "kubernetes.io/vsphere-volume")]
    ):
        items.append({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                      "metadata": {"name": cls}, "provisioner": provisioner,
                      "reclaimPolicy": "Delete",
                      "volumeBindingMode": "WaitForFirstConsumer"})  # fmt: skip
        for j, pod in enumerate(incoming):
            if r.random() < 0.6:
                ns = pod["metadata"].get("namespace", "default")
                name = f"{cls}-{j}-{k}"
                items.append(_claim(ns, name, cls))
                pod["spec"].setdefault("volumes", []).append(
                    {"name": name, "persistentVolumeClaim": {"claimName": name}}
                )


def _other_annotations(r: random.Random, items: list[dict[str, Any]]) -> None:
    """CSINodes with annotations but no migrated-plugins one (or an empty one)."""
    for item in items:
        if item["kind"] == "CSINode" and r.random() < 0.5:
            other = {"example.com/owner": "ops"}
            if r.random() < 0.3:
                other[MIGRATED] = ""
            item["metadata"]["annotations"] = other


# A static PersistentVolume's source per class (storage_cases.CLASSES' provisioners).
STATIC_SOURCES: dict[str, tuple[str, str]] = {
    "standard": ("csi", "pd.csi.storage.gke.io"),
    "ebs": ("csi", "ebs.csi.aws.com"),
    "capacity": ("csi", "csi.example.com"),
    "local": ("local", ""),
    "gce-intree": ("gcePersistentDisk", ""),
}
HOSTNAME = "kubernetes.io/hostname"


def _affinity(key: str, values: list[str]) -> dict[str, Any]:
    """A PersistentVolume's node affinity: ``key`` in ``values``."""
    expr = {"key": key, "operator": "In", "values": values}
    return {"required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}


def static_volumes(stream: str, request: dict[str, Any]) -> None:
    """In about half the schedule cases, an Available PersistentVolume that fits one or two
    of the unbound WaitForFirstConsumer claims, each used by one submitted Pod (its class, size,
    access modes, a selector's labels; a local one on one node, a zonal one now and then
    pinned to one zone): VolumeBinding's Filter matches it, Reserve assumes it and PreBind
    writes its claimRef (the static binding the PV controller completes, which the drawn
    PVs rarely allow: a claim's class, size and modes seldom meet a free PV's).  Drawn before
    :func:`volume_faults`, which may then name the new PV."""
    r = random.Random(stream)
    if r.random() >= 0.5:
        return
    items = request["cluster"]["items"]
    modes = {
        i["metadata"]["name"]: i.get("volumeBindingMode")
        for i in items
        if i["kind"] == "StorageClass"
    }
    users: dict[tuple[str, str], int] = {}  # (namespace, claim) -> submitted Pods using it
    for pod in request["pods"]:
        ns = pod["metadata"].get("namespace", "default")
        for vol in pod["spec"].get("volumes", []):
            if "persistentVolumeClaim" in vol:
                key = (ns, vol["persistentVolumeClaim"]["claimName"])
            elif "ephemeral" in vol:
                key = (ns, f"{pod['metadata']['name']}-{vol['name']}")
            else:
                continue
            users[key] = users.get(key, 0) + 1
    # A claim one submitted Pod uses: where several compete for it and its PV's write is
    # refused, which of them meets the other assumed is upstream's timing (docs/fidelity.md,
    # "VolumeBinding's binding cycle under faults": the residual).
    claims = [
        i
        for i in items
        if i["kind"] == "PersistentVolumeClaim"
        and users.get((i["metadata"].get("namespace", "default"), i["metadata"]["name"])) == 1
        and not i["spec"].get("volumeName")
        and i["spec"].get("storageClassName") in STATIC_SOURCES
        and modes.get(i["spec"]["storageClassName"]) == "WaitForFirstConsumer"
        and not i["metadata"].get("deletionTimestamp")
    ]
    nodes = [i["metadata"]["name"] for i in items if i["kind"] == "Node"]
    zones = sorted(
        {i["metadata"].get("labels", {}).get(ZONE, "") for i in items if i["kind"] == "Node"} - {""}
    )
    for k, claim in enumerate(r.sample(claims, min(len(claims), r.randint(1, 2)))):
        cls = claim["spec"]["storageClassName"]
        source, driver = STATIC_SOURCES[cls]
        spec: dict[str, Any] = {
            "capacity": {"storage": claim["spec"]["resources"]["requests"]["storage"]},
            "accessModes": list(claim["spec"]["accessModes"]),
            "persistentVolumeReclaimPolicy": "Delete",
            "volumeMode": claim["spec"].get("volumeMode", "Filesystem"),
            "storageClassName": cls,
        }
        if source == "csi":
            spec["csi"] = {"driver": driver, "volumeHandle": f"static-{k}", "fsType": "ext4"}
            if zones and r.random() < 0.3:
                spec["nodeAffinity"] = _affinity(ZONE, [r.choice(zones)])
        elif source == "local":
            spec["local"] = {"path": f"/mnt/static/{k}"}
            spec["nodeAffinity"] = _affinity(HOSTNAME, [r.choice(nodes)] if nodes else ["none"])
        else:
            spec["gcePersistentDisk"] = {"pdName": f"static-{k}", "fsType": "ext4"}
        labels = dict((claim["spec"].get("selector") or {}).get("matchLabels") or {})
        meta: dict[str, Any] = {"name": f"pv-static-{k}"}
        if labels:
            meta["labels"] = labels
        items.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": meta,
                "spec": spec,
                "status": {"phase": "Available"},
            }
        )


PV_FAULTS = ["refuseUpdate", "resetClaimRef", "bindLater"]
PVC_FAULTS = ["refuseUpdate", "failProvisioning", "failProvisioning", "bindLater"]
SELECTED_NODE = "volume.kubernetes.io/selected-node"
PROVISIONER_ANN = "volume.kubernetes.io/storage-provisioner"


def volume_faults(stream: str, request: dict[str, Any]) -> None:
    """Declare faults of PreBind writes on the unbound claims a schedule request's Pods use
    and the unbound PVs of their classes (module docstring): one kind per case for each, on
    up to three PVs and two claims."""
    r = random.Random(stream)
    if r.random() >= 0.5:
        return
    items = request["cluster"]["items"]
    named = set()  # (namespace, claim) the submitted Pods use
    for pod in request["pods"]:
        ns = pod["metadata"].get("namespace", "default")
        for vol in pod["spec"].get("volumes", []):
            if "persistentVolumeClaim" in vol:
                named.add((ns, vol["persistentVolumeClaim"]["claimName"]))
            elif "ephemeral" in vol:
                named.add((ns, f"{pod['metadata']['name']}-{vol['name']}"))
    claims = [
        i
        for i in items
        if i["kind"] == "PersistentVolumeClaim"
        and (i["metadata"].get("namespace", "default"), i["metadata"]["name"]) in named
        and not i["spec"].get("volumeName")
        and SELECTED_NODE not in (i["metadata"].get("annotations") or {})
    ]
    classes = {c["spec"].get("storageClassName") for c in claims}
    pvs = [
        i
        for i in items
        if i["kind"] == "PersistentVolume"
        and "claimRef" not in i["spec"]
        and i["spec"].get("storageClassName") in classes
    ]
    faults: dict[str, str] = {}
    pv_fault, pvc_fault = r.choice(PV_FAULTS), r.choice(PVC_FAULTS)
    for pv in r.sample(pvs, min(len(pvs), r.randint(1, 3))):
        faults[f"PersistentVolume/{pv['metadata']['name']}"] = pv_fault
    for claim in r.sample(claims, min(len(claims), r.randint(1, 2))):
        meta = claim["metadata"]
        faults[f"PersistentVolumeClaim/{meta.get('namespace', 'default')}/{meta['name']}"] = (
            pvc_fault
        )
        if r.random() < 0.5:
            meta.setdefault("annotations", {})[PROVISIONER_ANN] = "pd.csi.storage.gke.io"
    if faults:
        request["volumeFaults"] = faults
