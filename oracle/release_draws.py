"""What a release adds to the default family's cases (drawn last, so a seed's cases at v1.34
stay as they were): Node declared features and the Pods that need them, and the feature gates
a case sets on both sides, within what the release lets a user set."""

from __future__ import annotations

from typing import Any

from draws import Draw
from request_shape import node_names

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
    "TaintTolerationComparisonOperators",
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
    gen: Draw, items: list[dict[str, Any]], pods: list[dict[str, Any]], version: str | None
) -> dict[str, bool]:
    """What exists only from a release on, drawn LAST (so a seed's cases stay as they were
    before it, and as they are at v1.34): Nodes' ``status.declaredFeatures`` and Pods
    (``pods``: the ones to place) that need them (1.35+); random ``--feature-gates``
    settings the release accepts; then (last) numeric taints and ``Gt``/``Lt`` tolerations
    (:func:`numeric_tolerations`, TaintTolerationComparisonOperators, 1.35+).  Changes
    ``items`` and ``pods`` in place; returns the gates set (empty: the release's
    defaults)."""
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
    if nodes and gen.chance(0.3):  # drawn last: the cases above stay as they were
        numeric_tolerations(gen, nodes, pods)
        if COMPARISON_GATE in settable_gates(version) and gen.chance(0.6):
            gates[COMPARISON_GATE] = True
    if check_settings(version, sorted(gates.items())):
        return {}
    return gates


COMPARISON_GATE = "TaintTolerationComparisonOperators"


