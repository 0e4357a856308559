"""Generated explain cases for the differential comparison with upstream.

``case(seed, index)`` builds one request ``{"cluster", "pod", "config"}`` — the arguments of
``kubesched.explain`` and the stdin of ``kube-oracle explain`` — from a private
``random.Random``, so a case is reproduced from its seed and index alone.  The cases cover
what users write: nodes with and without zone/hostname labels, taints of every effect,
unschedulable nodes, images, extended resources; running Pods with requests, init and
restartable sidecar containers, overhead, priorities, terminating Pods, host ports and
(anti-)affinity; incoming Pods with node selectors, node affinity (expressions, fields,
preferred terms), pod (anti-)affinity with namespaces, namespace selectors and
matchLabelKeys, topology spread (hard, soft, minDomains, the inclusion policies,
matchLabelKeys, the system defaults through Services and ReplicaSets), tolerations,
scheduling gates and priorities; preemption's traces (an incoming Pod with
``status.nominatedNodeName``, other pending Pods nominated to nodes with various
priorities, a Pod terminating without ``DisruptionTarget``, a budget whose
``status.disruptedPods`` names a Pod); configurations with each scoring strategy, changed
weights, disabled plugins and scoring of resources most nodes lack; and choices upstream
makes at random (``ties``: preemption candidates tied to the end, DefaultPreemptionArgs
limiting the candidates).
"""

from __future__ import annotations

import copy
import random
from typing import Any

ZONES = ["zone-a", "zone-b", "zone-c"]
APPS = ["web", "db", "cache"]
TIERS = ["front", "back"]
NAMESPACES = ["default", "team-a", "team-b"]
IMAGES = ["nginx:1.27", "redis:7", "busybox:1.36"]
TAINT_KEYS = ["dedicated", "gpu", "spot"]
EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
EXT = "example.com/foo"
SCORE_PLUGINS = [
    "TaintToleration",
    "NodeAffinity",
    "NodeResourcesFit",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
    "InterPodAffinity",
    "PodTopologySpread",
]
FILTER_PLUGINS = ["NodePorts", "ImageLocality", "InterPodAffinity", "PodTopologySpread"]


def case(seed: int, index: int, version: str | None = None) -> dict[str, Any]:
    """The ``index``-th case of ``seed``; at ``version`` (1.35+) with what that release adds
    (:func:`version_draws`, in ``featureGates`` the gates it sets, when any)."""
    gen = _Gen(random.Random(f"{seed}/{index}"))
    request = gen.request()
    gates = version_draws(gen, request["cluster"]["items"], [request["pod"]], version)
    if gates:
        request["featureGates"] = gates
    return request


def schedule_case(seed: int, index: int, version: str | None = None) -> dict[str, Any]:
    """The ``index``-th ``kubesched.schedule`` case of ``seed``: ``{"cluster", "pods",
    "config"}`` with one node (upstream breaks ties between nodes at random, so a sequence
    of placements on several nodes need not repeat), its running Pods and 2-6 Pods to
    submit at once, competing for it by priority, ports, affinity and resources.  They do
    not preempt: upstream preempts asynchronously and retries in wall-clock time, so what
    follows a preemption depends on timing (preemption is compared through explain).  At
    ``version``, with what that release adds, as :func:`case`."""
    gen = _Gen(random.Random(f"schedule/{seed}/{index}"))
    node = gen.node(0)
    pods = [gen.running_pod(i, ["node-0"]) for i in range(gen.r.randint(0, 4))]
    _free_host_ports(pods)
    incoming = []
    for i in range(gen.r.randint(2, 6)):
        pod = gen.incoming_pod(["node-0"])
        pod["metadata"]["name"] = pod["metadata"]["uid"] = f"pod-{i}"
        pod["spec"]["preemptionPolicy"] = "Never"
        incoming.append(pod)
    items = [node, *pods, *gen.others(incoming[0])]
    request = {
        "cluster": {"apiVersion": "v1", "kind": "List", "items": items},
        "pods": incoming,
        "config": gen.config(),
    }
    gates = version_draws(gen, items, incoming, version)
    if gates:
        request["featureGates"] = gates
    return request


def _free_host_ports(pods: list[dict[str, Any]]) -> None:
    """Drop host ports a Pod would share with an earlier Pod on its node: the kubelet
    refuses such a Pod, so no cluster has two (kubesched counts each holder, upstream keeps
    a set: docs/fidelity.md)."""
    used: set[tuple[str, str, int]] = set()
    for pod in pods:
        node = pod["spec"]["nodeName"]
        for c in pod["spec"]["containers"]:
            kept = []
            for port in c.get("ports", []):
                key = (node, port.get("protocol", "TCP"), port["hostPort"])
                if key not in used:
                    used.add(key)
                    kept.append(port)
            if "ports" in c:
                c["ports"] = kept


