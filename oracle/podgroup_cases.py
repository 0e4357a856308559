"""Generated Workload API cases (``--family podgroup``): gangs of scheduling.k8s.io.

A case is drawn at a release that serves the objects (v1.35+, ``docs/workload-api.md``) in
that release's shape: v1.35's ``v1alpha1`` Workload whose ``spec.podGroups`` are the groups
(a Pod joins by ``spec.workloadRef``), v1.36's ``v1alpha2`` and v1.37's ``v1beta1``
Workload (``podGroupTemplates``) and PodGroup (a Pod joins by ``spec.schedulingGroup``).
What is drawn: 1-3 groups of 1-6 members, ``gang`` (``minCount`` at most the size, or above
it: a gang that never fills) or ``basic`` policies, more members than the nodes hold, a
topology constraint on a rack label (v1.36+), priorities (a whole group's or mixed),
members of one group with different requests or node selectors (mixed signatures), members
of the groups and ordinary Pods arriving interleaved and out of input order, each group's
object created before its members (in the cluster), after some of them (among the
submitted Pods) or never, on 1-5 nodes in racks; the gates the release lets a user set
(GenericWorkload on but rarely, GangScheduling where it is a gate,
TopologyAwareWorkloadScheduling, the scheduler's machinery gates).

Upstream picks at random among the top-scored nodes, so a sequence of placements on several
nodes need not repeat (``cases.schedule_case`` uses one node for that reason).  Here every
submitted Pod prefers the nodes in one drawn order (preferred node affinity, weights 15
apart, NodeAffinity's score weighted 100): the order dominates every other score, so each
placement is the first node in that order where the Pod fits, and a case's outcome is
decided by what the gangs do.  Ordinary Pods do not preempt (``preemptionPolicy: Never``), as
in the other schedule families (but in preemption situations, below).

From v1.36, three cases in five are preemption situations (:func:`_preemption`): Pods
already running (submitted bound, first, so both sides report whether they were preempted)
-- lone ones and members of running gangs whose PodGroup has ``disruptionMode`` ``all``,
``single`` or none (v1.36's ``PodGroup``, ``Pod`` or none) -- at low and mid priorities
(``terminationGracePeriodSeconds: 0``: a victim is gone at once on both sides, as
upstream's fake clientset deletes), while the groups to schedule may preempt
(``PreemptLowerPriority`` on their members, and under PodGroupPreemptionPolicy on the
PodGroup too; ``Never`` at times, rarely a member disagreeing with its group), and so may
half the ordinary Pods (at mid or high priority: from v1.37 an ordinary Pod's preemption
sees a PodGroup member at its PodGroup's priority and a ``disruptionMode: all`` PodGroup as
one unit), with SchedulerAsyncPreemption off: upstream's asynchronous preemption deletes
the victims in a goroutine that races the next cycles, kubesched's preemption is
synchronous.  At v1.36 a group preempts as a whole under WorkloadAwarePreemption (drawn on
in most preemption situations, at times in the others: upstream's ``workload_preemption``
suite, small): the PodGroups then carry their priority, the running Pods distinct start
times (upstream lists v1.36's victims in a Go map's order, so equally important ones would
fall at random), the cluster's own too (drawn last, each older than the submitted ones: a
victim without one starts "now", the latest of all); without the gate a member that fits
nowhere preempts for itself inside the group's cycle (its own PostFilter), and the group
waits on it.  From v1.37 every
preemption situation's running Pods (the cluster's own too) have distinct start times:
upstream's ``pickOneNodeForPreemption`` breaks a tie between candidate nodes on the victims'
start, and a victim without ``status.startTime`` starts "now" (``GetPodStartTime`` reads
the clock at each call, once per node in a walk of a Go map), so among nodes tied on the
other criteria the last of a random walk won (seed 1 case 17: three answers).  So do v1.36's
preemption situations without WorkloadAwarePreemption, where a member that fits nowhere
preempts for itself through DefaultPreemption (seed 19601 case 24).

Outside preemption situations a schedule case is then widened from a stream of its own
(:func:`_widen`, so a seed's other draws stay as they were): members already running beside
the submitted ones (at times meeting the gang's ``minCount``, mostly in one topology domain),
constraints on the hostname and zone labels beside the rack, CompositePodGroup trees nested
up to four deep, and more signatures within a group (another request, a toleration, a zone
selector).

Last, under TopologyAwareWorkloadScheduling a third of the schedule cases weigh a group's
placements otherwise (:func:`_placement_weights`: PodGroupPodsCount's and NodeResourcesFit's
placement-score weights, the resources Fit's scoring strategy weighs), from a stream of its
own.

``podgroup_schedule_case`` is the ``kubesched.schedule`` form; ``podgroup_case`` the
``explain`` form: the same cluster with some members already pending or bound, and one
member to explain.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from draws import IMAGES, Draw
from lived_in import lived_in_pods
from release_draws import machinery_gates

GROUP = "scheduling.k8s.io"
RACK = "example.com/rack"
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
# The API version that serves Workload and PodGroup at each release (with GenericWorkload).
API_VERSION = {"1.35": "v1alpha1", "1.36": "v1alpha2", "1.37": "v1beta1"}
NAMESPACES = ["default", "team-a"]
CPU = ["250m", "500m", "1", "1500m", "2"]
# PriorityClasses of the cluster: a submitted Pod (and a v1.37 PodGroup) names one and carries
# its value, as the priority admission plugin stores them (v1.37's PodGroup cycle refuses a
# group whose members' priority is not the group's).
CLASSES = {"low": 0, "mid": 100, "high": 1000}
MEMORY = ["256Mi", "1Gi", "2Gi"]


def _minor(version: str) -> int:
    return int(version.split(".")[1])


def check_version(version: str | None) -> str:
    """The release a case is drawn at: 1.35 or newer (the objects do not exist before)."""
    if version is None or _minor(version) < 35:
        raise ValueError("--family podgroup needs --kubernetes-version 1.35 or newer")
    return version


class _Gen(Draw):
    """One case's draws: nodes, groups, members and ordinary Pods."""

    def __init__(self, rnd: random.Random, version: str) -> None:
        super().__init__(rnd)
        self.version = version
        self.api = f"{GROUP}/{API_VERSION[version]}"
        self.preference: list[str] = []
        self.clock = 0

    def stamp(self) -> str:
        """The next creation time (one second apart: each submitted object in arrival order)."""
        self.clock += 1
        return f"2026-01-01T03:{self.clock // 60:02d}:{self.clock % 60:02d}Z"

    # --- nodes ---------------------------------------------------------------------

    def nodes(self) -> list[dict[str, Any]]:
        n = self.r.randint(1, 5)
        out = []
        for i in range(n):
            name = f"node-{i}"
            labels = {HOST: name, RACK: f"rack-{'ab'[i % 2] if n > 2 else 'a'}"}
            if self.chance(0.7):
                labels[ZONE] = self.pick(["zone-a", "zone-b"])
            alloc = {
                "cpu": self.pick(["2", "4", "8"]),
                "memory": self.pick(["4Gi", "8Gi", "16Gi"]),
                "pods": str(self.pick([3, 5, 110])),
            }
            spec: dict[str, Any] = {}
            if self.chance(0.08):
                spec["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
            node = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "spec": spec,
                "status": {"allocatable": alloc, "capacity": dict(alloc)},
            }
            out.append(node)
        names = [n["metadata"]["name"] for n in out]
        self.preference = self.r.sample(names, len(names))
        return out

    def running(self, i: int, nodes: list[str]) -> dict[str, Any]:
        meta = {"name": f"running-{i}", "namespace": "default", "uid": f"uid-running-{i}"}
        spec: dict[str, Any] = {"nodeName": self.pick(nodes), "containers": [self.container()]}
        if self.chance(0.3):
            spec["priority"] = self.pick([0, 100])
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}

    def bound(
        self, pod: dict[str, Any], nodes: list[dict[str, Any]], free: dict[str, list[int]]
    ) -> bool:
        """Bind ``pod`` (``spec.nodeName``) to a node with room for it (``free``: node name
        to milli-CPU, MiB and Pods left); False when none has."""
        req = pod["spec"]["containers"][0]["resources"]["requests"]
        cpu, mem = _milli(req["cpu"]), _mib(req["memory"])
        fits = [
            n["metadata"]["name"]
            for n in nodes
            if not n["spec"].get("taints")
            and free[n["metadata"]["name"]][0] >= cpu
            and free[n["metadata"]["name"]][1] >= mem
            and free[n["metadata"]["name"]][2] >= 1
        ]
        if not fits:
            return False
        name = self.pick(fits)
        left = free[name]
        left[0], left[1], left[2] = left[0] - cpu, left[1] - mem, left[2] - 1
        pod["spec"]["nodeName"] = name
        return True

    # --- Pods ----------------------------------------------------------------------

    def container(self, cpu: str | None = None, memory: str | None = None) -> dict[str, Any]:
        req = {"cpu": cpu or self.pick(CPU), "memory": memory or self.pick(MEMORY)}
        return {"name": "c", "image": self.pick(IMAGES), "resources": {"requests": req}}

    def pod(self, name: str, namespace: str, container: dict[str, Any]) -> dict[str, Any]:
        """A submitted Pod preferring the case's node order (see the module docstring)."""
        n = len(self.preference)
        terms = [
            {
                "weight": 100 - 15 * k,
                "preference": {
                    "matchExpressions": [{"key": HOST, "operator": "In", "values": [node]}]
                },
            }
            for k, node in enumerate(self.preference[:n])
        ]
        spec: dict[str, Any] = {
            "containers": [container],
            "preemptionPolicy": "Never",
            "affinity": {
                "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}
            },
        }
        meta = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}

    # --- groups --------------------------------------------------------------------

    def policy(self, size: int) -> dict[str, Any]:
        if self.chance(0.25):
            return {"basic": {}}
        top = size + 1 if self.chance(0.12) else size
        return {"gang": {"minCount": self.r.randint(1, top)}}

    def group(self, g: int) -> dict[str, Any]:
        """One group's plan: its name, namespace, policy, topology key, where its object is
        created (``before``: in the cluster, ``after``: among the submitted Pods, after the
        first members, ``never``), and its members."""
        size = self.r.randint(1, 6)
        ns = self.pick(NAMESPACES) if self.chance(0.2) else "default"
        plan: dict[str, Any] = {
            "name": f"group-{g}",
            "namespace": ns,
            "policy": self.policy(size),
            "topology": _minor(self.version) >= 36 and self.chance(0.35),
            "created": self.r.choices(["before", "after", "never"], [0.6, 0.32, 0.08])[0],
            "workload": _minor(self.version) == 35 or self.chance(0.6),
        }
        cpu, memory = self.pick(CPU), self.pick(MEMORY)
        plan["class"] = self.pick([None, *CLASSES])
        mixed = self.chance(0.3)
        members = []
        for m in range(size):
            c = self.container(cpu, memory)
            if mixed and self.chance(0.4):
                c = self.container()
            pod = self.pod(f"{plan['name']}-{m}", ns, c)
            if mixed and self.chance(0.2):
                pod["spec"]["nodeSelector"] = {RACK: self.pick(["rack-a", "rack-b"])}
            # Rarely a member of another priority (v1.37's cycle refuses the group).
            classify(pod, self.pick(list(CLASSES)) if self.chance(0.03) else plan["class"])
            self.join(pod, plan)
            members.append(pod)
        plan["members"] = members
        return plan

    def join(self, pod: dict[str, Any], plan: dict[str, Any]) -> None:
        """Point ``pod`` at its group the way the release's Pod does."""
        if _minor(self.version) == 35:
            ref = {"name": "workload-0", "podGroup": plan["name"]}
            if self.chance(0.1):
                ref["podGroupReplicaKey"] = "r0"
                plan["replicaKeyed"] = True
            pod["spec"]["workloadRef"] = ref
        else:
            pod["spec"]["schedulingGroup"] = {"podGroupName": plan["name"]}

    def policy_fields(self, plans: list[dict[str, Any]], objects: list[dict[str, Any]]) -> None:
        """Under PodGroupPreemptionPolicy: each plan's PodGroup carries the plan's
        ``preemptionPolicy`` (at times left to its default when that is
        ``PreemptLowerPriority``)."""
        for plan in plans:
            policy = plan.get("preemptionPolicy")
            if policy is None or (policy != "Never" and self.chance(0.3)):
                continue
            for obj in _plan_pod_groups(plan, objects):
                obj["spec"]["preemptionPolicy"] = policy

    def objects(self, plans: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str]]:
        """The Workload and PodGroup objects of the plans, each with where it is created."""
        out: list[tuple[dict[str, Any], str]] = []
        if _minor(self.version) == 35:
            # One Workload holds every group of the namespace (its podGroups); it is created
            # as its first group's plan says.
            by_ns: dict[str, list[dict[str, Any]]] = {}
            for plan in plans:
                by_ns.setdefault(plan["namespace"], []).append(plan)
            for ns, group in by_ns.items():
                spec = {"podGroups": [{"name": p["name"], "policy": p["policy"]} for p in group]}
                meta = {"name": "workload-0", "namespace": ns}
                obj = {"apiVersion": self.api, "kind": "Workload", "metadata": meta, "spec": spec}
                out.append((obj, group[0]["created"]))
            return out
        for plan in plans:
            spec: dict[str, Any] = {"schedulingPolicy": plan["policy"]}
            if plan["topology"]:
                spec["schedulingConstraints"] = {"topology": [{"key": RACK}]}
            meta = {"name": plan["name"], "namespace": plan["namespace"]}
            if plan["workload"]:
                template = f"t-{plan['name']}"
                if _minor(self.version) == 36:
                    ref = {"workloadName": f"wl-{plan['name']}", "podGroupTemplateName": template}
                    spec["podGroupTemplateRef"] = {"workload": ref}
                else:
                    spec["workloadRef"] = {
                        "workloadName": f"wl-{plan['name']}",
                        "templateName": template,
                    }
                tspec = {"name": template, "schedulingPolicy": plan["policy"]}
                wl = {
                    "apiVersion": self.api,
                    "kind": "Workload",
                    "metadata": {"name": f"wl-{plan['name']}", "namespace": plan["namespace"]},
                    "spec": {"podGroupTemplates": [tspec]},
                }
                out.append((wl, "before"))
            if _minor(self.version) >= 37 and plan["class"] is not None:
                spec["priorityClassName"] = plan["class"]
                spec["priority"] = CLASSES[plan["class"]]
            pg = {"apiVersion": self.api, "kind": "PodGroup", "metadata": meta, "spec": spec}
            out.append((pg, plan["created"]))
        return out

    def gates(self, plans: list[dict[str, Any]]) -> dict[str, bool]:
        """GenericWorkload on (off once in twenty: the Pod's field is then dropped and the
        objects are not served), GangScheduling where it is a gate,
        TopologyAwareWorkloadScheduling and v1.36's WorkloadAwarePreemption (beside
        GangScheduling, mostly in preemption situations), within what the release accepts;
        then the scheduler's machinery gates."""
        from kubesched.config.featuregates import check_settings, gate_table

        table = gate_table(self.version)
        gates: dict[str, bool] = {"GenericWorkload": not self.chance(0.05)}
        if "GangScheduling" in table:
            gates["GangScheduling"] = gates["GenericWorkload"] and not self.chance(0.1)
        if "TopologyAwareWorkloadScheduling" in table and gates["GenericWorkload"]:
            topology = any(p["topology"] for p in plans)
            gates["TopologyAwareWorkloadScheduling"] = self.chance(0.6 if topology else 0.15)
        if "CompositePodGroup" in table and gates.get("TopologyAwareWorkloadScheduling"):
            # v1.37's composite groups' gate (it needs both gates above): on, the queue, the
            # cache and GangScheduling take the hierarchy paths even for groups without a
            # parent; most such cases get a composite tree (:func:`_composite`).
            gates["CompositePodGroup"] = self.chance(0.8)
        preempting = any("preemptionPolicy" in p for p in plans)
        if "WorkloadAwarePreemption" in table and gates.get("GangScheduling"):
            gates["WorkloadAwarePreemption"] = self.chance(0.85 if preempting else 0.3)
        if "PodGroupPreemptionPolicy" in table and gates["GenericWorkload"] and preempting:
            gates["PodGroupPreemptionPolicy"] = self.chance(0.4)
        if check_settings(self.version, sorted(gates.items())):
            gates = {"GenericWorkload": gates["GenericWorkload"]}
        gates.update(machinery_gates(self, self.version))
        return gates


