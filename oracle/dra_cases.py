"""Generated DynamicResources cases for the differential comparison with upstream.

``dra_case(seed, index)`` builds one request ``{"cluster", "pod", "config"}`` from a private
``random.Random``: nodes in two zones; ResourceSlices of two drivers (node-local, for all
nodes, for a zone by node selector; pools of two slices, some incomplete; stale
generations; duplicate device names), devices with string, int, bool and version attributes
and memory capacity; DeviceClasses with CEL selectors (one class sometimes missing);
claims already allocated to running Pods (one shared); and an incoming Pod with direct and
template claims (created or not yet) whose requests use ``exactly`` (ExactCount or All,
selectors on attributes, capacity quantities and versions, now and then one that fails at
run time), ``firstAvailable`` alternatives and ``matchAttribute`` constraints.
"""

from __future__ import annotations

import random
from typing import Any

from dra_features import release_features

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
RUNTIME_ERROR = f'device.attributes["{GPU}"].nosuch == "x"'


def dra_case(seed: int, index: int, version: str | None = None) -> dict[str, Any]:
    """The ``index``-th DRA case of ``seed``; at ``version`` (1.35+) with what that release's
    DRA adds (``oracle/dra_features.py``, drawn last)."""
    return _case(seed, index, version, "explain")


def _case(seed: int, index: int, version: str | None, verb: str) -> dict[str, Any]:
    gen = _Gen(random.Random(f"dra/{seed}/{index}"))
    request = gen.request()
    release_features(gen.r, request, version, verb)
    return request


def dra_schedule_case(seed: int, index: int, version: str | None = None) -> dict[str, Any]:
    """``dra_case(seed, index)`` as a ``kubesched.schedule`` case ``{"cluster", "pods",
    "config"}``: its first node only (upstream breaks ties between nodes at random) and the
    Pod not preempting, so the binding cycle (Reserve, PreBind writing the allocation, Bind)
    runs on both sides."""
    request = _case(seed, index, version, "schedule")
    pod = request["pod"]
    pod["spec"]["preemptionPolicy"] = "Never"
    items = request["cluster"]["items"]
    nodes = [x for x in items if x["kind"] == "Node"]
    kept = [x for x in items if x["kind"] != "Node" or x is nodes[0]]
    cluster = {"apiVersion": "v1", "kind": "List", "items": kept}
    out = {"cluster": cluster, "pods": [pod], "config": request["config"]}
    if "featureGates" in request:
        out["featureGates"] = request["featureGates"]
    return out


class _Gen:
    def __init__(self, rnd: random.Random) -> None:
        self.r = rnd
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
        self.allocated(devices, nodes)
        return {
            "cluster": {"apiVersion": "v1", "kind": "List", "items": self.items},
            "pod": self.incoming(),
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