class _Gen:
    def __init__(self, rnd: random.Random) -> None:
        self.r = rnd

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def pick(self, seq: list[Any]) -> Any:
        return seq[self.r.randrange(len(seq))]

    def request(self) -> dict[str, Any]:
        nodes = [self.node(i) for i in range(self.r.randint(1, self.pick([4, 8, 12])))]
        names = [n["metadata"]["name"] for n in nodes]
        pods = [self.running_pod(i, names) for i in range(self.r.randint(0, self.pick([6, 24])))]
        _free_host_ports(pods)
        incoming = self.incoming_pod(names)
        items: list[dict[str, Any]] = [*nodes, *pods, *self.others(incoming)]
        if self.chance(0.2):
            items.append(self.replica_set(incoming, pods))
        if self.chance(0.3):
            rare_shapes(self, nodes, pods, incoming)
        if self.chance(0.35):
            items += as_stored(self, nodes, pods, incoming)
            controllers_status(items)
        config = self.config()
        if self.chance(0.25):  # drawn last: the cases without nominations stay as they were
            items += nominations(self, names, incoming, pods)
        if self.chance(0.06):  # after the nominations: the other cases stay as they were
            config = scarce_resource_scoring(self, config)
        if pods and self.chance(0.08):
            items += preemption_traces(self, incoming, pods)
        if self.chance(0.4):  # drawn after everything else
            config = ties(self, items, config)
        return {
            "cluster": {"apiVersion": "v1", "kind": "List", "items": items},
            "pod": incoming,
            "config": config,
        }

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
            # (its PreScore state is missing): a broken configuration, not generated.
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


# --- objects as a real cluster stores them ----------------------------------------------

PRIORITY_CLASSES = {
    # name: (value, preemptionPolicy)
    "system-cluster-critical": (2000000000, "PreemptLowerPriority"),
    "high": (1000, "PreemptLowerPriority"),
    "batch-low": (10, "Never"),
    "best-effort": (0, "PreemptLowerPriority"),
}