def _milli(cpu: str) -> int:
    return int(cpu[:-1]) if cpu.endswith("m") else int(float(cpu) * 1000)


def _mib(memory: str) -> int:
    return int(memory[:-2]) * (1024 if memory.endswith("Gi") else 1)


def _allocatable(nodes: list[dict[str, Any]]) -> dict[str, list[int]]:
    """Each node's allocatable [milli-CPU, MiB, Pods], by name: the room left as Pods are
    placed (:func:`_take` subtracts from it)."""
    return {
        n["metadata"]["name"]: [
            _milli(n["status"]["allocatable"]["cpu"]),
            _mib(n["status"]["allocatable"]["memory"]),
            int(n["status"]["allocatable"]["pods"]),
        ]
        for n in nodes
    }


def _preemption(
    gen: _Gen, nodes: list[dict[str, Any]], plans: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A preemption situation (v1.37, see the module docstring): the running Pods (bound,
    to be submitted first) and the PodGroups of the running gangs (in the cluster); the
    plans' members and PodGroups get their preemption policies (the PodGroup's field is set
    by :meth:`_Gen.objects` when the gate is on)."""
    free = _allocatable(nodes)
    running: list[dict[str, Any]] = []
    groups: list[dict[str, Any]] = []
    for g in range(gen.r.randint(1, 2)):
        name, cls = f"running-group-{g}", gen.pick(["low", "mid", None])
        spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": 1}}}
        mode = gen.r.choices(["all", "single", None], [0.55, 0.2, 0.25])[0]
        if mode is not None and _minor(gen.version) == 36:  # v1alpha2's enum
            spec["disruptionMode"] = {"all": "PodGroup", "single": "Pod"}[mode]
        elif mode is not None:
            spec["disruptionMode"] = {mode: {}}
        if cls is not None:
            spec["priorityClassName"], spec["priority"] = cls, CLASSES[cls]
        meta = {"name": name, "namespace": "default"}
        groups.append({"apiVersion": gen.api, "kind": "PodGroup", "metadata": meta, "spec": spec})
        cpu, memory = gen.pick(CPU), gen.pick(MEMORY)
        for m in range(gen.r.randint(1, 4)):
            pod = gen.pod(f"{name}-{m}", "default", gen.container(cpu, memory))
            pod["spec"]["schedulingGroup"] = {"podGroupName": name}
            classify(pod, cls)
            if gen.bound(pod, nodes, free):
                running.append(pod)
    for i in range(gen.r.randint(1, 4)):
        pod = gen.pod(f"victim-{i}", "default", gen.container())
        classify(pod, gen.pick(["low", "mid", None]))
        if gen.bound(pod, nodes, free):
            running.append(pod)
    for pod in running:  # gone at once when preempted, as the fake clientset deletes
        pod["spec"]["terminationGracePeriodSeconds"] = 0
    for plan in plans:
        if plan["class"] in (None, "low") and gen.chance(0.7):
            plan["class"] = gen.pick(["mid", "high"])
            for pod in plan["members"]:
                classify(pod, plan["class"])
        policy = "Never" if gen.chance(0.25) else "PreemptLowerPriority"
        plan["preemptionPolicy"] = policy
        for pod in plan["members"]:
            mine = policy if not gen.chance(0.03) else gen.pick(["Never", "PreemptLowerPriority"])
            if mine == "PreemptLowerPriority" and gen.chance(0.3):
                del pod["spec"]["preemptionPolicy"]
            else:
                pod["spec"]["preemptionPolicy"] = mine
    return running, groups


def _config() -> dict[str, Any]:
    """The default profile with NodeAffinity's score weighted 100 (the node order)."""
    score = {"enabled": [{"name": "NodeAffinity", "weight": 100}]}
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", "plugins": {"score": score}}],
    }


