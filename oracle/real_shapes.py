"""What a real cluster holds beyond what the main generator draws: objects as the API server
stores them (admission's defaults, the kubelet's and controllers' status, PriorityClasses,
budgets with status), preemption's traces (nominations, terminating Pods, disrupted Pods),
and shapes the main generator rarely draws."""

from __future__ import annotations

from typing import Any

from draws import APPS, EXT, NAMESPACES
from generator import Gen

PRIORITY_CLASSES = {
    # name: (value, preemptionPolicy)
    "system-cluster-critical": (2000000000, "PreemptLowerPriority"),
    "high": (1000, "PreemptLowerPriority"),
    "batch-low": (10, "Never"),
    "best-effort": (0, "PreemptLowerPriority"),
}


def nominations(
    gen: Gen, nodes: list[str], incoming: dict[str, Any], running: list[dict[str, Any]]
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
    gen: Gen, nodes: list[dict[str, Any]], pods: list[dict[str, Any]], incoming: dict[str, Any]
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


def _stored_node(gen: Gen, node: dict[str, Any], i: int) -> None:
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


def _admitted(gen: Gen, pod: dict[str, Any], i: int) -> None:
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


def _kubelet_status(gen: Gen, pod: dict[str, Any]) -> None:
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


def _budgets(gen: Gen, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
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


def preemption_traces(
    gen: Gen, incoming: dict[str, Any], pods: list[dict[str, Any]]
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


def equal_victims(gen: Gen, items: list[dict[str, Any]], incoming: dict[str, Any]) -> None:
    """A node crowded with 13 to 30 running Pods of one priority below the incoming Pod's and
    one start time (or none: "now" to upstream), of various sizes, filling it exactly: the
    incoming Pod fits there only by preemption, and which of the equally important Pods go
    depends on upstream's ``sort.Slice`` of the node's Pods (pdqsort, unstable above 12
    elements) and on their order on the node (``NodeInfo``: the order they are listed).
    ``items`` (changed in place) gains the node and its Pods (shuffled: not in name order)
    and, most of the time, loses its other nodes; the incoming Pod (changed in place) loses
    what keeps it off the node (node selection, tolerations aside) and requests some CPU."""
    if gen.chance(0.7):
        items[:] = [i for i in items if i["kind"] != "Node"]
    spec = incoming["spec"]
    spec.pop("nodeSelector", None)
    spec.get("affinity", {}).pop("nodeAffinity", None)
    spec.pop("preemptionPolicy", None)
    requests = spec["containers"][0].setdefault("resources", {}).setdefault("requests", {})
    requests.setdefault("cpu", gen.pick(["100m", "300m", "1"]))
    n = gen.r.randint(13, 30)
    name = f"crowd-{gen.r.randint(0, 9)}"
    priority = int(incoming["spec"].get("priority", 0)) - gen.pick([1, 100])
    start = gen.pick(["2026-01-01T00:00:00Z", "2026-01-01T00:30:00Z", None])
    pods = []
    cpu = memory = 0
    for i in range(n):
        c, m = gen.pick([100, 250, 500, 1000]), gen.pick([64, 128, 512])
        cpu, memory = cpu + c, memory + m
        status: dict[str, Any] = {"phase": "Running"}
        if start is not None:
            status["startTime"] = start
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-{i}",
                    "namespace": gen.pick(NAMESPACES),
                    "uid": f"uid-{name}-{i}",
                    "labels": {"app": gen.pick(APPS)},
                },
                "spec": {
                    "nodeName": name,
                    "priority": priority,
                    "containers": [
                        {
                            "name": "c0",
                            "image": "nginx:1.27",
                            "resources": {"requests": {"cpu": f"{c}m", "memory": f"{m}Mi"}},
                        }
                    ],
                },
                "status": status,
            }
        )
    gen.r.shuffle(pods)
    alloc = {"cpu": f"{cpu}m", "memory": f"{memory}Mi", "pods": str(n + gen.pick([0, 0, 5]))}
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {},
        "status": {"allocatable": alloc, "capacity": dict(alloc)},
    }
    items += [node, *pods]


# --- shapes the main generator rarely draws ----------------------------------------------


def rare_shapes(
    gen: Gen, nodes: list[dict[str, Any]], pods: list[dict[str, Any]], incoming: dict[str, Any]
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


def unparsable_preference(gen: Gen, incoming: dict[str, Any]) -> None:
    """A preferred node affinity term the API server accepts but the scheduler cannot parse
    (``incoming`` changed in place): ``Gt``/``Lt`` with one value that is a valid label value
    but no integer (validation checks the count, not the number).  Upstream's NodeAffinity
    PreScore (or its Score, when PreScore is disabled) fails the cycle with the parse
    error; a required term of that shape only fails to match (a lazy-error selector)."""
    spec = incoming["spec"]
    node_affinity = spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
    expr = {"key": gen.pick(["tier", "disk", "gpu-count"]), "operator": gen.pick(["Gt", "Lt"]),
            "values": [gen.pick(["large", "v2", "1.5"])]}  # fmt: skip
    terms = node_affinity.setdefault("preferredDuringSchedulingIgnoredDuringExecution", [])
    term = {"weight": gen.pick([1, 50, 100]), "preference": {"matchExpressions": [expr]}}
    terms.insert(gen.r.randint(0, len(terms)), term)