def nominations(
    gen: _Gen, nodes: list[str], incoming: dict[str, Any], running: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Preemption's traces (``incoming`` and ``running`` changed in place): the incoming Pod
    may carry ``status.nominatedNodeName`` (it preempted before: upstream tries that node
    first), with running Pods there terminating, some because of that preemption (the
    ``DisruptionTarget`` condition: it may not preempt again meanwhile); and pending Pods
    are returned, most of them nominated to a node (sometimes one the snapshot lacks), of
    various priorities (those at or above the incoming Pod's count on their node in Filter),
    some gated or for another scheduler (never nominated by the queue), some with labels and
    anti-affinity that inter-pod affinity and spreading count."""
    if gen.chance(0.6):
        nominated = gen.pick(nodes) if gen.chance(0.9) else "gone-node"
        incoming.setdefault("status", {"phase": "Pending"})["nominatedNodeName"] = nominated
        for pod in running:
            if pod["spec"]["nodeName"] == nominated and gen.chance(0.5):
                pod["metadata"]["deletionTimestamp"] = "2026-01-01T01:00:00Z"
                reason = "PreemptionByScheduler" if gen.chance(0.8) else "DeletionByTaintManager"
                condition = {"type": "DisruptionTarget", "reason": reason}
                condition["status"] = "True" if gen.chance(0.9) else "False"
                pod["status"].setdefault("conditions", []).append(condition)
    pending = []
    nominated_self = "nominatedNodeName" in incoming.get("status", {})
    for i in range(gen.r.randint(0 if nominated_self else 1, 4)):
        meta: dict[str, Any] = {
            "name": f"nominated-{i}",
            "namespace": gen.pick(NAMESPACES),
            "labels": gen.labels(),
            "uid": f"uid-nominated-{i}",
            "creationTimestamp": f"2026-01-01T02:{i:02d}:00Z",
        }
        spec = gen.pod_spec(big=gen.chance(0.4))
        spec["priority"] = gen.pick([0, 10, 100, 1000, 2000])
        if gen.chance(0.2):
            spec["affinity"] = {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [gen.pod_term(required=True)]
                }
            }
        if gen.chance(0.1):
            spec["schedulingGates"] = [{"name": "example.com/wait"}]
        if gen.chance(0.1):
            spec["schedulerName"] = "other-scheduler"
        status: dict[str, Any] = {"phase": "Pending"}
        if gen.chance(0.85):
            status["nominatedNodeName"] = gen.pick(nodes) if gen.chance(0.95) else "gone-node"
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
        pending.append({**pod, "status": status})
    return pending


def as_stored(
    gen: _Gen, nodes: list[dict[str, Any]], pods: list[dict[str, Any]], incoming: dict[str, Any]
) -> list[dict[str, Any]]:
    """Turn the drawn objects into what ``kubectl get -o json`` prints from a real cluster
    (in place) and return the objects that come with them: the fields admission and the
    API server add (priority from a PriorityClass, the default tolerations, the defaulted
    spec fields, resourceVersion), the status the kubelet and the node controller report
    (conditions, addresses, container statuses), PriorityClasses and PodDisruptionBudgets
    with the status the disruption controller writes."""
    extra: list[dict[str, Any]] = []
    for name, (value, policy) in PRIORITY_CLASSES.items():
        extra.append(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name, "resourceVersion": "7"},
                "value": value,
                "preemptionPolicy": policy,
                "globalDefault": False,
            }
        )
    for i, node in enumerate(nodes):
        _stored_node(gen, node, i)
    for i, pod in enumerate(pods):
        _admitted(gen, pod, i)
        _kubelet_status(gen, pod)
    _admitted(gen, incoming, len(pods))
    incoming["status"] = {
        "phase": "Pending",
        "qosClass": _qos(incoming),
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
        if gen.chance(0.4)
        else [],
    }
    if gen.chance(0.6):
        extra += _budgets(gen, pods)
    return extra


def controllers_status(items: list[dict[str, Any]]) -> None:
    """The status the controllers write on the other kinds (in place): Namespaces Active,
    Services' load balancer, ReplicaSets' replica counts."""
    for obj in items:
        kind = obj["kind"]
        if kind == "Namespace":
            obj["status"] = {"phase": "Active"}
            obj["spec"] = {"finalizers": ["kubernetes"]}
        elif kind == "Service":
            obj["status"] = {"loadBalancer": {}}
            obj["spec"].update(type="ClusterIP", clusterIP="10.96.0.10", sessionAffinity="None")
        elif kind == "ReplicaSet":
            obj["spec"].setdefault("replicas", 3)
            obj["status"] = {"replicas": 3, "readyReplicas": 2, "availableReplicas": 2,
                             "fullyLabeledReplicas": 3, "observedGeneration": 1}  # fmt: skip


def _stored_node(gen: _Gen, node: dict[str, Any], i: int) -> None:
    meta = node["metadata"]
    meta.update(resourceVersion=str(100 + i), uid=f"uid-node-{i}")
    meta["creationTimestamp"] = "2025-12-01T00:00:00Z"
    meta["labels"].update(
        {
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
        }
    )
    meta["annotations"] = {"node.alpha.kubernetes.io/ttl": "0"}
    status = node["status"]
    ready = "False" if node["spec"].get("unschedulable") and gen.chance(0.5) else "True"
    status["conditions"] = [
        {"type": t, "status": "False", "reason": f"KubeletHas{r}"}
        for t, r in (("MemoryPressure", "SufficientMemory"), ("DiskPressure", "NoDiskPressure"),
                     ("PIDPressure", "SufficientPID"))
    ] + [{"type": "Ready", "status": ready, "reason": "KubeletReady"}]  # fmt: skip
    status["addresses"] = [
        {"type": "InternalIP", "address": f"10.0.0.{i + 1}"},
        {"type": "Hostname", "address": meta["name"]},
    ]
    status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": 10250}}
    status["nodeInfo"] = {"kubeletVersion": "v1.34.4", "containerRuntimeVersion": "containerd://2.1.4",
                          "operatingSystem": "linux", "architecture": "amd64"}  # fmt: skip
    if ready == "False":
        # The node lifecycle controller's taint for a NotReady node.
        taints = node["spec"].setdefault("taints", [])
        taints.append({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"})


def _admitted(gen: _Gen, pod: dict[str, Any], i: int) -> None:
    """The fields the API server's defaulting and admission add to a Pod."""
    meta, spec = pod["metadata"], pod["spec"]
    meta["resourceVersion"] = str(500 + i)
    meta.setdefault("creationTimestamp", "2026-01-01T02:00:00Z")
    if gen.chance(0.5):
        meta["generateName"] = meta["name"] + "-"
    if gen.chance(0.5):
        name = gen.pick(list(PRIORITY_CLASSES))
        value, policy = PRIORITY_CLASSES[name]
        spec["priorityClassName"] = name
        spec["priority"] = value
        spec["preemptionPolicy"] = policy
    else:
        spec.setdefault("priority", 0)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.update(restartPolicy="Always", dnsPolicy="ClusterFirst", terminationGracePeriodSeconds=30)
    spec.update(serviceAccountName="default", serviceAccount="default", securityContext={})
    spec["enableServiceLinks"] = True
    tolerations = spec.setdefault("tolerations", [])
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        tolerations.append(
            {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        )
    for c in [*spec["containers"], *spec.get("initContainers", [])]:
        c.setdefault("resources", {})
        c.update(imagePullPolicy="IfNotPresent", terminationMessagePath="/dev/termination-log")
        c["terminationMessagePolicy"] = "File"
        for port in c.get("ports", []):
            port.setdefault("protocol", "TCP")


def _qos(pod: dict[str, Any]) -> str:
    res = [c.get("resources", {}) for c in pod["spec"]["containers"]]
    if not any(r.get("requests") or r.get("limits") for r in res):
        return "BestEffort"
    return "Burstable"


def _kubelet_status(gen: _Gen, pod: dict[str, Any]) -> None:
    """What the kubelet reports of a bound Pod: conditions, IPs, container statuses (their
    resources as the spec's: no resize in progress)."""
    status = pod["status"]
    running = status["phase"] == "Running"
    status.update(hostIP="10.0.0.1", podIP=f"10.244.0.{gen.r.randint(2, 250)}", qosClass=_qos(pod))
    status["podIPs"] = [{"ip": status["podIP"]}]
    status["conditions"] = [
        {"type": t, "status": "True" if running or t == "PodScheduled" else "False"}
        for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                  "PodScheduled")
    ]  # fmt: skip
    statuses = []
    for c in pod["spec"]["containers"]:
        cs: dict[str, Any] = {
            "name": c["name"],
            "image": c["image"],
            "imageID": f"docker.io/library/{c['image']}@sha256:{'0' * 64}",
            "containerID": f"containerd://{gen.r.getrandbits(64):016x}",
            "ready": running,
            "started": running,
            "restartCount": gen.pick([0, 0, 1, 3]),
            "state": {"running": {"startedAt": status["startTime"]}}
            if running
            else {"terminated": {"exitCode": 0, "reason": "Completed"}},
        }
        if c["resources"]:
            cs["resources"] = c["resources"]
            cs["allocatedResources"] = c["resources"].get("requests", c["resources"].get("limits"))
        statuses.append(cs)
    status["containerStatuses"] = statuses


def _budgets(gen: _Gen, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """PodDisruptionBudgets over the running Pods of an app, with the status the
    disruption controller writes (disruptionsAllowed from the healthy Pods)."""
    out = []
    for j, app in enumerate(gen.r.sample(APPS, gen.r.randint(1, 2))):
        ns = gen.pick(NAMESPACES)
        matched = [
            p for p in pods
            if p["metadata"]["namespace"] == ns and p["metadata"]["labels"]["app"] == app
            and p["status"]["phase"] == "Running"
        ]  # fmt: skip
        healthy = len(matched)
        spec: dict[str, Any] = {"selector": {"matchLabels": {"app": app}}}
        if gen.chance(0.5):
            spec["minAvailable"] = gen.pick([0, 1, 2, "50%"])
            want = spec["minAvailable"]
            desired = (healthy + 1) // 2 if want == "50%" else want
        else:
            spec["maxUnavailable"] = gen.pick([0, 1, "25%"])
            m = spec["maxUnavailable"]
            desired = healthy - (m if isinstance(m, int) else (healthy + 3) // 4)
        desired = max(0, int(desired))
        status = {
            "observedGeneration": 1,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": healthy,
            "disruptionsAllowed": max(0, healthy - desired),
            "conditions": [{"type": "DisruptionAllowed", "status": "True" if healthy > desired
                            else "False", "reason": "SufficientPods"}],
        }  # fmt: skip
        out.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": f"pdb-{j}", "namespace": ns, "generation": 1},
                "spec": spec,
                "status": status,
            }
        )
    return out


# --- shapes the main generator rarely draws ----------------------------------------------


def rare_shapes(
    gen: _Gen, nodes: list[dict[str, Any]], pods: list[dict[str, Any]], incoming: dict[str, Any]
) -> None:
    """Add (in place) what the main generator rarely or never draws: ephemeral-storage and
    zero extended-resource requests, an overcommitted node (its Pods request more than it
    allocates, as after a kubelet restart with more reserved), large images on every node,
    running Pods with required pod affinity (the hard-affinity weight of scoring), node
    affinity with several matchFields terms (intersected, and conflicting), spreading
    with an empty or missing label selector."""
    spec = incoming["spec"]
    c0 = spec["containers"][0]
    requests = c0.setdefault("resources", {}).setdefault("requests", {})
    if gen.chance(0.5):
        requests["ephemeral-storage"] = gen.pick(["1Gi", "50Gi", "200Gi"])
    if gen.chance(0.3):
        requests[EXT] = "0"
    if pods and gen.chance(0.4):
        victim = gen.pick(pods)
        res = victim["spec"]["containers"][0].setdefault("resources", {})
        res["requests"] = {"cpu": "16", "memory": "64Gi", "ephemeral-storage": "500Gi"}
    if gen.chance(0.3):
        big = {"names": [c0["image"]], "sizeBytes": 3000 * 1024 * 1024}
        for node in nodes:
            node["status"]["images"] = [big]
    names = [n["metadata"]["name"] for n in nodes]
    for pod in pods:
        if gen.chance(0.2) and "affinity" not in pod["spec"]:
            term = gen.pod_term(required=True)
            pod["spec"]["affinity"] = {
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            }
    if gen.chance(0.3):
        terms = []
        for _ in range(gen.r.randint(1, 2)):
            fields = [
                {"key": "metadata.name", "operator": "In", "values": [gen.pick([*names, "ghost"])]}
                for _ in range(gen.r.randint(1, 2))
            ]
            terms.append({"matchFields": fields})
        if gen.chance(0.3):
            terms.append({"matchExpressions": [{"key": "tier", "operator": "Exists"}]})
        affinity = spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}
    if gen.chance(0.3):
        c = gen.spread()
        if gen.chance(0.5):
            c["labelSelector"] = {}
        else:
            del c["labelSelector"]
        spec.setdefault("topologySpreadConstraints", []).append(c)


# --- configurations at their edges ----------------------------------------------------


def ties(gen: _Gen, items: list[dict[str, Any]], config: dict[str, Any] | None) -> dict[str, Any]:
    """Where upstream chooses at random, a case with a choice (``oracle/compare.py`` accepts
    any answer upstream can give): a twin of a node with copies of its running Pods (equal
    scores, and preemption candidates tied to the end, broken by map order), running Pods
    that started at the same time (preemption's last criterion ties; equal victims on a node
    are taken in the cache's order) and DefaultPreemptionArgs that look for fewer candidates
    than the potential nodes (the dry run starts at a random offset).  ``items`` gains the
    twin; returns ``config`` (the defaults when None) with the args added or replaced."""
    pods = [i for i in items if i["kind"] == "Pod" and i["spec"].get("nodeName")]
    nodes = [i for i in items if i["kind"] == "Node"]
    if pods and gen.chance(0.5):
        start = gen.pick(["2026-01-01T00:00:00Z", "2026-01-01T00:30:00Z"])
        for pod in pods:
            if gen.chance(0.7):
                pod.setdefault("status", {})["startTime"] = start
    if pods and gen.chance(0.5):
        name = gen.pick(pods)["spec"]["nodeName"]
        for node in nodes:
            if node["metadata"]["name"] == name:
                twin = copy.deepcopy(node)
                twin["metadata"]["name"] = f"{name}-twin"
                if "kubernetes.io/hostname" in twin["metadata"].get("labels", {}):
                    twin["metadata"]["labels"]["kubernetes.io/hostname"] = f"{name}-twin"
                twin["metadata"].pop("uid", None)
                items.append(twin)
                for pod in [p for p in pods if p["spec"]["nodeName"] == name]:
                    copied = copy.deepcopy(pod)
                    copied["metadata"]["name"] += "-twin"
                    copied["metadata"]["uid"] = copied["metadata"].get("uid", "") + "-twin"
                    copied["spec"]["nodeName"] = f"{name}-twin"
                    items.append(copied)
    config = copy.deepcopy(config) if config is not None else {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler"}],
    }  # fmt: skip
    args = _args("DefaultPreemptionArgs", minCandidateNodesPercentage=gen.pick([0, 10, 50]),
                 minCandidateNodesAbsolute=gen.pick([1, 2, 3]))  # fmt: skip
    for profile in config["profiles"]:
        entries = [e for e in profile.get("pluginConfig", []) if e["name"] != "DefaultPreemption"]
        profile["pluginConfig"] = [*entries, {"name": "DefaultPreemption", "args": args}]
    return config


def _args(kind: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": kind, **fields}


def edge_config(gen: _Gen) -> dict[str, Any]:
    """A configuration at its edges: Score weights 0 (meaning 1) and 100, MultiPoint entries
    with weights, a plugin named both in MultiPoint and Score (the Score entry's weight
    wins), every default plugin's args at their bounds (hardPodAffinityWeight 0 and 100,
    ignorePreferredTermsOfExistingPods, List spreading with defaultConstraints, ignored
    resources and resource groups, RequestedToCapacityRatio shapes of 2-5 points, resource
    weights 1 and 100, addedAffinity, DefaultPreemptionArgs, some limiting the candidates)."""
    plugins: dict[str, Any] = {}
    if gen.chance(0.5):
        entries = [
            {"name": p, "weight": gen.pick([0, 1, 100])} for p in gen.r.sample(SCORE_PLUGINS, 2)
        ]
        plugins["multiPoint"] = {"enabled": entries}
    if gen.chance(0.5):
        plugins["score"] = {
            "enabled": [
                {"name": p, "weight": gen.pick([0, 100, 7])} for p in gen.r.sample(SCORE_PLUGINS, 2)
            ]
        }
    if gen.chance(0.15):
        plugins.setdefault("score", {})["disabled"] = [{"name": "*"}]
        plugins["score"].setdefault("enabled", []).append({"name": "NodeResourcesFit", "weight": 2})
    if gen.chance(0.1):
        # NodeAffinity's Filter then computes the Pod's required affinity itself.
        plugins["preFilter"] = {"disabled": [{"name": "NodeAffinity"}]}
    config: list[dict[str, Any]] = []
    if gen.chance(0.5):
        config.append({"name": "InterPodAffinity", "args": _args(
            "InterPodAffinityArgs", hardPodAffinityWeight=gen.pick([0, 1, 100]),
            ignorePreferredTermsOfExistingPods=gen.chance(0.5))})  # fmt: skip
    if gen.chance(0.5):
        spread: dict[str, Any] = {"defaultingType": gen.pick(["List", "System"])}
        if spread["defaultingType"] == "List":
            spread["defaultConstraints"] = [
                {"maxSkew": gen.pick([1, 3]), "topologyKey": key, "whenUnsatisfiable": gen.pick(
                    ["ScheduleAnyway", "DoNotSchedule"])}
                for key in gen.r.sample(["kubernetes.io/hostname", "topology.kubernetes.io/zone"],
                                        gen.r.randint(0, 2))
            ]  # fmt: skip
        config.append(
            {"name": "PodTopologySpread", "args": _args("PodTopologySpreadArgs", **spread)}
        )
    if gen.chance(0.6):
        fit: dict[str, Any] = {}
        if gen.chance(0.3):
            fit["ignoredResources"] = [EXT]
        elif gen.chance(0.3):
            fit["ignoredResourceGroups"] = ["example.com"]
        strategy = gen.pick(["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"])
        resources = [
            {"name": "cpu", "weight": gen.pick([1, 100])},
            {"name": "memory", "weight": gen.pick([1, 100])},
        ]
        if gen.chance(0.4):
            resources.append(
                {"name": gen.pick([EXT, "ephemeral-storage"]), "weight": gen.pick([1, 100])}
            )
        scoring: dict[str, Any] = {"type": strategy, "resources": resources}
        if strategy == "RequestedToCapacityRatio":
            points = sorted(gen.r.sample(range(0, 101, 10), gen.r.randint(2, 5)))
            scoring["requestedToCapacityRatio"] = {
                "shape": [{"utilization": u, "score": gen.r.randint(0, 10)} for u in points]
            }
        fit["scoringStrategy"] = scoring
        config.append({"name": "NodeResourcesFit", "args": _args("NodeResourcesFitArgs", **fit)})
    if gen.chance(0.3):
        res = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
        if gen.chance(0.5):
            res.append({"name": gen.pick([EXT, "ephemeral-storage"]), "weight": 1})
        args = _args("NodeResourcesBalancedAllocationArgs", resources=res)
        config.append({"name": "NodeResourcesBalancedAllocation", "args": args})
    if gen.chance(0.3):
        added: dict[str, Any] = {}
        if gen.chance(0.6):
            added["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "tier", "operator": gen.pick(["In", "NotIn"]),
                                       "values": [gen.pick(TIERS)]}]}]}  # fmt: skip
        if not added or gen.chance(0.5):
            pref = {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}
            added["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": gen.pick([1, 100]), "preference": pref}
            ]
        config.append(
            {"name": "NodeAffinity", "args": _args("NodeAffinityArgs", addedAffinity=added)}
        )
    if gen.chance(0.3):
        percentage, absolute = gen.pick([(100, 100), (100, 1000), (10, 1), (0, 2)])
        config.append({"name": "DefaultPreemption", "args": _args(
            "DefaultPreemptionArgs", minCandidateNodesPercentage=percentage,
            minCandidateNodesAbsolute=absolute)})  # fmt: skip
    profile: dict[str, Any] = {"schedulerName": "default-scheduler"}
    if plugins:
        profile["plugins"] = plugins
    if config:
        profile["pluginConfig"] = config
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "percentageOfNodesToScore": 100,
        "profiles": [profile],
    }