def _placement_weights(r: random.Random, request: dict[str, Any]) -> None:
    """Under TopologyAwareWorkloadScheduling, in a third of the schedule cases (from a stream
    of its own ``r``, drawn after everything else), how the PodGroup cycle ranks a group's
    feasible placements: the PlacementScore plugins' weights (upstream's
    ``placementScorePluginWeight``, from multiPoint: PodGroupPodsCount, or NodeResourcesFit,
    whose placement score is MostAllocated over the placement's nodes whatever its node
    scoring strategy) and the resources NodeResourcesFit's ``scoringStrategy`` weighs, which
    its placement score weighs too.  Node scores keep NodeAffinity's order (weight 100, its
    preferences 15 apart: at most 10 x 100 from Fit)."""
    if not request.get("featureGates", {}).get("TopologyAwareWorkloadScheduling"):
        return
    if r.random() >= 1 / 3:
        return
    profile = request["config"]["profiles"][0]
    kind = r.choice(["pods", "fit", "both", "resources"])
    multi: list[dict[str, Any]] = []
    if kind in ("pods", "both"):
        multi.append({"name": "PodGroupPodsCount", "weight": r.choice([2, 5, 10])})
    if kind in ("fit", "both"):
        multi.append({"name": "NodeResourcesFit", "weight": r.choice([2, 5, 10])})
    if multi:
        profile["plugins"]["multiPoint"] = {"enabled": multi}
    if kind == "resources" or r.random() < 0.3:
        resources = [
            {"name": "cpu", "weight": r.choice([1, 3])},
            {"name": "memory", "weight": r.choice([1, 5])},
        ]
        if r.random() < 0.3:
            resources = [r.choice(resources)]
        strategy = {"type": r.choice(["LeastAllocated", "MostAllocated"]), "resources": resources}
        profile["pluginConfig"] = [
            {"name": "NodeResourcesFit", "args": {"scoringStrategy": strategy}}
        ]


