"""Generated storage cases for the differential comparison with upstream.

``storage_case(seed, index)`` builds one explain request ``{"cluster", "pod", "config"}``
from a private ``random.Random`` (its own stream: the default family's cases are unchanged)
over the objects upstream's four volume plugins read (VolumeRestrictions, NodeVolumeLimits,
VolumeBinding, VolumeZone): nodes in zones and regions (the GA and the beta topology
labels); StorageClasses of CSI, in-tree (migrated) and no-provisioner kinds, ``Immediate``
and ``WaitForFirstConsumer``, some with ``allowedTopologies``; CSIDrivers with and without
``attachRequired`` and ``storageCapacity``; CSINodes with per-driver ``allocatable.count``,
topology keys and the migrated-plugins annotation; PersistentVolumes (zonal CSI volumes with
node affinity, node-local volumes, in-tree ``gcePersistentDisk`` / ``awsElasticBlockStore``
volumes with zone labels, Available, Bound and Released); claims bound as the PV controller
leaves them (``volumeName``, the bind-completed annotations, ``status`` Bound with capacity
and access modes), unbound, pre-bound, bound to a missing volume, with selectors,
ReadWriteOncePod; CSIStorageCapacity per zone; VolumeAttachments; running Pods using claims
(RWOP ones among them, of lower priority: preemption) and in-tree disks; and an incoming Pod
with claims, generic ephemeral volumes (their claim created, not yet, or not owned by it),
inline in-tree disks and CSI ephemeral volumes.

``storage_schedule_case(seed, index)`` is the ``kubesched.schedule`` form: one node
(upstream breaks ties at random), 2-5 Pods submitted at once that share and compete for
claims (RWOP, attach limits, the static volumes a ``WaitForFirstConsumer`` claim may bind,
provisioning), not preempting; kube-oracle's PV controller completes each PreBind
(``oracle/internal/oracle/pvcontroller.go``), or fails it as the case's ``volumeFaults``
declare (``storage_extras.volume_faults``).
"""

from __future__ import annotations

import random
from typing import Any

from lived_in import lived_in_pods
from storage_extras import release_storage, static_volumes, storage_extras, volume_faults

ZONES = [
    "us-east1-b",
    "us-east1-c",
    "us-west1-a",
]  # GCE-style: the in-tree PD translation parses them
REGIONS = {"us-east1-b": "us-east1", "us-east1-c": "us-east1", "us-west1-a": "us-west1"}
ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
BETA_ZONE, BETA_REGION = (
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
)
HOST = "kubernetes.io/hostname"
PD, EBS, CSI = "pd.csi.storage.gke.io", "ebs.csi.aws.com", "csi.example.com"
NAMESPACES = ["default", "team-a"]
MIGRATED = "storage.alpha.kubernetes.io/migrated-plugins"
CLASSES: dict[str, tuple[str, str]] = {
    # name: (provisioner, volumeBindingMode)
    "standard": (PD, "WaitForFirstConsumer"),
    "immediate": (CSI, "Immediate"),
    "local": ("kubernetes.io/no-provisioner", "WaitForFirstConsumer"),
    "gce-intree": ("kubernetes.io/gce-pd", "WaitForFirstConsumer"),
    "ebs": (EBS, "WaitForFirstConsumer"),
    "capacity": (CSI, "WaitForFirstConsumer"),
}
SIZES = ["1Gi", "5Gi", "10Gi", "50Gi", "100Gi"]
GI = {s: int(s[:-2]) for s in SIZES}


def storage_case(seed: int, index: int, version: str | None = None) -> dict[str, Any]:
    """The ``index``-th storage explain case of ``seed`` (at Kubernetes ``version``: what
    it adds is drawn last, ``storage_extras.release_storage``)."""
    gen = _Gen(random.Random(f"storage/{seed}/{index}"))
    request = gen.request(gen.r.randint(1, 6))
    lived_in_pods(f"storage-lived/{seed}/{index}", request)  # a stream of its own, drawn last
    storage_extras(f"storage-extras/{seed}/{index}", request)  # likewise, after it
    release_storage(f"storage-release/{seed}/{index}", request, version)  # and after that
    return request