def preemption_traces(
    gen: _Gen, incoming: dict[str, Any], pods: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """What preemption reads beyond ``nominations``' traces (``pods`` changed in place): on
    the incoming Pod's nominated node (or any), a running Pod terminating with the
    kubelet's conditions and no ``DisruptionTarget`` (being deleted, not by preemption: it
    does not hold the preemptor back); and a PodDisruptionBudget whose status lists a
    running Pod among ``disruptedPods`` (its eviction is under way: preempting it again
    does not count against the budget).  Returns the budget."""
    node = incoming.get("status", {}).get("nominatedNodeName")
    here = [p for p in pods if p["spec"]["nodeName"] == node] or pods
    victim = gen.pick(here)
    victim["metadata"]["deletionTimestamp"] = "2026-01-01T01:00:00Z"
    conditions = victim["status"].setdefault("conditions", [])
    conditions[:] = [c for c in conditions if c.get("type") != "DisruptionTarget"]
    conditions.append({"type": "Ready", "status": "False", "reason": "PodCompleted"})
    disrupted = gen.pick(pods)
    meta = disrupted["metadata"]
    status = {
        "observedGeneration": 1,
        "disruptionsAllowed": gen.pick([0, 1]),
        "currentHealthy": 1,
        "desiredHealthy": 1,
        "expectedPods": 2,
        "disruptedPods": {meta["name"]: "2026-01-01T00:59:00Z"},
    }
    return [
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "pdb-disrupted", "namespace": meta["namespace"], "generation": 1},
            "spec": {"selector": {"matchLabels": dict(meta["labels"])}, "minAvailable": 1},
            "status": status,
        }
    ]