def _draw(gen: _Gen, preemption: bool = False) -> dict[str, Any]:
    """Everything of one case: nodes, running Pods, group plans, objects, ordinary Pods,
    and the submission (Pods and late objects, stamped in arrival order); ``preemption``:
    from v1.37, draw a preemption situation at times (:func:`_preemption`)."""
    nodes = gen.nodes()
    names = [n["metadata"]["name"] for n in nodes]
    running = [gen.running(i, names) for i in range(gen.r.randint(0, 2))]
    plans = [gen.group(g) for g in range(gen.r.randint(1, 3))]
    bound: list[dict[str, Any]] = []
    running_groups: list[dict[str, Any]] = []
    if preemption and _minor(gen.version) >= 36 and gen.chance(0.6):
        bound, running_groups = _preemption(gen, nodes, plans)
    objects = gen.objects(plans)
    ordinary = []
    for i in range(gen.r.randint(0, 3)):
        pod = gen.pod(f"plain-{i}", "default", gen.container())
        if gen.chance(0.4):
            classify(pod, gen.pick(list(CLASSES)))
        ordinary.append(pod)
    if bound:  # ordinary Pods preempting running Pods and gangs' members (units from v1.37)
        for pod in ordinary:
            if gen.chance(0.5):
                classify(pod, gen.pick(["mid", "high"]))
                del pod["spec"]["preemptionPolicy"]
    # Arrival: the members of all groups and the ordinary Pods interleaved at random; a
    # group object created "after" arrives right after its group's first member.
    arrivals: list[dict[str, Any]] = [p for plan in plans for p in plan["members"]] + ordinary
    gen.r.shuffle(arrivals)
    late = [obj for obj, when in objects if when == "after"]
    for obj in late:
        first = next(
            i
            for i, p in enumerate(arrivals)
            if p["kind"] == "Pod" and _belongs(p, obj, gen.version)
        )
        arrivals.insert(first + 1, obj)
    for item in [*bound, *arrivals]:
        item["metadata"]["creationTimestamp"] = gen.stamp()
    submitted = bound + arrivals
    if gen.chance(0.3):  # input order need not be arrival order
        gen.r.shuffle(submitted)
    before = [obj for obj, when in objects if when == "before"]
    classes = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        }
        for name, value in CLASSES.items()
    ]
    gates = gen.gates(plans)
    if bound:  # upstream's asynchronous preemption races its next cycles; compare the other
        gates["SchedulerAsyncPreemption"] = False
        for pod in running:  # the cluster's own may be victims too: gone at once
            pod["spec"]["terminationGracePeriodSeconds"] = 0
        if _minor(gen.version) == 36:  # so may any Pod once bound: a group takes its place
            for pod in arrivals:  # only after it is gone (no nomination holds the room)
                if pod["kind"] == "Pod":
                    pod["spec"]["terminationGracePeriodSeconds"] = 0
    v136 = _minor(gen.version) == 36
    # No groups: the members would preempt Pod by Pod.
    if not gates["GenericWorkload"]:
        plain = {id(p) for p in ordinary}
        for pod in arrivals:
            if pod["kind"] == "Pod" and id(pod) not in plain:
                pod["spec"]["preemptionPolicy"] = "Never"
    if v136 and gates.get("WorkloadAwarePreemption"):
        _v136_priorities(plans, [obj for obj, _ in objects])
        _start_times(gen, bound, running_groups)
    if gates.get("PodGroupPreemptionPolicy"):
        gen.policy_fields(plans, [obj for obj, _ in objects])
    # Drawn last (every other draw is as before): from v1.37, and at v1.36 where members
    # preempt Pod by Pod (no WorkloadAwarePreemption: DefaultPreemption's node choice, every
    # running Pod a victim alone, whatever its PodGroup's disruptionMode).
    per_pod = v136 and not gates.get("WorkloadAwarePreemption")
    if bound and (_minor(gen.version) >= 37 or per_pod):
        _start_times(gen, [*running, *bound], [] if per_pod else running_groups)
    elif bound and v136:  # WorkloadAwarePreemption: the cluster's own too, before the others
        _start_times(gen, running, [], at="01")
    return {
        "items": [*nodes, *running, *classes, *before, *running_groups],
        "submitted": submitted,
        "plans": plans,
        "gates": gates,
        "objects": [obj for obj, _ in objects],
        "preemption": bool(bound),
    }