def numeric_tolerations(gen: Draw, nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
    """Taints whose value is a number (a hardware generation, a priority tier) on some
    ``nodes``, and on ``pods`` tolerations with ``Gt``/``Lt`` against them (in place):
    upstream compares them as int64 with TaintTolerationComparisonOperators on (a taint
    value that is no canonical decimal integer never matches), and lets them tolerate
    nothing with the gate off.  At times the Pod's spreading honours taints
    (``nodeTaintsPolicy: Honor``), which reads the same tolerations."""
    key = "example.com/generation"
    for node in nodes:
        if gen.chance(0.6):
            value = gen.pick(["1", "5", "8", "12", "0", "07", "v3"])
            effect = gen.pick(["NoSchedule", "NoSchedule", "PreferNoSchedule", "NoExecute"])
            taints = node.setdefault("spec", {}).setdefault("taints", [])
            taints.append({"key": key, "value": value, "effect": effect})
    for pod in pods:
        spec = pod["spec"]
        for _ in range(gen.r.randint(1, 2)):
            tol: dict[str, Any] = {"key": key, "operator": gen.pick(["Gt", "Lt"]),
                                   "value": gen.pick(["0", "4", "8", "-1", "100"])}  # fmt: skip
            if gen.chance(0.4):
                tol["effect"] = gen.pick(["NoSchedule", "PreferNoSchedule", "NoExecute"])
            spec.setdefault("tolerations", []).append(tol)
        for c in spec.get("topologySpreadConstraints", []):
            if gen.chance(0.5):
                c["nodeTaintsPolicy"] = "Honor"


# Beta gates of the scheduler's own machinery a user may turn from their default, with the
# setting drawn: SchedulerAsyncAPICalls on (the API dispatcher: DefaultBinder binds through
# the API cacher), SchedulerAsyncPreemption off (DefaultPreemption registers no events and its
# PreEnqueue admits every Pod).  Neither changes a placement; they reach upstream's other
# branch in the verb that builds the whole scheduler (``schedule_case``).
MACHINERY_GATES = {"SchedulerAsyncAPICalls": True, "SchedulerAsyncPreemption": False}


def machinery_gates(gen: Draw, version: str | None) -> dict[str, bool]:
    """Each of :data:`MACHINERY_GATES` the release lets a user set away from its default,
    half the time (at every release, v1.34 included; drawn last).  Half, not less: a
    schedule binds a Pod about one time in three, and the coverage run's 30 schedules must
    bind some both through the API dispatcher and without it."""
    from compare import DEFAULT_VERSION

    from kubesched.config.featuregates import gate_table

    table = gate_table(version or DEFAULT_VERSION)
    gates: dict[str, bool] = {}
    for gate, value in MACHINERY_GATES.items():
        spec = table.get(gate)
        if spec is None or spec.lock_to_default or spec.default == value:
            continue
        if gen.chance(0.5):
            gates[gate] = value
    return gates


def _declared_features(gen: Draw, nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
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


RESIZE_PREEMPTION_GATE = "InPlacePodVerticalScalingSchedulerPreemption"


def deferred_resize(
    gen: Draw, items: list[dict[str, Any]], pod: dict[str, Any], version: str | None
) -> dict[str, bool]:
    """v1.37+: the Pod to place in the middle of an in-place resize the kubelet deferred
    (condition ``PodResizePending``, reason ``Deferred``, at times after ``PodResizeInProgress``
    or before a second, ``Infeasible``, one: only the first counts; or ``PodResizeInProgress``
    alone), some Nodes with ``spec.podPreemptionPolicy.disableResizePreemption``,
    and the gate InPlacePodVerticalScalingSchedulerPreemption on (most of the time, else
    left off): DeferredPodScheduling then checks only the Pod's node, the other filter plugins
    Skip it.  Changes ``items`` and ``pod`` in place; returns the gates to set.  Only for
    the explain verb: upstream queues a bound resize-deferred Pod, and the schedule verb's
    Pods that fit then fail for ever without an Event (docs/fidelity.md).  Never ``Infeasible``
    first: v1.37 then counts a container without a resize status as requesting nothing, which
    kubesched does not do for the Pod to place (docs/fidelity.md)."""
    if version is None or _minor(version) < 37 or not gen.chance(0.3):
        return {}
    for node in (o for o in items if o.get("kind") == "Node"):
        if gen.chance(0.3):
            owners = gen.pick([["cluster-autoscaler"], ["ops", "vpa"], []])
            node.setdefault("spec", {})["podPreemptionPolicy"] = {"disableResizePreemption": owners}
    conditions = pod.setdefault("status", {}).setdefault("conditions", [])
    kind = gen.pick(["Deferred", "Deferred", "Deferred", "InProgress", "after", "before"])
    if kind in ("InProgress", "after"):
        conditions.append({"type": "PodResizeInProgress", "status": "True"})
    if kind != "InProgress":
        conditions.append({"type": "PodResizePending", "status": "True", "reason": "Deferred"})
    if kind == "before":
        conditions.append({"type": "PodResizePending", "status": "True", "reason": "Infeasible"})
    if gen.chance(0.4):  # as it runs: its node named (explain places it anew)
        names = node_names(items)
        if names:
            pod["spec"]["nodeName"] = gen.pick(names)
    return {RESIZE_PREEMPTION_GATE: True} if gen.chance(0.8) else {}


def resize_preemption_gate(
    gen: Draw, items: list[dict[str, Any]], pods: list[dict[str, Any]], version: str | None
) -> dict[str, bool]:
    """v1.37+, the schedule verb: the gate InPlacePodVerticalScalingSchedulerPreemption on
    at times (DeferredPodScheduling in the profile, its events registered, Fit's and the
    other plugins' branches taken) with some Nodes' ``spec.podPreemptionPolicy`` set, when
    no Pod of the case (``items``' or the submitted ``pods``) has its resize deferred: upstream
    queues such a Pod, bound or not, and its attempts end without an Event, so the run never
    settles (:func:`deferred_resize` draws them for explain).  Changes ``items`` in place;
    returns the gates to set."""
    if version is None or _minor(version) < 37 or not gen.chance(0.25):
        return {}
    everyone = [o for o in items if o.get("kind") == "Pod"] + pods
    if any(_deferred(p) for p in everyone):
        return {}
    for node in (o for o in items if o.get("kind") == "Node"):
        if gen.chance(0.4):
            policy = {"disableResizePreemption": gen.pick([["vpa"], []])}
            node.setdefault("spec", {})["podPreemptionPolicy"] = policy
    return {RESIZE_PREEMPTION_GATE: True}


def _deferred(pod: dict[str, Any]) -> bool:
    for c in pod.get("status", {}).get("conditions", []):
        if c.get("type") == "PodResizePending":
            return bool(c.get("reason") == "Deferred")
    return False