def scarce_resource_scoring(gen: _Gen, config: dict[str, Any] | None) -> dict[str, Any]:
    """``config`` (None: the defaults) with NodeResourcesFit's strategy, and maybe
    BalancedAllocation, scoring only resources most nodes lack (the extended resource,
    ephemeral storage): a node allocating none of them scores 0 (upstream skips a resource
    the node has none of, so the weights sum to 0)."""
    config = config or {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "percentageOfNodesToScore": 100,
        "profiles": [{"schedulerName": "default-scheduler"}],
    }
    profile = config["profiles"][0]
    scarce = gen.r.sample([EXT, "ephemeral-storage"], gen.r.randint(1, 2))
    resources = [{"name": name, "weight": gen.pick([1, 3, 100])} for name in scarce]
    strategy = gen.pick(["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"])
    scoring: dict[str, Any] = {"type": strategy, "resources": resources}
    if strategy == "RequestedToCapacityRatio":
        scoring["requestedToCapacityRatio"] = {
            "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
        }
    entries = [c for c in profile.get("pluginConfig", []) if c["name"] != "NodeResourcesFit"]
    fit = _args("NodeResourcesFitArgs", scoringStrategy=scoring)
    entries.append({"name": "NodeResourcesFit", "args": fit})
    if gen.chance(0.5):
        entries = [c for c in entries if c["name"] != "NodeResourcesBalancedAllocation"]
        args = _args("NodeResourcesBalancedAllocationArgs", resources=[
            {"name": name, "weight": 1} for name in scarce])  # fmt: skip
        entries.append({"name": "NodeResourcesBalancedAllocation", "args": args})
    profile["pluginConfig"] = entries
    return config