def storage_schedule_case(seed: int, index: int, version: str | None = None) -> dict[str, Any]:
    """The ``index``-th storage ``kubesched.schedule`` case of ``seed`` (``version`` as
    :func:`storage_case`'s)."""
    gen = _Gen(random.Random(f"storage-schedule/{seed}/{index}"))
    gen.claims_made = True
    request = gen.request(1)
    first = request.pop("pod")
    made = len(gen.items)
    pods = [first, *(gen.incoming_pod(f"pod-{i}") for i in range(1, gen.r.randint(2, 5)))]
    request["cluster"]["items"] += gen.items[made:]  # their ephemeral claims
    for i, pod in enumerate(pods):
        meta = pod["metadata"]
        old = meta["name"]
        meta["name"], meta["uid"] = f"pod-{i}", f"uid-pod-{i}"
        meta["creationTimestamp"] = f"2026-01-01T03:00:{i:02d}Z"
        pod["spec"]["preemptionPolicy"] = "Never"
        pod.pop("status", None)
        _rename_ephemeral(request["cluster"]["items"], old, meta)
    request["pods"] = pods
    lived_in_pods(f"storage-schedule-lived/{seed}/{index}", request)  # drawn last
    static_volumes(f"storage-static/{seed}/{index}", request)  # after it, a stream of its own
    volume_faults(f"storage-faults/{seed}/{index}", request)  # likewise, after it
    release_storage(f"storage-schedule-release/{seed}/{index}", request, version)  # last
    return request


def _rename_ephemeral(items: list[dict[str, Any]], old: str, meta: dict[str, Any]) -> None:
    """Keep the ephemeral claims created for a Pod renamed from ``old`` its claims (named
    ``<pod>-<volume>``; owned by it, or someone else's)."""
    for item in items:
        if item["kind"] != "PersistentVolumeClaim":
            continue
        name = item["metadata"]["name"]
        if name.startswith(old + "-scratch-"):
            item["metadata"]["name"] = meta["name"] + name[len(old) :]
        for ref in item["metadata"].get("ownerReferences", []):
            if ref["name"] == old and ref["uid"] == "uid-" + old:
                ref["name"], ref["uid"] = meta["name"], meta["uid"]


