"""The default family's generator: nodes, running and incoming Pods, the objects beside them
and a configuration, as users write them (``oracle/cases.py`` assembles them into cases)."""

from __future__ import annotations

from typing import Any

from configs import edge_config
from draws import (
    APPS,
    EFFECTS,
    EXT,
    FILTER_PLUGINS,
    IMAGES,
    NAMESPACES,
    SCORE_PLUGINS,
    TAINT_KEYS,
    TIERS,
    ZONES,
    Draw,
)


class Gen(Draw):
    """The main generator's builders over one random source."""

    # --- nodes -----------------------------------------------------------------------

    def node(self, i: int) -> dict[str, Any]:
        name = f"node-{i}"
        labels: dict[str, str] = {}
        if self.chance(0.9):
            labels["kubernetes.io/hostname"] = name
        if self.chance(0.8):
            labels["topology.kubernetes.io/zone"] = self.pick(ZONES)
        if self.chance(0.4):
            labels["tier"] = self.pick(TIERS)
        if self.chance(0.2):
            labels["disk"] = self.pick(["ssd", "hdd"])
        alloc = {
            "cpu": self.pick(["1", "2", "4", "8", "3500m"]),
            "memory": self.pick(["2Gi", "4Gi", "8Gi", "16Gi"]),
            "pods": str(self.pick([3, 10, 110])),
        }
        if self.chance(0.25):
            alloc[EXT] = str(self.r.randint(0, 4))
        if self.chance(0.15):
            alloc["ephemeral-storage"] = self.pick(["10Gi", "100Gi"])
        spec: dict[str, Any] = {}
        if self.chance(0.25):
            spec["taints"] = [self.taint() for _ in range(self.r.randint(1, 2))]
        if self.chance(0.08):
            spec["unschedulable"] = True
        status: dict[str, Any] = {"allocatable": alloc, "capacity": dict(alloc)}
        if self.chance(0.3):
            status["images"] = [
                {"names": [img], "sizeBytes": self.pick([50, 300, 900]) * 1024 * 1024}
                for img in self.r.sample(IMAGES, self.r.randint(1, 2))
            ]
        node = {"apiVersion": "v1", "kind": "Node", "spec": spec, "status": status}
        node["metadata"] = {"name": name, "labels": labels}
        return node

    def taint(self) -> dict[str, Any]:
        t = {"key": self.pick(TAINT_KEYS), "effect": self.pick(EFFECTS)}
        if self.chance(0.7):
            t["value"] = self.pick(["true", "x"])
        return t

    # --- Pods ------------------------------------------------------------------------

    def labels(self) -> dict[str, str]:
        out = {"app": self.pick(APPS)}
        if self.chance(0.4):
            out["tier"] = self.pick(TIERS)
        if self.chance(0.3):
            out["version"] = self.pick(["v1", "v2"])
        return out

    def resources(self, big: bool = False) -> dict[str, Any]:
        req: dict[str, str] = {}
        if self.chance(0.85):
            req["cpu"] = self.pick(["100m", "250m", "500m", "1", "2"] + (["3", "6"] if big else []))
        if self.chance(0.75):
            req["memory"] = self.pick(["128Mi", "512Mi", "1Gi", "3Gi"] + (["10Gi"] if big else []))
        if self.chance(0.1):
            req[EXT] = str(self.r.randint(1, 2))
        out: dict[str, Any] = {}
        if req and self.chance(0.9):
            out["requests"] = req
        elif req:
            out["limits"] = req  # requests default to limits
        return out

    def container(self, name: str, big: bool = False) -> dict[str, Any]:
        c: dict[str, Any] = {"name": name, "image": self.pick(IMAGES)}
        res = self.resources(big)
        if res:
            c["resources"] = res
        if self.chance(0.12):
            port: dict[str, Any] = {"containerPort": 8080, "hostPort": self.pick([8080, 9090])}
            if self.chance(0.3):
                port["protocol"] = "UDP"
            c["ports"] = [port]
        return c

    def pod_spec(self, big: bool = False) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "containers": [self.container(f"c{i}", big) for i in range(self.r.randint(1, 2))]
        }
        if self.chance(0.15):
            init = self.container("init", big)
            init.pop("ports", None)
            if self.chance(0.5):
                init["restartPolicy"] = "Always"  # a sidecar
            spec["initContainers"] = [init]
        if self.chance(0.05):
            spec["overhead"] = {"cpu": "100m", "memory": "64Mi"}
        if self.chance(0.3):
            spec["priority"] = self.pick([0, 10, 100, 1000])
        return spec

    def running_pod(self, i: int, nodes: list[str]) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "name": f"run-{i}",
            "namespace": self.pick(NAMESPACES),
            "labels": self.labels(),
            "uid": f"uid-run-{i}",
            "creationTimestamp": f"2026-01-01T00:{i:02d}:00Z",
        }
        spec = self.pod_spec()
        spec["nodeName"] = self.pick(nodes) if self.chance(0.95) else "gone-node"
        if self.chance(0.15):
            spec["affinity"] = {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [self.pod_term(required=True)]
                }
            }
        elif self.chance(0.1):
            spec["affinity"] = {
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": self.r.randint(1, 100),
                            "podAffinityTerm": self.pod_term(required=False),
                        }
                    ]
                }
            }
        if self.chance(0.06):
            meta["deletionTimestamp"] = "2026-01-01T01:00:00Z"
        status: dict[str, Any] = {"phase": "Running", "startTime": meta["creationTimestamp"]}
        if self.chance(0.04):
            status["phase"] = self.pick(["Succeeded", "Failed"])
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}

    def selector(self) -> dict[str, Any]:
        if self.chance(0.75):
            return {"matchLabels": {"app": self.pick(APPS)}}
        op = self.pick(["In", "NotIn", "Exists", "DoesNotExist"])
        expr: dict[str, Any] = {"key": self.pick(["app", "tier"]), "operator": op}
        if op in ("In", "NotIn"):
            expr["values"] = self.r.sample(APPS + TIERS, self.r.randint(1, 2))
        return {"matchExpressions": [expr]}

    def pod_term(self, required: bool) -> dict[str, Any]:
        key = "kubernetes.io/hostname" if self.chance(0.6) else "topology.kubernetes.io/zone"
        term: dict[str, Any] = {"labelSelector": self.selector(), "topologyKey": key}
        if self.chance(0.2):
            term["namespaces"] = self.r.sample(NAMESPACES, self.r.randint(1, 2))
        if self.chance(0.15):
            term["namespaceSelector"] = (
                {} if self.chance(0.5) else {"matchLabels": {"team": self.pick(["a", "b"])}}
            )
        if self.chance(0.1) and not required:
            term["matchLabelKeys"] = ["version"]
        return term

    def node_affinity(self, nodes: list[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.chance(0.6):
            term: dict[str, Any] = {}
            if self.chance(0.7):
                op = self.pick(["In", "NotIn", "Exists", "DoesNotExist"])
                expr: dict[str, Any] = {"key": self.pick(["topology.kubernetes.io/zone", "tier"])}
                expr["operator"] = op
                if op in ("In", "NotIn"):
                    expr["values"] = self.r.sample(ZONES + TIERS, self.r.randint(1, 2))
                term["matchExpressions"] = [expr]
            if not term or self.chance(0.3):
                names = [*nodes, "ghost-node"]
                field = {"key": "metadata.name", "operator": "In"}
                field["values"] = [self.pick(names)]  # type: ignore[assignment]  # the API allows one
                term["matchFields"] = [field]
            out["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [term]}
        if not out or self.chance(0.4):
            out["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {
                    "weight": self.r.randint(1, 100),
                    "preference": {
                        "matchExpressions": [
                            {
                                "key": self.pick(["tier", "disk", "topology.kubernetes.io/zone"]),
                                "operator": "In",
                                "values": self.r.sample(TIERS + ZONES + ["ssd"], 2),
                            }
                        ]
                    },
                }
                for _ in range(self.r.randint(1, 2))
            ]
        return out

    def spread(self) -> dict[str, Any]:
        hard = self.chance(0.5)
        c: dict[str, Any] = {
            "maxSkew": self.r.randint(1, 2),
            "topologyKey": self.pick(["kubernetes.io/hostname", "topology.kubernetes.io/zone"]),
            "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": self.pick(APPS)}},
        }
        if hard and self.chance(0.2):
            c["minDomains"] = self.r.randint(2, 4)
        if self.chance(0.2):
            c["nodeAffinityPolicy"] = self.pick(["Honor", "Ignore"])
        if self.chance(0.2):
            c["nodeTaintsPolicy"] = self.pick(["Honor", "Ignore"])
        if self.chance(0.1):
            c["matchLabelKeys"] = ["version"]
        return c

    def toleration(self) -> dict[str, Any]:
        if self.chance(0.1):
            return {"operator": "Exists"}
        t: dict[str, Any] = {"key": self.pick(TAINT_KEYS)}
        if self.chance(0.5):
            t["operator"] = "Exists"
        else:
            t["value"] = self.pick(["true", "x"])
        if self.chance(0.7):
            t["effect"] = self.pick(EFFECTS)
        return t

    def incoming_pod(self, nodes: list[str]) -> dict[str, Any]:
        labels = self.labels()
        meta: dict[str, Any] = {"name": "incoming", "namespace": self.pick(NAMESPACES)}
        meta["labels"] = labels
        meta["uid"] = "uid-incoming"
        spec = self.pod_spec(big=self.chance(0.3))
        if self.chance(0.2):
            spec["nodeSelector"] = self.pick(
                [{"tier": self.pick(TIERS)}, {"topology.kubernetes.io/zone": self.pick(ZONES)}]
            )
        affinity: dict[str, Any] = {}
        if self.chance(0.3):
            affinity["nodeAffinity"] = self.node_affinity(nodes)
        for kind in ("podAffinity", "podAntiAffinity"):
            if self.chance(0.3):
                terms: dict[str, Any] = {}
                if self.chance(0.5):
                    terms["requiredDuringSchedulingIgnoredDuringExecution"] = [
                        self.pod_term(required=True)
                    ]
                else:
                    terms["preferredDuringSchedulingIgnoredDuringExecution"] = [
                        {"weight": self.r.randint(1, 100), "podAffinityTerm": self.pod_term(False)}
                    ]
                affinity[kind] = terms
        if affinity:
            spec["affinity"] = affinity
        if self.chance(0.4):
            spec["topologySpreadConstraints"] = [self.spread() for _ in range(self.r.randint(1, 2))]
        if self.chance(0.3):
            spec["tolerations"] = [self.toleration() for _ in range(self.r.randint(1, 2))]
        if self.chance(0.05):
            spec["schedulingGates"] = [{"name": "example.com/wait"}]
        if self.chance(0.4):
            spec["priority"] = self.pick([100, 1000, 2000])  # may preempt the running Pods
        if self.chance(0.1):
            spec["preemptionPolicy"] = "Never"
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}

    # --- other objects and the configuration -------------------------------------------

    def replica_set(self, incoming: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, Any]:
        """A ReplicaSet owning the incoming Pod and the running Pods of its app (the system
        default spreading selects by the owner's selector)."""
        ns, app = incoming["metadata"]["namespace"], incoming["metadata"]["labels"]["app"]
        ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "uid-rs"}
        ref["controller"] = True
        for p in [incoming, *pods]:
            if p["metadata"]["namespace"] == ns and p["metadata"]["labels"]["app"] == app:
                p["metadata"]["ownerReferences"] = [ref]
        return {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "rs", "namespace": ns, "uid": "uid-rs"},
            "spec": {
                "selector": {"matchLabels": {"app": app}},
                "template": {
                    "metadata": {"labels": {"app": app}},
                    "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
                },
            },
        }

    def others(self, incoming: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for ns in NAMESPACES:
            labels = {"kubernetes.io/metadata.name": ns}
            if ns != "default":
                labels["team"] = ns[-1]
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": ns, "labels": labels},
                }
            )
        if self.chance(0.3):
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {"name": "svc", "namespace": self.pick(NAMESPACES)},
                    "spec": {"selector": {"app": self.pick(APPS)}},
                }
            )
        return out

    def config(self) -> dict[str, Any] | None:
        if self.chance(0.2):
            return edge_config(self)
        if self.chance(0.4):
            return None
        profile: dict[str, Any] = {"schedulerName": "default-scheduler"}
        plugins: dict[str, Any] = {}
        disabled = self.pick(FILTER_PLUGINS) if self.chance(0.2) else None
        if disabled:
            plugins["multiPoint"] = {"disabled": [{"name": disabled}]}
        if self.chance(0.3):
            # A plugin enabled for Score but disabled at PreScore fails every upstream cycle
            # (its PreScore state is missing) unless its Score computes that state itself:
            # configs.edge_config draws both kinds, so this draw keeps them apart.
            weighted = [p for p in SCORE_PLUGINS if p != disabled]
            plugins["score"] = {
                "enabled": [
                    {"name": p, "weight": self.r.randint(1, 5)}
                    for p in self.r.sample(weighted, self.r.randint(1, 3))
                ]
            }
        if plugins:
            profile["plugins"] = plugins
        if self.chance(0.5):
            strategy = self.pick(["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"])
            scoring: dict[str, Any] = {"type": strategy}
            resources = [
                {"name": "cpu", "weight": self.r.randint(1, 3)},
                {"name": "memory", "weight": 1},
            ]
            if self.chance(0.3):
                resources.append({"name": EXT, "weight": 2})
            scoring["resources"] = resources
            if strategy == "RequestedToCapacityRatio":
                scoring["requestedToCapacityRatio"] = {
                    "shape": [
                        {"utilization": 0, "score": self.pick([0, 10])},
                        {"utilization": 100, "score": self.pick([0, 10])},
                    ]
                }
            profile["pluginConfig"] = [
                {
                    "name": "NodeResourcesFit",
                    "args": {
                        "apiVersion": "kubescheduler.config.k8s.io/v1",
                        "kind": "NodeResourcesFitArgs",
                        "scoringStrategy": scoring,
                    },
                }
            ]
        return {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": 100,
            "profiles": [profile],
        }