from dra_cases import dra_case, dra_schedule_case  # noqa: E402  (oracle/dra_cases.py)
from storage_cases import storage_case, storage_schedule_case  # noqa: E402

__all__ = ["case", "dra_case", "dra_schedule_case", "storage_case", "storage_schedule_case"]


# --- what a release adds -------------------------------------------------------------------

# The gates a case may set (--feature-gates on both sides): those of pkg/scheduler that bear on
# what the default family draws; each release keeps those it lets a user set (Alpha or Beta,
# never locked).
VERSION_GATES = [
    "NodeDeclaredFeatures",
    "PodLevelResources",
    "InPlacePodVerticalScaling",
    "MatchLabelKeysInPodTopologySpread",
    "NodeInclusionPolicyInPodTopologySpread",
    "SidecarContainers",
    "NominatedNodeNameForExpectation",
    "InterPodAffinityHostnameFastPath",
    "OpportunisticBatching",
    "SchedulerPopFromBackoffQ",
    "StorageCapacityScoring",
]
# Node declared features and the release whose registry first infers each from a Pod's spec
# (``k8s.io/component-helpers/nodedeclaredfeatures``); a case may draw any of them at any
# release, so a feature the release does not know yet is drawn too.
DECLARED_FEATURES = {
    "RestartAllContainersOnContainerExits": "1.35",
    "UserNamespacesHostNetworkSupport": "1.36",
    "VolumeBindMountOptions": "1.37",
}


