"""Generated DynamicResources cases for the differential comparison with upstream.

``dra_case(seed, index)`` builds one request ``{"cluster", "pod", "config"}`` from a private
``random.Random`` (last, what a later release adds, ``oracle/dra_features.py``, then v1.34's
alpha gates, ``oracle/dra_alpha.py``, from a stream of its own): nodes in two zones;
ResourceSlices of two drivers (node-local, for all nodes, for a zone by node selector; pools
of two slices, some incomplete; stale generations; duplicate device names), devices with
string, int, bool and version attributes and memory capacity; DeviceClasses with CEL
selectors (one class sometimes missing); claims already allocated to running Pods (one
shared); and an incoming Pod with direct and template claims (created or not yet) whose
requests use ``exactly`` (ExactCount or All, selectors on attributes, capacity quantities
and versions, now and then one that fails at run time), ``firstAvailable`` alternatives and
``matchAttribute`` constraints.

What real clusters hold besides (``_Gen.as_found``, drawn from a second stream so that the
first stream's draws stay as they were): running Pods' ``status`` (phase, ``startTime``), a
claim still allocated after its Pod finished (``reservedFor`` empty: the incoming Pod may name
it, and PostFilter deallocates it when it keeps the Pod off every node), a monitoring claim
holding a device with admin access (its device stays free for others) and incoming requests
with ``adminAccess``, a shared claim at its 256 consumers (v1.34 still lets another Pod
reserve it: ``resourceclaim.CanBeReserved`` is always true), a claim being deleted (a
finalizer holds it), a template claim the controller decided not to create (a
``resourceClaimStatuses`` entry without a name), allocated claims with ``status.devices``
(conditions and network data, as drivers report them) and allocations without a node
selector (a device reachable from every node), and priorities that make the incoming Pod
preempt the running ones.  ``dra_schedule_case`` submits, now and then, a second Pod after
the first: the same spec (its template claims are its own, its direct claims shared), so the
second waits for the first's allocation in flight, then reserves the shared claim, or
competes for the devices the first took; at v1.34 about half of them declare faults of
DynamicResources' claim writes (``oracle/dra_faults.py``).
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from dra_alpha import alpha_gates
from dra_faults import claim_faults
from dra_features import extended_scoring, fractional_capacity, release_features
from dra_lists import list_attributes
from dra_workload import workload_claims
from lived_in import lived_in_pods

API = "resource.k8s.io/v1"
GPU, NIC = "gpu.example.com", "nic.example.com"
SELECTORS = [
    f'device.attributes["{GPU}"].model == "h100"',
    f'device.attributes["{GPU}"].model != "a100"',
    f'device.capacity["{GPU}"].memory.compareTo(quantity("64Gi")) >= 0',
    f'device.capacity["{GPU}"].memory.isLessThan(quantity("50Gi"))',
    f'device.attributes["{GPU}"].numa == 1',
    f'device.attributes["{GPU}"].driverVersion.isGreaterThan(semver("1.5.0"))',
    f'device.attributes["{GPU}"].index < 2',
    f'device.attributes["{GPU}"].healthy',
    f'device.capacity["{GPU}"].memory == quantity("81920Mi")',
    f'"{GPU}" in device.attributes',
    f'device.attributes["{GPU}"].model.startsWith("h")',
    f'device.attributes["{NIC}"].speed > 100',
]
FINALIZER = "resource.kubernetes.io/delete-protection"
RUNTIME_ERROR = f'device.attributes["{GPU}"].nosuch == "x"'


RESERVED_FOR_MAX = 256
"""Upstream ``resourceapi.ResourceClaimReservedForMaxSize``: consumers of one claim."""


def dra_case(seed: int, index: int, version: str | None = None) -> dict[str, Any]:
    """The ``index``-th DRA case of ``seed``; at ``version`` (1.35+) with what that release's
    DRA adds (``oracle/dra_features.py``, drawn last)."""
    return _case(seed, index, version, "explain")


def _case(seed: int, index: int, version: str | None, verb: str) -> dict[str, Any]:
    gen = _Gen(random.Random(f"dra/{seed}/{index}"), random.Random(f"dra+/{seed}/{index}"))
    request = gen.request()
    release_features(gen.r, request, version, verb)
    alpha_gates(seed, index, request, version, verb)  # v1.34's alpha gates, a stream of its own
    lived_in_pods(f"dra-lived/{seed}/{index}", request, version)  # own stream, drawn last
    list_attributes(seed, index, request, version)  # v1.36+, a stream of its own
    extended_scoring(seed, index, request, version)  # v1.35+, a stream of its own
    fractional_capacity(seed, index, request, version)  # v1.37, a stream of its own, last
    return request


def dra_schedule_case(seed: int, index: int, version: str | None = None) -> dict[str, Any]:
    """``dra_case(seed, index)`` as a ``kubesched.schedule`` case ``{"cluster", "pods",
    "config"}``: its first node only (upstream breaks ties between nodes at random), the
    Pod not preempting, so the binding cycle (Reserve, PreBind writing the allocation, Bind)
    runs on both sides, and no claim being deleted (its Pod would wait at PreEnqueue for
    ever, and upstream's run never settles); 40 % of them submit a second Pod after it
    (:func:`second_pod`), and three in four of those keep every node and send each Pod to a
    node of its own (:func:`_apart`)."""
    request = _case(seed, index, version, "schedule")
    pod = request["pod"]
    pod["spec"]["preemptionPolicy"] = "Never"
    items = request["cluster"]["items"]
    nodes = [x for x in items if x["kind"] == "Node"]
    two = (
        bool(pod["spec"].get("resourceClaims"))
        and random.Random(f"dra2/{seed}/{index}").random() < 0.4
    )
    spread = random.Random(f"dra3/{seed}/{index}")
    apart = two and len(nodes) > 1 and spread.random() < 0.75
    kept = [x for x in items if x["kind"] != "Node" or x is nodes[0] or apart]
    for x in kept:
        if x["kind"] == "ResourceClaim":
            # a claim being deleted gates its Pods for ever: upstream's run never settles
            x["metadata"].pop("deletionTimestamp", None)
    cluster = {"apiVersion": "v1", "kind": "List", "items": kept}
    pods = [pod]
    if two:
        pods.append(second_pod(pod))
    if apart:
        _apart(spread, nodes, pods, kept)
    out = {"cluster": cluster, "pods": pods, "config": request["config"]}
    if "featureGates" in request:
        out["featureGates"] = request["featureGates"]
    workload_claims(seed, index, out, version)  # v1.36+, a stream of its own, drawn last
    claim_faults(seed, index, out, version)  # v1.34, a stream of its own, after it
    return out


def _apart(
    rnd: random.Random,
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    items: list[dict[str, Any]],
) -> None:
    """Each of the two ``pods`` on a node of its own by its ``nodeSelector`` (the first on
    the first node, the second mostly on a node of the same zone), so whether the second may
    join the claims it shares with the first is up to the node selector of the first's
    allocation; half the time every node's slices become its zone's (``nodeSelector``; now
    and then both zones'), so that allocation copies a slice's selector instead of naming the
    node, and half of those times the two Pods share one new claim for a GPU instead of their
    own claims (and containers: one, requesting nothing else); and now and then the
    devices of those slices have ``bindsToNode``."""
    first = nodes[0]["metadata"]
    zone = first["labels"]["zone"]
    others = [x["metadata"] for x in nodes[1:]]
    mates = [m for m in others if m["labels"]["zone"] == zone]
    second = rnd.choice(mates if mates and rnd.random() < 0.75 else others)
    if rnd.random() < 0.5:
        zones = {x["metadata"]["name"]: [x["metadata"]["labels"]["zone"]] for x in nodes}
        if rnd.random() < 0.3:  # a selector every node matches
            zones = {n: ["a", "b"] for n in zones}
        for x in items:
            where = x["spec"].get("nodeName") if x["kind"] == "ResourceSlice" else None
            if where in zones:
                x["spec"] = {k: v for k, v in x["spec"].items() if k != "nodeName"}
                x["spec"]["nodeSelector"] = {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "zone", "operator": "In", "values": zones[where]}]}]}  # fmt: skip
        if rnd.random() < 0.5:
            # the Pods' claims are one they share, for one GPU of any kind (the generated ones
            # keep the first Pod off its node most of the time)
            items.append({"apiVersion": API, "kind": "ResourceClaim",
                "metadata": {"name": "net", "namespace": "default", "uid": "uid-claim-net"},
                "spec": {"devices": {"requests": [
                    {"name": "gpu", "exactly": {"deviceClassName": GPU}}]}}})  # fmt: skip
            for p in pods:
                p.pop("status", None)
                p["spec"]["resourceClaims"] = [{"name": "net", "resourceClaimName": "net"}]
                p["spec"].pop("initContainers", None)
                only = {"name": "c", "image": "app", "resources": {"claims": [{"name": "net"}]}}
                p["spec"]["containers"] = [only]
        if rnd.random() < 0.2:  # devices that bind to the node they are allocated on
            for x in items:
                if x["kind"] == "ResourceSlice" and "nodeSelector" in x["spec"]:
                    for d in x["spec"].get("devices", []):
                        d["bindsToNode"] = True
    for p, m in zip(pods, [first, second], strict=True):
        p["spec"]["nodeSelector"] = {
            **p["spec"].get("nodeSelector", {}), "kubernetes.io/hostname": m["name"]}  # fmt: skip


def second_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """Another Pod of ``pod``'s spec, submitted after it: its direct claims are shared, its
    template claims its own (the resourceclaim controller makes them when it is created)."""
    out = copy.deepcopy(pod)
    out["metadata"] |= {"name": "new2", "uid": "uid-new2"}
    out.pop("status", None)
    return out


class _Gen:
    def __init__(self, rnd: random.Random, extra: random.Random) -> None:
        self.r = rnd
        self.x = extra  # what as_found draws: the first stream's draws stay as they were
        self.items: list[dict[str, Any]] = []

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def request(self) -> dict[str, Any]:
        nodes = [f"n{i}" for i in range(self.r.randint(1, 5))]
        for i, n in enumerate(nodes):
            res = {"cpu": "4", "memory": "16Gi", "pods": "110"}
            self.items.append({"apiVersion": "v1", "kind": "Node", "metadata": {
                "name": n, "labels": {"kubernetes.io/hostname": n, "zone": "ab"[i % 2]}},
                "status": {"allocatable": res, "capacity": res}})  # fmt: skip
        devices: list[tuple[str, str, str, str]] = []  # driver, pool, device, node
        for n in nodes:
            for driver in (GPU, NIC):
                if self.chance(0.75 if driver == GPU else 0.3):
                    devices += self.slices(driver, n, {"nodeName": n})
        if self.chance(0.2):
            devices += self.slices(GPU, "", {"allNodes": True}, pool="fabric")
        if self.chance(0.2):
            sel = {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                ]
            }
            devices += self.slices(GPU, "", {"nodeSelector": sel}, pool="zone-a")
        for name, driver in ((GPU, GPU), (NIC, NIC)):
            if name == NIC and self.chance(0.2):
                continue  # a class the Pod may name and that does not exist
            sels = [f'device.driver == "{driver}"']
            if driver == GPU and self.chance(0.3):
                sels.append(self.r.choice(SELECTORS[:8]))
            self.items.append(
                {
                    "apiVersion": API,
                    "kind": "DeviceClass",
                    "metadata": {"name": name},
                    "spec": {"selectors": [{"cel": {"expression": s}} for s in sels]},
                }
            )
        every = list(devices)
        self.allocated(devices, nodes)
        pod = self.incoming()
        self.as_found(every, devices, nodes, pod)
        return {
            "cluster": {"apiVersion": "v1", "kind": "List", "items": self.items},
            "pod": pod,
            "config": {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "percentageOfNodesToScore": 100,
            },
        }

    def slices(
        self, driver: str, node: str, where: dict[str, Any], pool: str = ""
    ) -> list[tuple[str, str, str, str]]:
        pool = pool or node
        count = 2 if self.chance(0.2) else 1
        published = count if not self.chance(0.15) else 1
        generation = 2 if self.chance(0.15) else 1
        out = []
        for k in range(published):
            devs = []
            # Shared pools stay small: the allocator's search is exponential in the devices
            # a node sees, and upstream gives up after filterTimeout (10 s) with "timed out
            # trying to allocate devices", which kubesched does not model.
            for i in range(self.r.randint(0, 5 if node else 2)):
                name = f"dev-{k}-{i}"  # no duplicates: upstream's answer for an invalid
                # pool depends on Go's map order (whether the search reaches it first)
                devs.append(self.device(driver, name, i))
                out.append((driver, pool, name, node))
            self.items.append(
                {
                    "apiVersion": API,
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{pool}-{driver}-{k}"},
                    "spec": {
                        "driver": driver,
                        "devices": devs,
                        **where,
                        "pool": {
                            "name": pool,
                            "generation": generation,
                            "resourceSliceCount": count,
                        },
                    },
                }
            )
        if generation == 2 and self.chance(0.5):  # a stale generation left behind
            self.items.append(
                {
                    "apiVersion": API,
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{pool}-{driver}-old"},
                    "spec": {
                        "driver": driver,
                        "devices": [self.device(driver, f"old-{i}", i) for i in range(4)],
                        **where,
                        "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
                    },
                }
            )
        return out

    def device(self, driver: str, name: str, i: int) -> dict[str, Any]:
        if driver == NIC:
            return {"name": name, "attributes": {"speed": {"int": self.r.choice([25, 200])}}}
        attrs: dict[str, Any] = {
            "model": {"string": self.r.choice(["a100", "h100"])},
            f"{GPU}/numa": {"int": self.r.randint(0, 1)},
            "index": {"int": i},
            "healthy": {"bool": self.chance(0.8)},
            "driverVersion": {"version": self.r.choice(["1.2.0", "1.10.0", "2.0.0-rc.1"])},
        }
        return {
            "name": name,
            "attributes": attrs,
            "capacity": {"memory": {"value": self.r.choice(["40Gi", "80Gi", "81920Mi"])}},
        }

    def allocated(self, devices: list[tuple[str, str, str, str]], nodes: list[str]) -> None:
        """Claims of running Pods holding some devices (one maybe shared by the new Pod)."""
        self.r.shuffle(devices)
        for k in range(self.r.randint(0, 3)):
            if not devices:
                return
            driver, pool, dev, node = devices.pop()
            node = node or self.r.choice(nodes)
            claim: dict[str, Any] = self.claim(
                f"held-{k}", [{"name": "r", "exactly": {"deviceClassName": driver}}]
            )
            alloc: dict[str, Any] = {
                "devices": {
                    "results": [{"request": "r", "driver": driver, "pool": pool, "device": dev}]
                }
            }
            alloc["nodeSelector"] = {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            }
            claim["status"] = {
                "allocation": alloc,
                "reservedFor": [{"resource": "pods", "name": f"run-{k}", "uid": f"uid-run-{k}"}],
            }
            self.items.append(claim)
            self.items.append(
                self.pod(f"run-{k}", [("c", "resourceClaimName", f"held-{k}")], node=node)
            )

    def as_found(
        self,
        every: list[tuple[str, str, str, str]],
        free: list[tuple[str, str, str, str]],
        nodes: list[str],
        pod: dict[str, Any],
    ) -> None:
        """What real clusters hold besides (the module's docstring), from the second stream.
        ``every``: the devices drawn; ``free``: those no claim holds."""
        x = self.x
        for k, p in enumerate(o for o in self.items if o["kind"] == "Pod"):
            # running, started in order (preemption reprieves the earlier-started first)
            p["status"] = {"phase": "Running", "startTime": f"2026-01-01T00:{k:02d}:00Z"}
        claims = {o["metadata"]["name"]: o for o in self.items if o["kind"] == "ResourceClaim"}
        for c in claims.values():
            alloc = c.get("status", {}).get("allocation")
            if alloc is None:
                continue
            (res,) = alloc["devices"]["results"]
            if res["pool"] == "fabric" and x.random() < 0.5:
                del alloc["nodeSelector"]  # a device every node reaches
            if x.random() < 0.3:
                c["status"]["devices"] = [self.device_status(res)]
        if free and x.random() < 0.3:
            # allocated, its Pod gone: reserved for nobody (PostFilter may deallocate it)
            driver, pool, dev, node = free.pop(x.randrange(len(free)))
            exactly: dict[str, Any] = {"deviceClassName": driver}
            res = {"request": "r", "driver": driver, "pool": pool, "device": dev}
            if x.random() < 0.25:  # a finished debugging Pod's claim
                exactly["adminAccess"] = res["adminAccess"] = True
            claim = self.claim("released", [{"name": "r", "exactly": exactly}])
            alloc = {"devices": {"results": [res]}}
            if node or pool == "zone-a":
                node = node or x.choice(nodes[::2])
                alloc["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node]}]}]}  # fmt: skip
            claim["status"] = {"allocation": alloc}
            claim["metadata"]["finalizers"] = [FINALIZER]
            self.items.append(claim)
            if x.random() < 0.7:
                self.name_claim(pod, "released")
        if every and x.random() < 0.15:
            # a monitoring Pod's claim: admin access to a device others may hold too
            driver, pool, dev, node = x.choice(every)
            node = node or x.choice(nodes)
            req = {"name": "r", "exactly": {"deviceClassName": driver, "adminAccess": True}}
            claim = self.claim("monitor", [req])
            res = {"request": "r", "driver": driver, "pool": pool, "device": dev}
            claim["status"] = {
                "allocation": {"devices": {"results": [res | {"adminAccess": True}]}},
                "reservedFor": [{"resource": "pods", "name": "mon", "uid": "uid-mon"}],
            }
            self.items.append(claim)
            self.items.append(self.pod("mon", [("c", "resourceClaimName", "monitor")], node=node))
        exacts = {id(e): e for e in self.own_exacts(pod)}
        for e in exacts.values():
            if x.random() < 0.08:
                e["adminAccess"] = True
        held = claims.get("held-0")
        if held is not None and x.random() < 0.08:
            # a shared claim at its limit: nobody else may reserve it
            more = RESERVED_FOR_MAX - len(held["status"]["reservedFor"])
            held["status"]["reservedFor"] += [
                {"resource": "pods", "name": f"w-{k}", "uid": f"uid-w-{k}"} for k in range(more)
            ]
            if x.random() < 0.5:
                self.name_claim(pod, "held-0")
        own = [c for n, c in claims.items() if n.startswith("mine-")]
        if own and x.random() < 0.06:
            gone = x.choice(own)["metadata"]
            gone |= {"deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": [FINALIZER]}
        named = {s["name"] for s in pod.get("status", {}).get("resourceClaimStatuses", [])}
        unmade = [
            e["name"]
            for e in pod["spec"].get("resourceClaims", [])
            if "resourceClaimTemplateName" in e and e["name"] not in named
        ]
        if unmade and x.random() < 0.3:
            # the controller decided no claim is needed: an entry without a name
            statuses = pod.setdefault("status", {}).setdefault("resourceClaimStatuses", [])
            statuses.append({"name": x.choice(unmade)})
        erring = any(json.dumps(RUNTIME_ERROR)[1:-1] in json.dumps(o) for o in self.items)
        if x.random() < 0.12 and not erring:
            # a higher priority: the incoming Pod may preempt the running ones (not with a
            # selector that fails at run time: docs/fidelity.md, preemption's Filter errors)
            pod["spec"]["priority"] = 1000
            pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"

    def own_exacts(self, pod: dict[str, Any]) -> list[dict[str, Any]]:
        """The ``exactly`` requests of the claims and templates the incoming Pod names."""
        names = {e.get("resourceClaimName") for e in pod["spec"].get("resourceClaims", [])}
        names |= {e.get("resourceClaimTemplateName") for e in pod["spec"].get("resourceClaims", [])}
        out = []
        for o in self.items:
            if o["kind"] not in ("ResourceClaim", "ResourceClaimTemplate"):
                continue
            if o["metadata"]["name"] not in names and not o["metadata"]["name"].startswith("new-"):
                continue
            if o["metadata"]["name"].startswith("held") or o.get("status", {}).get("allocation"):
                continue
            spec = o["spec"]["spec"] if o["kind"] == "ResourceClaimTemplate" else o["spec"]
            out += [r["exactly"] for r in spec["devices"]["requests"] if "exactly" in r]
        return out

    def name_claim(self, pod: dict[str, Any], claim: str) -> None:
        """The Pod names the existing claim ``claim`` (one more container claim)."""
        entry = f"c{len(pod['spec'].get('resourceClaims', []))}x"
        pod["spec"].setdefault("resourceClaims", []).append(
            {"name": entry, "resourceClaimName": claim}
        )
        pod["spec"]["containers"][0]["resources"]["claims"].append({"name": entry})

    def device_status(self, res: dict[str, str]) -> dict[str, Any]:
        """A driver's report on an allocated device (``status.devices``)."""
        ready = {"type": "Ready", "status": "True", "reason": "Prepared", "message": "",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}  # fmt: skip
        out: dict[str, Any] = {k: res[k] for k in ("driver", "pool", "device")}
        out["conditions"] = [ready]
        if res["driver"] == NIC:
            out["networkData"] = {"interfaceName": "eth1", "ips": ["10.9.0.7/24"]}
        return out

    def claim(
        self,
        name: str,
        requests: list[dict[str, Any]],
        constraints: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        devices: dict[str, Any] = {"requests": requests}
        if constraints:
            devices["constraints"] = constraints
        return {
            "apiVersion": API,
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-claim-{name}"},
            "spec": {"devices": devices},
        }

    def exact(self) -> dict[str, Any]:
        klass = GPU if self.chance(0.8) else NIC
        ex: dict[str, Any] = {"deviceClassName": klass}
        if self.chance(0.15):
            ex["allocationMode"] = "All"
        else:
            ex["count"] = self.r.choice([1, 1, 2, 3])
        if klass == GPU and self.chance(0.5):
            pool = SELECTORS[:-1] + ([RUNTIME_ERROR] * 3 if self.chance(0.3) else [])
            ex["selectors"] = [{"cel": {"expression": self.r.choice(pool)}}]
        elif klass == NIC and self.chance(0.5):
            ex["selectors"] = [{"cel": {"expression": SELECTORS[-1]}}]
        return ex

    def spec_requests(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        requests = []
        for i in range(self.r.randint(1, 2)):
            if self.chance(0.2):
                alts = [{"name": f"alt{j}", **self.exact()} for j in range(2)]
                requests.append({"name": f"req{i}", "firstAvailable": alts})
            else:
                requests.append({"name": f"req{i}", "exactly": self.exact()})
        constraints = []
        every = [requests[i].get("exactly") or a for i in range(len(requests))
                 for a in [None, *requests[i].get("firstAvailable", [])] if a or "exactly" in
                 requests[i]]  # fmt: skip
        # An "All" request under a constraint errs on the first mismatching device, and which
        # device comes first follows Go's map order over pools: upstream's answer is random.
        if self.chance(0.3) and not any(e.get("allocationMode") == "All" for e in every):
            constraints.append(
                {"matchAttribute": f"{GPU}/numa"}
                | ({"requests": [requests[0]["name"]]} if self.chance(0.5) else {})
            )
        return requests, constraints

    def incoming(self) -> dict[str, Any]:
        claims = []
        statuses = []
        for i in range(self.r.randint(0, 2)):
            if self.chance(0.15) and any(o["kind"] == "ResourceClaim" for o in self.items):
                claims.append((f"c{i}", "resourceClaimName", "held-0"))  # shared
                if not any(o["metadata"]["name"] == "held-0" for o in self.items):
                    claims.pop()
                continue
            requests, constraints = self.spec_requests()
            if self.chance(0.5):
                self.items.append(self.claim(f"mine-{i}", requests, constraints))
                claims.append((f"c{i}", "resourceClaimName", f"mine-{i}"))
                continue
            self.items.append(
                {
                    "apiVersion": API,
                    "kind": "ResourceClaimTemplate",
                    "metadata": {"name": f"tmpl-{i}", "namespace": "default"},
                    "spec": {
                        "spec": {
                            "devices": {
                                "requests": requests,
                                **({"constraints": constraints} if constraints else {}),
                            }
                        }
                    },
                }
            )
            claims.append((f"c{i}", "resourceClaimTemplateName", f"tmpl-{i}"))
            if self.chance(0.85):  # the controller made it
                made = self.claim(f"new-c{i}-abcde", requests, constraints)
                made["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod",
                    "name": "new", "uid": "uid-new", "controller": True}]  # fmt: skip
                self.items.append(made)
                statuses.append((f"c{i}", f"new-c{i}-abcde"))
        return self.pod("new", claims, statuses=statuses)

    def pod(
        self,
        name: str,
        claims: list[tuple[str, str, str]],
        node: str = "",
        statuses: list[tuple[str, str]] | None = None,
    ) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "containers": [
                {
                    "name": "c",
                    "image": "app",
                    "resources": {
                        "requests": {"cpu": self.r.choice(["100m", "1", "3"])},
                        "claims": [{"name": c[0]} for c in claims],
                    },
                }
            ]
        }
        if claims:
            spec["resourceClaims"] = [{"name": c[0], c[1]: c[2]} for c in claims]
        if node:
            spec["nodeName"] = node
        out: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": spec,
        }
        if statuses:
            out["status"] = {
                "resourceClaimStatuses": [{"name": a, "resourceClaimName": b} for a, b in statuses]
            }
        return out