def _composite(r: random.Random, d: dict[str, Any]) -> None:
    """Under CompositePodGroup (v1.37), at times a composite tree over the case's groups
    (drawn from ``r``, a stream of its own, so the rest of the case is drawn as without
    it): a root CompositePodGroup over 1-3 of the PodGroups created before their members
    (in the cluster), at times with a middle CompositePodGroup between (depth 2), each
    ``basic`` or ``gang`` with ``minGroupCount`` up to its children (rarely one more: a tree
    that never fills).  The tree's members all carry the root's PriorityClass (v1.37's
    ``validatePodGroup`` wants the root's priority on every member; rarely one differs), the
    PodGroups name their parent and a ``workloadRef`` (required with a parent).  Outside
    preemption situations nothing in a tree case preempts.  In a preemption situation the
    tree preempts as one (:func:`_tree_preemption`): its class mostly mid or high, its
    members' ``preemptionPolicy`` the tree's (rarely one disagrees: an Error), the root's
    under PodGroupPreemptionPolicy; and at times the running gangs hang under a running
    CompositePodGroup of their own (:func:`_running_tree`), a victim at its root's priority,
    one unit with ``disruptionMode: all``.  Last, at times a topology constraint on the
    tree's CompositePodGroups (:func:`_tree_topology`)."""
    gates = d["gates"]
    if not gates.get("CompositePodGroup") or r.random() < 0.1:
        return
    pgs = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o
        for o in d["items"]
        if o["kind"] == "PodGroup" and not o["metadata"]["name"].startswith("running-")
    }
    by_ns: dict[str, list[dict[str, Any]]] = {}
    for plan in d["plans"]:
        if (plan["namespace"], plan["name"]) in pgs:
            by_ns.setdefault(plan["namespace"], []).append(plan)
    if not by_ns:
        return
    ns = r.choice(sorted(by_ns))
    leaves = r.sample(by_ns[ns], r.randint(1, len(by_ns[ns])))
    cls = r.choice([None, *CLASSES])
    if d["preemption"] and cls in (None, "low") and r.random() < 0.7:
        cls = r.choice(["mid", "high"])

    def cpg(name: str, children: int, parent: str | None) -> dict[str, Any]:
        if r.random() < 0.2:
            policy: dict[str, Any] = {"basic": {}}
        else:
            top = children + 1 if r.random() < 0.1 else children
            policy = {"gang": {"minGroupCount": r.randint(1, top)}}
        spec: dict[str, Any] = {
            "workloadRef": {"workloadName": "wl-tree", "templateName": f"t-{name}"},
            "schedulingPolicy": policy,
        }
        if parent is not None:
            spec["parentCompositePodGroupName"] = parent
        if cls is not None:
            spec["priorityClassName"], spec["priority"] = cls, CLASSES[cls]
        meta = {"name": name, "namespace": ns}
        return {
            "apiVersion": f"{GROUP}/v1alpha3",
            "kind": "CompositePodGroup",
            "metadata": meta,
            "spec": spec,
        }

    parents = {id(p): "tree-root" for p in leaves}
    if len(leaves) >= 2 and r.random() < 0.6:  # depth 2: some leaves under a middle group
        middle = leaves[: r.randint(1, len(leaves))]
        for p in middle:
            parents[id(p)] = "tree-mid"
        direct = len(leaves) - len(middle)
        tree = [cpg("tree-root", direct + 1, None), cpg("tree-mid", len(middle), "tree-root")]
    else:
        tree = [cpg("tree-root", len(leaves), None)]
    for plan in leaves:
        spec = pgs[(plan["namespace"], plan["name"])]["spec"]
        spec["parentCompositePodGroupName"] = parents[id(plan)]
        spec.setdefault(
            "workloadRef", {"workloadName": "wl-tree", "templateName": f"t-{plan['name']}"}
        )
        if cls is None:
            spec.pop("priorityClassName", None)
            spec.pop("priority", None)
        else:
            spec["priorityClassName"], spec["priority"] = cls, CLASSES[cls]
        for pod in plan["members"]:
            pod["spec"].pop("priorityClassName", None)
            pod["spec"].pop("priority", None)
            classify(pod, cls if r.random() >= 0.03 else r.choice(list(CLASSES)))
    if d["preemption"]:
        _tree_preemption(r, d, leaves, tree)
    late = _late_tree(r, d, tree)
    if d["preemption"]:
        tree += _running_tree(r, d)
    # The tree's other objects come first in the cluster (observed before any member).
    first = next(i for i, o in enumerate(d["items"]) if o["kind"] == "PodGroup")
    d["items"][first:first] = [o for o in tree if not any(o is x for x in late)]
    _tree_topology(r, tree)