def _minor(version: str) -> int:
    return int(version.split(".")[1])


def settable_gates(version: str) -> list[str]:
    """The gates of :data:`VERSION_GATES` a user may set at ``version`` (Alpha or Beta, not
    locked to their default)."""
    from kubesched.config.featuregates import gate_table

    table = gate_table(version)
    return [
        g
        for g in VERSION_GATES
        if g in table and table[g].pre_release in ("Alpha", "Beta") and not table[g].lock_to_default
    ]


def version_draws(
    gen: _Gen, items: list[dict[str, Any]], pods: list[dict[str, Any]], version: str | None
) -> dict[str, bool]:
    """What exists only from a release on, drawn LAST (so a seed's cases stay as they were
    before it, and as they are at v1.34): Nodes' ``status.declaredFeatures`` and Pods
    (``pods``: the ones to place) that need them (1.35+); random ``--feature-gates``
    settings the release accepts.  Not drawn: tolerations with the numeric operators
    ``Gt``/``Lt`` (TaintTolerationComparisonOperators), which kubesched does not model yet
    (``docs/fidelity.md``).  Changes ``items`` and ``pods`` in
    place; returns the gates set (empty: the release's defaults)."""
    if version is None or _minor(version) < 35:
        return {}
    from kubesched.config.featuregates import check_settings

    nodes = [o for o in items if o.get("kind") == "Node"]
    gates: dict[str, bool] = {}
    if nodes and gen.chance(0.35):
        _declared_features(gen, nodes, pods)
        if gen.chance(0.6):
            gates["NodeDeclaredFeatures"] = True
    if gen.chance(0.4):
        choices = settable_gates(version)
        for g in gen.r.sample(choices, gen.r.randint(1, min(3, len(choices)))):
            gates[g] = gen.chance(0.5)
    gates = {g: v for g, v in gates.items() if g in settable_gates(version)}
    if check_settings(version, sorted(gates.items())):
        return {}
    return gates


def _declared_features(gen: _Gen, nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
    names = sorted(DECLARED_FEATURES)
    for node in nodes:
        if gen.chance(0.7):
            declared = gen.r.sample([*names, "SomeOtherFeature"], gen.r.randint(0, 3))
            node.setdefault("status", {})["declaredFeatures"] = sorted(declared)
    for pod in pods:
        spec = pod["spec"]
        need = [n for n in names if gen.chance(0.4)]
        if "RestartAllContainersOnContainerExits" in need:
            c = spec["containers"][0]
            c["restartPolicy"] = "Never"
            rule = {"operator": "In", "values": [42]}
            c["restartPolicyRules"] = [{"action": "RestartAllContainers", "exitCodes": rule}]
        if "UserNamespacesHostNetworkSupport" in need:
            spec["hostNetwork"] = True
            spec["hostUsers"] = gen.chance(0.2)
        if "VolumeBindMountOptions" in need:
            spec.setdefault("volumes", []).append({"name": "bind", "emptyDir": {}})
            mount = {"name": "bind", "mountPath": "/bind", "bindMountOptions": ["ro"]}
            spec["containers"][0].setdefault("volumeMounts", []).append(mount)