class _Gen:
    def __init__(self, rnd: random.Random) -> None:
        self.r = rnd
        self.items: list[dict[str, Any]] = []
        self.nodes: list[dict[str, Any]] = []
        self.claims: list[dict[str, Any]] = []
        self.pvs: list[dict[str, Any]] = []
        self.held: dict[str, Any] | None = None  # an RWOP claim a running Pod holds
        self.racy: set[str] = set()  # unbound claims an incoming Pod took
        # kubesched.schedule runs the ephemeral volume controller and kube-oracle does not:
        # its cases have every ephemeral claim made already (as that controller makes it)
        self.claims_made = False

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def pick(self, seq: list[Any]) -> Any:
        return seq[self.r.randrange(len(seq))]

    def request(self, n_nodes: int) -> dict[str, Any]:
        for i in range(n_nodes):
            self.node(i)
        for name in CLASSES:
            if self.chance(0.95):
                self.items.append(self.storage_class(name))
        self.drivers()
        for node in self.nodes:
            if self.chance(0.8):
                self.items.append(self.csi_node(node))
        for i in range(self.r.randint(0, 8)):
            self.volume(i)
        for i in range(self.r.randint(1, 8)):
            self.claim(i)
        if self.chance(0.4):
            self.capacities()
        running = [self.running_pod(i) for i in range(self.r.randint(0, 5))]
        if self.chance(0.2):
            running.append(self.rwop_holder(len(running)))
        self.attachments()
        incoming = self.incoming_pod("incoming")
        items = [*self.items, *running]
        if self.chance(0.3):
            _stored_status(self, items)
        return {
            "cluster": {"apiVersion": "v1", "kind": "List", "items": items},
            "pod": incoming,
            "config": None,
        }

    # --- nodes and drivers -----------------------------------------------------------

    def node(self, i: int) -> None:
        name = f"node-{i}"
        zone = self.pick(ZONES)
        labels = {HOST: name}
        if self.chance(0.85):
            labels[ZONE] = zone
            if self.chance(0.6):
                labels[REGION] = REGIONS[zone]
        if self.chance(0.2):
            labels[BETA_ZONE] = zone
            labels[BETA_REGION] = REGIONS[zone]
        alloc = {"cpu": "8", "memory": "16Gi", "pods": "110"}
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}
        node["status"] = {"allocatable": alloc, "capacity": dict(alloc)}
        self.nodes.append(node)
        self.items.append(node)

    def storage_class(self, name: str) -> dict[str, Any]:
        provisioner, mode = CLASSES[name]
        sc: dict[str, Any] = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name},
            "provisioner": provisioner,
            "reclaimPolicy": self.pick(["Delete", "Retain"]),
            "volumeBindingMode": mode,
        }
        if name == "standard" and self.chance(0.2):
            sc["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
        if provisioner != "kubernetes.io/no-provisioner" and self.chance(0.3):
            zones = self.r.sample(ZONES, self.r.randint(1, 2))
            sc["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE, "values": zones}]}]
        if self.chance(0.2):
            sc["allowVolumeExpansion"] = True
            sc["parameters"] = {"type": self.pick(["pd-ssd", "gp3"])}
        return sc

    def drivers(self) -> None:
        for name in (PD, EBS, CSI):
            if not self.chance(0.75):
                continue
            spec: dict[str, Any] = {"attachRequired": name != CSI or self.chance(0.5)}
            if name == CSI:
                spec["storageCapacity"] = self.chance(0.7)
            spec["podInfoOnMount"] = False
            spec["volumeLifecycleModes"] = ["Persistent"] + (["Ephemeral"] if name == CSI else [])
            self.items.append(
                {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                 "metadata": {"name": name}, "spec": spec}
            )  # fmt: skip

    def csi_node(self, node: dict[str, Any]) -> dict[str, Any]:
        name = node["metadata"]["name"]
        drivers = []
        for driver in (PD, EBS, CSI):
            if not self.chance(0.7):
                continue
            d: dict[str, Any] = {"name": driver, "nodeID": f"{name}-id"}
            if self.chance(0.8):
                d["topologyKeys"] = [ZONE] if driver != CSI else [HOST]
            if self.chance(0.8):
                d["allocatable"] = {"count": self.r.randint(0, 4)}
            drivers.append(d)
        meta: dict[str, Any] = {"name": name}
        if self.chance(0.6):
            meta["annotations"] = {
                MIGRATED: ",".join(
                    self.r.sample(
                        ["kubernetes.io/gce-pd", "kubernetes.io/aws-ebs"], self.r.randint(1, 2)
                    )
                )
            }
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Node", "name": name, "uid": f"uid-node-{name}"}
        ]
        return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": meta,
                "spec": {"drivers": drivers}}  # fmt: skip

    # --- volumes and claims ----------------------------------------------------------

    def volume(self, i: int) -> None:
        """A PersistentVolume: zonal CSI, node-local, or in-tree with zone labels."""
        name = f"pv-{i}"
        kind = self.pick(["zonal", "zonal", "local", "gce", "ebs"])
        size = self.pick(SIZES)
        spec: dict[str, Any] = {
            "capacity": {"storage": size},
            "accessModes": [
                self.pick(["ReadWriteOnce", "ReadWriteOnce", "ReadWriteOncePod", "ReadOnlyMany"])
            ],
            "persistentVolumeReclaimPolicy": self.pick(["Delete", "Retain"]),
            "volumeMode": "Filesystem",
        }
        meta: dict[str, Any] = {"name": name, "labels": {"tier": self.pick(["gold", "silver"])}}
        zone = self.pick(ZONES)
        if kind == "zonal":
            spec["csi"] = {
                "driver": self.pick([PD, EBS]),
                "volumeHandle": f"vol-{i}",
                "fsType": "ext4",
            }
            spec["storageClassName"] = self.pick(["standard", "ebs", "immediate"])
            spec["nodeAffinity"] = _affinity(ZONE, self.r.sample(ZONES, self.r.randint(1, 2)))
        elif kind == "local":
            node = self.pick(self.nodes)["metadata"]["name"]
            if self.chance(0.5):
                spec["local"] = {"path": f"/mnt/disks/{i}"}
            else:
                spec["csi"] = {"driver": CSI, "volumeHandle": f"local-{i}"}
            spec["storageClassName"] = self.pick(["local", "capacity"])
            spec["nodeAffinity"] = _affinity(HOST, [node])
        else:
            if kind == "gce":
                spec["gcePersistentDisk"] = {"pdName": f"disk-{i % 3}", "fsType": "ext4"}
                spec["storageClassName"] = "gce-intree"
            else:
                spec["awsElasticBlockStore"] = {"volumeID": f"vol-{i % 3}", "fsType": "ext4"}
                spec["storageClassName"] = "ebs"
            labels = meta["labels"]
            if self.chance(0.8):
                labels[self.pick([ZONE, BETA_ZONE])] = (
                    zone if self.chance(0.8) else "us-east1-b__us-east1-c"
                )
            if self.chance(0.4):
                labels[self.pick([REGION, BETA_REGION])] = REGIONS[zone]
            if self.chance(0.4):
                spec["nodeAffinity"] = _affinity(ZONE, [zone])
        if self.chance(0.1):
            spec.pop("storageClassName")
        pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec}
        pv["status"] = {"phase": "Available"}
        if self.chance(0.1):
            pv["status"] = {"phase": "Released"}
            spec["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": "default",
                                "name": "gone", "uid": "uid-gone"}  # fmt: skip
        self.pvs.append(pv)
        self.items.append(pv)

    def claim(self, i: int) -> None:
        ns = self.pick(NAMESPACES)
        name = f"claim-{i}"
        free = [pv for pv in self.pvs if "claimRef" not in pv["spec"]]
        if free and self.chance(0.6):
            self.items.append(self.bound_claim(ns, name, self.pick(free)))
            return
        self.items.append(self.unbound_claim(ns, name))

    def _claim(
        self, ns: str, name: str, size: str, modes: list[str], cls: str | None
    ) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "accessModes": modes,
            "resources": {"requests": {"storage": size}},
            "volumeMode": "Filesystem",
        }
        if cls is not None:
            spec["storageClassName"] = cls
        meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}"}
        meta["finalizers"] = ["kubernetes.io/pvc-protection"]
        claim = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": meta,
            "spec": spec,
        }
        self.claims.append(claim)
        return claim

    def bound_claim(self, ns: str, name: str, pv: dict[str, Any]) -> dict[str, Any]:
        """A claim bound to ``pv`` as the PV controller leaves both (now and then without the
        bind-completed annotation: pre-bound, not yet fully bound)."""
        size = pv["spec"]["capacity"]["storage"]
        smaller = [s for s in SIZES if GI[s] <= GI[size]]
        claim = self._claim(ns, name, self.pick(smaller), list(pv["spec"]["accessModes"]),
                            pv["spec"].get("storageClassName", ""))  # fmt: skip
        claim["spec"]["volumeName"] = pv["metadata"]["name"]
        meta = claim["metadata"]
        if self.chance(0.92):
            meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes",
                                   "pv.kubernetes.io/bound-by-controller": "yes"}  # fmt: skip
            claim["status"] = {"phase": "Bound", "accessModes": list(pv["spec"]["accessModes"]),
                               "capacity": {"storage": size}}  # fmt: skip
            pv["status"] = {"phase": "Bound"}
        else:
            claim["status"] = {"phase": "Pending"}
        pv["spec"]["claimRef"] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                                  "namespace": ns, "name": name, "uid": meta["uid"]}  # fmt: skip
        if self.chance(0.05):
            claim["spec"]["volumeName"] = "pv-missing"
        return claim

    def unbound_claim(self, ns: str, name: str) -> dict[str, Any]:
        cls = self.pick(["standard", "standard", "local", "local", "capacity", "ebs", "gce-intree"])
        if self.chance(0.12):
            cls = self.pick(["immediate", "missing-class", None, ""])
        mode = self.pick(
            ["ReadWriteOnce", "ReadWriteOnce", "ReadWriteOnce", "ReadWriteOncePod", "ReadOnlyMany"]
        )
        claim = self._claim(ns, name, self.pick(SIZES), [mode], cls)
        if self.chance(0.15):
            claim["spec"]["selector"] = {"matchLabels": {"tier": self.pick(["gold", "silver"])}}
        claim["status"] = {"phase": "Pending"}
        if cls in CLASSES and CLASSES[cls][1] == "WaitForFirstConsumer" and self.chance(0.1):
            node = self.pick(self.nodes)["metadata"]["name"]
            claim["metadata"]["annotations"] = {"volume.kubernetes.io/selected-node": node}
        return claim

    def capacities(self) -> None:
        for j, zone in enumerate(ZONES):
            if not self.chance(0.7):
                continue
            cap: dict[str, Any] = {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSIStorageCapacity",
                "metadata": {"name": f"csisc-{j}", "namespace": "kube-system"},
                "storageClassName": "capacity",
                "nodeTopology": {"matchLabels": {ZONE: zone}},
                "capacity": self.pick(["0", "5Gi", "20Gi", "200Gi"]),
            }
            if self.chance(0.3):
                cap["maximumVolumeSize"] = self.pick(["1Gi", "10Gi"])
            if self.chance(0.1):
                del cap["capacity"]
            self.items.append(cap)

    def attachments(self) -> None:
        """VolumeAttachments of bound CSI volumes (NodeVolumeLimits counts them per node)."""
        for k, pv in enumerate(self.pvs):
            if "csi" in pv["spec"] and self.chance(0.25):
                node = self.pick(self.nodes)["metadata"]["name"]
                driver = pv["spec"]["csi"]["driver"]
                self.items.append({
                    "apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
                    "metadata": {"name": f"csi-{k:04x}"},
                    "spec": {"attacher": driver, "nodeName": node,
                             "source": {"persistentVolumeName": pv["metadata"]["name"]}},
                    "status": {"attached": self.chance(0.8)},
                })  # fmt: skip

    # --- Pods ------------------------------------------------------------------------

    def claim_volumes(self, ns: str, n: int, incoming: bool = False) -> list[dict[str, Any]]:
        """Volumes of up to ``n`` of the namespace's claims.  An incoming Pod does not take a
        claim an earlier one took that is neither fully bound nor ReadWriteOncePod: two Pods
        of one schedule would race for it (the second one's PreBind writes a stale copy,
        gets a Conflict and retries after a backoff in wall-clock time)."""
        mine = [
            c for c in self.claims
            if c["metadata"]["namespace"] == ns and c["metadata"]["name"] not in self.racy
        ]  # fmt: skip
        out = []
        for j, c in enumerate(self.r.sample(mine, min(n, len(mine)))):
            if (
                incoming
                and not _fully_bound(c)
                and "ReadWriteOncePod" not in c["spec"]["accessModes"]
            ):
                self.racy.add(c["metadata"]["name"])
            vol: dict[str, Any] = {
                "name": f"data-{j}",
                "persistentVolumeClaim": {"claimName": c["metadata"]["name"]},
            }
            if self.chance(0.1):
                vol["persistentVolumeClaim"]["readOnly"] = True
            out.append(vol)
        if self.chance(0.05):
            out.append({"name": "lost", "persistentVolumeClaim": {"claimName": "no-such-claim"}})
        return out

    def intree(self) -> dict[str, Any]:
        if self.chance(0.5):
            src: dict[str, Any] = {"gcePersistentDisk": {"pdName": f"disk-{self.r.randint(0, 2)}"}}
            key = "gcePersistentDisk"
        else:
            src = {"awsElasticBlockStore": {"volumeID": f"vol-{self.r.randint(0, 2)}"}}
            key = "awsElasticBlockStore"
        if self.chance(0.3):
            src[key]["readOnly"] = True
        return {"name": f"disk-{self.r.randint(0, 99)}", **src}

    def running_pod(self, i: int) -> dict[str, Any]:
        ns = self.pick(NAMESPACES)
        node = self.pick(self.nodes)["metadata"]["name"]
        volumes = self.claim_volumes(ns, self.pick([0, 0, 1, 2]))
        volumes = [v for v in volumes if v["name"] != "lost"]
        if self.chance(0.2):
            volumes.append(self.intree())
        spec: dict[str, Any] = {
            "nodeName": node,
            "containers": [{"name": "c", "image": "busybox:1.36",
                            "resources": {"requests": {"cpu": "100m"}}}],
            "volumes": volumes,
            "priority": self.pick([0, 10, 100]),
        }  # fmt: skip
        meta = {"name": f"run-{i}", "namespace": ns, "uid": f"uid-run-{i}",
                "creationTimestamp": f"2026-01-01T00:{i:02d}:00Z"}  # fmt: skip
        status: dict[str, Any] = {"phase": "Running", "startTime": meta["creationTimestamp"]}
        if self.chance(0.05):
            status["phase"] = "Succeeded"
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}

    def rwop_holder(self, i: int) -> dict[str, Any]:
        """A running Pod of low priority holding a bound ReadWriteOncePod claim that the
        incoming Pod (of higher priority) also mounts: preemption's victim."""
        k = len(self.pvs)
        self.volume(k)
        pv = self.pvs[-1]
        pv["spec"]["accessModes"] = ["ReadWriteOncePod"]
        pv["spec"].pop("claimRef", None)
        claim = self.bound_claim(self.pick(NAMESPACES), f"held-{k}", pv)
        self.items.append(claim)
        self.held = claim
        pod = self.running_pod(i)
        pod["metadata"]["namespace"] = claim["metadata"]["namespace"]
        pod["spec"]["priority"] = self.pick([0, 10])
        pod["status"]["phase"] = "Running"
        vol = {"name": "held", "persistentVolumeClaim": {"claimName": claim["metadata"]["name"]}}
        pod["spec"]["volumes"] = [v for v in pod["spec"]["volumes"] if v["name"] != "lost"] + [vol]
        return pod

    def incoming_pod(self, name: str) -> dict[str, Any]:
        ns = self.pick(NAMESPACES)
        held, self.held = self.held, None
        if held is not None:
            ns = held["metadata"]["namespace"]
        n = self.pick([0, 1, 1, 2, 3] if held is None else [0, 1])
        volumes = self.claim_volumes(ns, n, incoming=True)
        if held is not None:
            volumes.append(
                {"name": "held", "persistentVolumeClaim": {"claimName": held["metadata"]["name"]}}
            )
        meta = {"name": name, "namespace": ns, "uid": f"uid-{name}"}
        if self.chance(0.25):
            volumes.append(self.ephemeral(ns, name, len(volumes)))
        if self.chance(0.15):
            volumes.append(self.intree())
        if self.chance(0.1):
            volumes.append(
                {"name": "inline", "csi": {"driver": CSI, "volumeAttributes": {"size": "1Gi"}}}
            )
        if self.chance(0.2):
            volumes.append({"name": "scratch", "emptyDir": {}})
        spec: dict[str, Any] = {
            "containers": [{"name": "c", "image": "busybox:1.36",
                            "resources": {"requests": {"cpu": "100m"}}}],
            "volumes": volumes,
        }  # fmt: skip
        if held is not None or self.chance(0.4):
            spec["priority"] = self.pick([100, 1000])
        if self.chance(0.15):
            spec["nodeSelector"] = {ZONE: self.pick(ZONES)}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}

    def ephemeral(self, ns: str, pod: str, j: int) -> dict[str, Any]:
        """A generic ephemeral volume; its claim (``<pod>-<volume>``) created by the
        ephemeral volume controller (owned by the Pod), not yet (not in schedule cases: see
        ``claims_made``), or someone else's."""
        vol = f"scratch-{j}"
        cls = self.pick(["standard", "capacity", "immediate", "local"])
        mode = self.pick(["ReadWriteOnce", "ReadWriteOncePod"])
        size = self.pick(SIZES[:3])
        template = {"spec": {"accessModes": [mode], "storageClassName": cls,
                             "resources": {"requests": {"storage": size}}}}  # fmt: skip
        if self.chance(0.85) or self.claims_made:
            claim = self._claim(ns, f"{pod}-{vol}", size, [mode], cls)
            claim["status"] = {"phase": "Pending"}
            self.claims.remove(claim)  # not for other Pods to mount by name
            if self.chance(0.9):
                claim["metadata"]["ownerReferences"] = [
                    {"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": f"uid-{pod}",
                     "controller": True, "blockOwnerDeletion": True}
                ]  # fmt: skip
            self.items.append(claim)
        return {"name": vol, "ephemeral": {"volumeClaimTemplate": template}}