def _tree_topology(r: random.Random, tree: list[dict[str, Any]]) -> None:
    """At times a topology constraint on the tree's CompositePodGroups (drawn last, so the
    rest of the tree is drawn as without it): each of ``tree-root`` and ``tree-mid`` in
    two gets ``schedulingConstraints.topology`` on the rack label (or, one time in three,
    the zone label, which some nodes lack: those are in no placement), so its children are
    tried inside each rack or zone (TopologyPlacementGenerator for a CompositePodGroup,
    placements nested in its parent's); the running tree gets none."""
    for obj in tree:
        if obj["metadata"]["name"] in ("tree-root", "tree-mid") and r.random() < 0.5:
            key = ZONE if r.random() < 1 / 3 else RACK
            obj["spec"]["schedulingConstraints"] = {"topology": [{"key": key}]}


def _late_tree(
    r: random.Random, d: dict[str, Any], tree: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """At times (one tree in three) some of the tree's CompositePodGroups are created during
    the run, among the submitted Pods at a random place in the arrival order (the members
    before it are held: their root is not observed); the unbound submitted objects are
    stamped again in the new arrival order.  The objects created late."""
    if r.random() >= 0.35:
        return []
    late = [o for o in tree if r.random() < 0.6] or [tree[0]]
    arrivals = sorted(
        (o for o in d["submitted"] if not o["spec"].get("nodeName")),
        key=lambda o: str(o["metadata"]["creationTimestamp"]),
    )
    stamps = [str(o["metadata"]["creationTimestamp"]) for o in arrivals]
    last = max((str(o["metadata"]["creationTimestamp"]) for o in d["submitted"]), default="")
    clock = int(last[14:16]) * 60 + int(last[17:19]) if last else 0
    for obj in late:  # one second more each, after every stamp drawn
        arrivals.insert(r.randint(0, len(arrivals)), obj)
        clock += 1
        stamps.append(f"2026-01-01T03:{clock // 60:02d}:{clock % 60:02d}Z")
    for obj, stamp in zip(arrivals, sorted(stamps), strict=True):
        obj["metadata"]["creationTimestamp"] = stamp
    d["submitted"].extend(late)
    return late


def _tree_preemption(
    r: random.Random, d: dict[str, Any], leaves: list[dict[str, Any]], tree: list[dict[str, Any]]
) -> None:
    """The tree's preemption policy (``Never`` one time in four): on its members (rarely one
    disagreeing; ``PreemptLowerPriority`` at times left to the default) and, under
    PodGroupPreemptionPolicy, on its CompositePodGroups (the root's decides; at times left to
    its default when ``PreemptLowerPriority``)."""
    policy = "Never" if r.random() < 0.25 else "PreemptLowerPriority"
    for plan in leaves:
        for pod in plan["members"]:
            mine = policy if r.random() >= 0.03 else r.choice(["Never", "PreemptLowerPriority"])
            if mine == "PreemptLowerPriority" and r.random() < 0.3:
                pod["spec"].pop("preemptionPolicy", None)
            else:
                pod["spec"]["preemptionPolicy"] = mine
    if d["gates"].get("PodGroupPreemptionPolicy"):
        for obj in tree:
            if policy == "Never" or r.random() >= 0.3:
                obj["spec"]["preemptionPolicy"] = policy


def _running_tree(r: random.Random, d: dict[str, Any]) -> list[dict[str, Any]]:
    """At times (half the preemption situations with running gangs) a running
    CompositePodGroup over the running gangs' PodGroups (``running-tree``: ``basic`` or a
    gang of one, ``disruptionMode`` ``all``, ``single`` or none, a low or mid class or
    none): their Pods are victims at its priority, all of them one unit under ``all``."""
    running = [
        o
        for o in d["items"]
        if o["kind"] == "PodGroup" and o["metadata"]["name"].startswith("running-group-")
    ]
    if not running or r.random() < 0.5:
        return []
    spec: dict[str, Any] = {
        "workloadRef": {"workloadName": "wl-running", "templateName": "t-running-tree"},
        "schedulingPolicy": r.choice([{"basic": {}}, {"gang": {"minGroupCount": 1}}]),
    }
    mode = r.choices(["all", "single", None], [0.6, 0.2, 0.2])[0]
    if mode is not None:
        spec["disruptionMode"] = {mode: {}}
    cls = r.choice(["low", "mid", None])
    if cls is not None:
        spec["priorityClassName"], spec["priority"] = cls, CLASSES[cls]
    for pg in running:
        pg["spec"]["parentCompositePodGroupName"] = "running-tree"
        name = pg["metadata"]["name"]
        pg["spec"]["workloadRef"] = {"workloadName": "wl-running", "templateName": f"t-{name}"}
    meta = {"name": "running-tree", "namespace": "default"}
    return [
        {
            "apiVersion": f"{GROUP}/v1alpha3",
            "kind": "CompositePodGroup",
            "metadata": meta,
            "spec": spec,
        }
    ]


def _v136_priorities(plans: list[dict[str, Any]], objects: list[dict[str, Any]]) -> None:
    """v1.36 under WorkloadAwarePreemption: each plan's PodGroup carries its class and
    priority (v1.37's always do), as the priority admission plugin stores them."""
    for plan in plans:
        if plan["class"] is None:
            continue
        for obj in _plan_pod_groups(plan, objects):
            obj["spec"]["priorityClassName"] = plan["class"]
            obj["spec"]["priority"] = CLASSES[plan["class"]]


def _plan_pod_groups(
    plan: dict[str, Any], objects: list[dict[str, Any]]
) -> Iterator[dict[str, Any]]:
    """The PodGroup objects among ``objects`` that ``plan`` names."""
    for obj in objects:
        meta = obj["metadata"]
        if obj["kind"] == "PodGroup" and (meta["name"], meta["namespace"]) == (
            plan["name"],
            plan["namespace"],
        ):
            yield obj


def _start_times(
    gen: _Gen, running: list[dict[str, Any]], groups: list[dict[str, Any]], at: str = "02"
) -> None:
    """Distinct ``status.startTime`` on the running Pods, in a drawn order, within the hour
    ``at``; the members of a running gang preempted as one (v1.36's ``disruptionMode:
    PodGroup``) share their gang's."""
    whole = {g["metadata"]["name"] for g in groups if g["spec"].get("disruptionMode") == "PodGroup"}
    starts: dict[str, str] = {}
    order = gen.r.sample(range(len(running)), len(running))
    for pod, k in zip(running, order, strict=True):
        group = pod["spec"].get("schedulingGroup", {}).get("podGroupName")
        key = group if group in whole else pod["metadata"]["name"]
        if key not in starts:
            starts[key] = f"2026-01-01T{at}:{k // 60:02d}:{k % 60:02d}Z"
        pod.setdefault("status", {})["startTime"] = starts[key]


def classify(pod: dict[str, Any], name: str | None) -> None:
    """Give ``pod`` the PriorityClass ``name`` and its value (None: neither)."""
    if name is not None:
        pod["spec"]["priorityClassName"] = name
        pod["spec"]["priority"] = CLASSES[name]


def _belongs(pod: dict[str, Any], obj: dict[str, Any], version: str) -> bool:
    """Whether ``pod`` is a member of the group(s) ``obj`` (a Workload or PodGroup) makes."""
    spec, meta = pod["spec"], obj["metadata"]
    if pod["metadata"]["namespace"] != meta["namespace"]:
        return False
    if _minor(version) == 35:
        return spec.get("workloadRef", {}).get("name") == meta["name"]
    return spec.get("schedulingGroup", {}).get("podGroupName") == meta["name"]


def podgroup_schedule_case(seed: int, index: int, version: str | None) -> dict[str, Any]:
    """The ``index``-th podgroup ``kubesched.schedule`` case of ``seed`` at ``version``."""
    v = check_version(version)
    gen = _Gen(random.Random(f"podgroup-schedule/{seed}/{index}/{v}"), v)
    d = _draw(gen, preemption=True)
    _composite(random.Random(f"podgroup-composite/{seed}/{index}/{v}"), d)
    _widen(random.Random(f"podgroup-widen/{seed}/{index}/{v}"), d, v)
    request: dict[str, Any] = {
        "cluster": {"apiVersion": "v1", "kind": "List", "items": d["items"]},
        "pods": d["submitted"],
        "config": _config(),
    }
    if d["gates"]:
        request["featureGates"] = d["gates"]
    _placement_weights(random.Random(f"podgroup-placement/{seed}/{index}/{v}"), request)
    return request


def podgroup_case(seed: int, index: int, version: str | None) -> dict[str, Any]:
    """The ``index``-th podgroup explain case of ``seed`` at ``version``: the schedule
    case's cluster (a composite tree at times, :func:`_composite`) with every group object
    created, some members already pending in the cluster (their group short of or past its
    ``minCount``) or bound, and one member to explain."""
    v = check_version(version)
    gen = _Gen(random.Random(f"podgroup-explain/{seed}/{index}/{v}"), v)
    d = _draw(gen)
    _composite(random.Random(f"podgroup-composite-explain/{seed}/{index}/{v}"), d)
    items = list(d["items"])
    items += [o for o in d["submitted"] if o["kind"] != "Pod"]
    members = [p for p in d["submitted"] if p["kind"] == "Pod"]
    gen.r.shuffle(members)
    target = next((p for p in members if _is_member(p)), members[0])
    names = [n["metadata"]["name"] for n in d["items"] if n["kind"] == "Node"]
    for p in members:
        if p is target or gen.chance(0.4):
            continue
        if gen.chance(0.5):
            p["spec"]["nodeName"] = gen.pick(names)
        items.append(p)
    request: dict[str, Any] = {
        "cluster": {"apiVersion": "v1", "kind": "List", "items": items},
        "pod": target,
        "config": _config(),
    }
    if d["gates"]:
        request["featureGates"] = d["gates"]
    lived_in_pods(f"podgroup-lived/{seed}/{index}/{v}", request, v)  # drawn last
    return request


# --- widened draws (a stream of their own; schedule cases outside preemption) ----------

TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "x", "effect": "NoSchedule"}


def _widen(r: random.Random, d: dict[str, Any], version: str) -> None:
    """What the first draws leave narrow, drawn into a schedule case ``d`` (after
    :func:`_composite`) from a stream of its own ``r``, outside preemption situations only
    (those are :func:`_preemption`'s and its helpers'): each kind reaches a branch of
    upstream's v1.37 PodGroup machinery the first draws rarely or never ran (issue 33 item
    4), see :func:`_running_members`, :func:`_topology_keys`, :func:`_deeper_tree` and
    :func:`_signatures`; last, rarely a running member of another scheduler (the PodGroup
    cycle's ``validateScheduledPods`` refuses its group)."""
    if d["preemption"]:
        return
    _deeper_tree(r, d)
    if _minor(version) >= 36:
        _topology_keys(r, d)
    _signatures(r, d)
    _running_members(r, d)
    for pod in d["items"]:  # drawn last: rarely a running member of another scheduler
        if pod["kind"] == "Pod" and _is_member(pod) and r.random() < 0.05:
            pod["spec"]["schedulerName"] = "other-scheduler"


def _cpgs(d: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for o in [*d["items"], *d["submitted"]] if o["kind"] == "CompositePodGroup"]


def _pod_groups(d: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for o in d["objects"] if o["kind"] == "PodGroup"]


def _gang_or_basic(r: random.Random, children: int) -> dict[str, Any]:
    if r.random() < 0.2:
        return {"basic": {}}
    top = children + 1 if r.random() < 0.1 else children
    return {"gang": {"minGroupCount": r.randint(1, top)}}