def _fully_bound(claim: dict[str, Any]) -> bool:
    """Bound as VolumeBinding requires: a volume name and the bind-completed annotation."""
    ann = claim["metadata"].get("annotations", {})
    return bool(claim["spec"].get("volumeName")) and "pv.kubernetes.io/bind-completed" in ann


def _affinity(key: str, values: list[str]) -> dict[str, Any]:
    """A PersistentVolume's node affinity: ``key`` in ``values``."""
    expr = {"key": key, "operator": "In", "values": values}
    return {"required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}


def _stored_status(gen: _Gen, items: list[dict[str, Any]]) -> None:
    """Fields a real cluster's objects carry that the plugins do not read: resource
    versions, creation timestamps, managed annotations, PV finalizers, kubectl's
    last-applied annotation, a claim's storage-provisioner annotations."""
    for k, item in enumerate(items):
        meta = item["metadata"]
        meta.setdefault("resourceVersion", str(1000 + k))
        meta.setdefault("creationTimestamp", "2025-12-01T00:00:00Z")
        if item["kind"] == "PersistentVolume":
            meta["finalizers"] = ["kubernetes.io/pv-protection"]
        if item["kind"] == "PersistentVolumeClaim" and gen.chance(0.5):
            cls = item["spec"].get("storageClassName")
            if cls in CLASSES:
                ann = meta.setdefault("annotations", {})
                ann["volume.kubernetes.io/storage-provisioner"] = CLASSES[cls][0]
                ann["volume.beta.kubernetes.io/storage-provisioner"] = CLASSES[cls][0]
        if gen.chance(0.1):
            meta.setdefault("annotations", {})[
                "kubectl.kubernetes.io/last-applied-configuration"
            ] = "{}"