def _deeper_tree(r: random.Random, d: dict[str, Any]) -> None:
    """At times (half the trees) one CompositePodGroup more nested under one of the tree's
    (some of its children moved under the new one, or all: a chain), then at times another:
    depth up to four; the parent's and the new group's policies drawn for their children."""
    tree = _cpgs(d)
    if not tree or r.random() >= 0.5:
        return
    root = next(o for o in tree if o["metadata"]["name"] == "tree-root")
    for name in ("tree-n1", "tree-n2"):
        parent = r.choice(tree)
        pname = parent["metadata"]["name"]
        children = [
            o
            for o in [*_pod_groups(d), *tree]
            if o["spec"].get("parentCompositePodGroupName") == pname
        ]
        if not children:
            break
        moved = r.sample(children, r.randint(1, len(children)))
        spec: dict[str, Any] = {
            "workloadRef": {"workloadName": "wl-tree", "templateName": f"t-{name}"},
            "schedulingPolicy": _gang_or_basic(r, len(moved)),
            "parentCompositePodGroupName": pname,
        }
        for key in ("priorityClassName", "priority"):
            if key in root["spec"]:
                spec[key] = root["spec"][key]
        if r.random() < 0.3:
            key = r.choice([RACK, ZONE, HOST])
            spec["schedulingConstraints"] = {"topology": [{"key": key}]}
        for child in moved:
            child["spec"]["parentCompositePodGroupName"] = name
        left = len(children) - len(moved) + 1
        if "gang" in parent["spec"]["schedulingPolicy"]:
            parent["spec"]["schedulingPolicy"] = _gang_or_basic(r, left)
        meta = {"name": name, "namespace": root["metadata"]["namespace"]}
        obj = {"apiVersion": root["apiVersion"], "kind": "CompositePodGroup"}
        new = {**obj, "metadata": meta, "spec": spec}
        first = next(i for i, o in enumerate(d["items"]) if o["kind"] == "PodGroup")
        d["items"].insert(first, new)
        tree.append(new)
        if r.random() >= 0.5:
            break


def _topology_keys(r: random.Random, d: dict[str, Any]) -> None:
    """A PodGroup's rack constraint at times on the hostname label (one in three) or the
    zone label (one in six), and rarely a hostname constraint where it had none; a tree's
    constraints at times on the hostname label, and rarely one added."""
    for obj in [*_pod_groups(d), *_cpgs(d)]:
        spec = obj["spec"]
        topology = spec.get("schedulingConstraints", {}).get("topology")
        if topology:
            x = r.random()
            if x < 1 / 3:
                topology[0]["key"] = HOST
            elif x < 0.5 and obj["kind"] == "PodGroup":
                topology[0]["key"] = ZONE
        elif r.random() < 0.1:
            spec["schedulingConstraints"] = {"topology": [{"key": HOST}]}


def _signatures(r: random.Random, d: dict[str, Any]) -> None:
    """At times (a group in four of two or more members) a second signature among its
    members, and now and then a third: another request, a toleration of the ``dedicated``
    taint, or a node selector on a zone, on a random part of the members."""
    for plan in d["plans"]:
        members = [p for p in plan["members"] if not p["spec"].get("nodeName")]
        if len(members) < 2 or r.random() >= 0.25:
            continue
        for _ in range(2 if r.random() < 0.3 else 1):
            part = r.sample(members, r.randint(1, len(members) - 1))
            kind = r.choices(["request", "toleration", "zone"], [0.5, 0.3, 0.2])[0]
            cpu, memory = r.choice(CPU), r.choice(MEMORY)
            for pod in part:
                spec = pod["spec"]
                if kind == "request":
                    spec["containers"][0]["resources"]["requests"] = {"cpu": cpu, "memory": memory}
                elif kind == "toleration":
                    spec["tolerations"] = [dict(TOLERATION)]
                else:
                    spec.setdefault("nodeSelector", {})[ZONE] = "zone-a"


def _running_members(r: random.Random, d: dict[str, Any]) -> None:
    """At times (a case in three) some members of some groups already running: bound in the
    cluster to nodes with room for them (their selector and tolerations kept), 1 up to all
    but one of the group's members (a gang of one member at times all), so at times its
    ``minCount`` is met before any submitted member is scheduled; a group with a topology
    constraint mostly in one domain of its key (one time in ten anywhere)."""
    if r.random() >= 0.35:
        return
    nodes = [o for o in d["items"] if o["kind"] == "Node"]
    free = _allocatable(nodes)
    for pod in d["items"]:
        if pod["kind"] == "Pod" and pod["spec"].get("nodeName") in free:
            _take(free[pod["spec"]["nodeName"]], pod)
    keys = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o["spec"]
        .get("schedulingConstraints", {})
        .get("topology", [{}])[0]
        .get("key")
        for o in _pod_groups(d)
    }
    for plan in d["plans"]:
        if r.random() >= 0.5:
            continue
        members = [p for p in plan["members"] if any(p is s for s in d["submitted"])]
        if not members:
            continue
        most = len(members) - 1 if len(members) > 1 or r.random() >= 0.3 else 1
        if most < 1:
            continue
        key = keys.get((plan["namespace"], plan["name"]))
        domain: str | None = None
        spread = r.random() < 0.1
        for pod in r.sample(members, r.randint(1, most)):
            fits = [n for n in nodes if _fits(n, pod, free[n["metadata"]["name"]])]
            if key and domain is not None and not spread:
                fits = [n for n in fits if n["metadata"]["labels"].get(key) == domain]
            if not fits:
                continue
            node = r.choice(fits)
            name = node["metadata"]["name"]
            if key and domain is None:
                domain = node["metadata"]["labels"].get(key)
            _take(free[name], pod)
            pod["spec"]["nodeName"] = name
            d["submitted"] = [s for s in d["submitted"] if s is not pod]
            d["items"].append(pod)


def _take(left: list[int], pod: dict[str, Any]) -> None:
    req = pod["spec"]["containers"][0]["resources"]["requests"]
    left[0] -= _milli(req["cpu"])
    left[1] -= _mib(req["memory"])
    left[2] -= 1


def _fits(node: dict[str, Any], pod: dict[str, Any], left: list[int]) -> bool:
    spec = pod["spec"]
    if node["spec"].get("taints") and not spec.get("tolerations"):
        return False
    labels = node["metadata"]["labels"]
    if any(labels.get(k) != v for k, v in spec.get("nodeSelector", {}).items()):
        return False
    req = spec["containers"][0]["resources"]["requests"]
    return left[0] >= _milli(req["cpu"]) and left[1] >= _mib(req["memory"]) and left[2] >= 1


def _is_member(pod: dict[str, Any]) -> bool:
    return "workloadRef" in pod["spec"] or "schedulingGroup" in pod["spec"]
