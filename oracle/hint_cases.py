"""Generated queueing-hint cases: the plugins' hints compared with upstream's.

A Pod upstream could not schedule waits in the unschedulable pool until a cluster event
that one of the plugins that rejected it registered comes, and that plugin's queueing hint
says the event may help (``Queue``) or not (``QueueSkip``).  ``explain`` never sends an
event, so without this family upstream's hints (``EventsToRegister``,
``isSchedulableAfter*``) never ran in the differential run.

``hint_case(seed, index, version)`` builds one request ``{"cluster", "pod", "config", "event"}``:
the cluster, the rejected (incoming) Pod and the configuration of ``oracle/cases.py``, and
one change of a Node or a Pod (storage objects: ``oracle/storage_hint_cases.py``):
``{"op": "add"|"update"|"delete", "old", "new"}``: a node
added (cordoned, tainted, labelled or not), updated (cordoned or uncordoned, labels,
taints, allocatable, annotations, conditions changed) or deleted; a running Pod added,
updated (labels, resources scaled down, nothing the scheduler reads) or deleted; the
rejected Pod's own update (tolerations added, scheduling gates removed, labels, resources
scaled down); another pending Pod deleted; from v1.35 the Workload API's objects (a
Workload, a PodGroup, v1.37's CompositePodGroup trees) added, updated or deleted, or a Pod
added, pending or bound, that names its group.  ``kube-oracle hints`` answers it with the events
upstream's handlers derive (``NodeSchedulingPropertiesChange``,
``PodSchedulingPropertiesChange``) and every plugin's hint for each event it registered;
``ours_hints`` answers the same with kubesched's (``kubesched.queue.events`` and each
plugin's ``events_to_register``); ``hint_differences`` lists what differs.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

from draws import APPS, EFFECTS, EXT, TAINT_KEYS, TIERS, ZONES
from generator import Gen
from release_draws import RESIZE_PREEMPTION_GATE

OPS = ("node-add", "node-update", "node-delete", "pod-add", "pod-update", "pod-delete",
       "self-update", "pending-delete")  # fmt: skip


def hint_case(seed: int, index: int, version: str | None = None) -> dict[str, Any]:
    """The ``index``-th hint case of ``seed`` (at ``version``: from v1.35, NodeDeclaredFeatures'
    events in some, :func:`_declared_features`, with its gate on; from v1.37,
    DeferredPodScheduling's, :func:`_deferred_resize`; and, from v1.35, GangScheduling's Workload
    API events: v1.35's Workload, :func:`_workload_event`, v1.36's and v1.37's PodGroup,
    :func:`_pod_group_event`, a Pod added that names its group, :func:`_member_added`, and v1.37's
    composite trees, :func:`_composite_event`)."""
    gen = Gen(random.Random(f"hints/{seed}/{index}"))
    nodes = [gen.node(i) for i in range(gen.r.randint(1, 4))]
    names = [n["metadata"]["name"] for n in nodes]
    pods = [gen.running_pod(i, names) for i in range(gen.r.randint(0, 6))]
    for p in pods:
        if p["spec"]["nodeName"] == "gone-node":
            p["spec"]["nodeName"] = names[0]
    incoming = gen.incoming_pod(names)
    if gen.chance(0.3):
        _tie_to_running(gen, incoming, pods)
    others = gen.others(incoming)
    if gen.chance(0.3):
        _resources_for_hints(gen, incoming, pods)
    if gen.chance(0.25):
        kind = gen.pick(["podAffinity", "podAntiAffinity"])
        terms = incoming["spec"].setdefault("affinity", {}).setdefault(kind, {})
        required = terms.setdefault("requiredDuringSchedulingIgnoredDuringExecution", [])
        required.append(gen.pod_term(required=True))
    # Updates are the richest hints: drawn twice as often.
    op = gen.pick([*OPS, "node-update", "pod-update", "self-update"])
    event, nodes, pods, incoming, pending = _event(gen, op, nodes, pods, incoming)
    items = [*nodes, *pods, *pending, *others]
    config = gen.config()
    # A stream of its own, drawn last: the other cases of a seed stay as they were.
    grow = Gen(random.Random(f"hints-grow/{seed}/{index}"))
    if grow.chance(0.04):
        event, items = _extended_resource_grows(grow, incoming, event, items)
    features = Gen(random.Random(f"hints-features/{seed}/{index}"))  # v1.35's, drawn last
    declares = (version or "") >= "1.35" and features.chance(0.15)
    if declares:
        event, items = _declared_features(features, incoming, event, items)
    request: dict[str, Any] = {
        "cluster": {"apiVersion": "v1", "kind": "List", "items": items},
        "pod": incoming,
        "config": config,
        "event": event,
    }
    if declares and (version or "") < "1.37":  # Alpha (v1.35), Beta (v1.36); GA, locked, at v1.37
        request["featureGates"] = {DECLARED_FEATURES_GATE: True}
    deferred = Gen(random.Random(f"hints-deferred/{seed}/{index}"))  # v1.37's, drawn last
    if (version or "") >= "1.37" and deferred.chance(0.1):
        request["event"], request["cluster"]["items"] = _deferred_resize(deferred, incoming, items)
        request["featureGates"] = {**request.get("featureGates", {}), RESIZE_PREEMPTION_GATE: True}
    # The Workload API's events (v1.35+), drawn last, each from a stream of its own; one per
    # case at most: a composite tree's (v1.37), a member Pod added, or a group object's.
    groups = Gen(random.Random(f"hints-podgroup/{seed}/{index}"))
    members = Gen(random.Random(f"hints-member/{seed}/{index}"))
    composite = Gen(random.Random(f"hints-composite/{seed}/{index}"))
    v = version or ""
    draw: _GroupDraw | None = None
    if v >= "1.37" and composite.chance(0.12):
        draw, gen_of = _composite_event, composite
    elif v >= "1.35" and members.chance(0.12):
        draw, gen_of = _member_added, members
    elif v >= "1.35" and groups.chance(0.15):
        draw, gen_of = (_workload_event if v == "1.35" else _pod_group_event), groups
    if draw is not None:
        request["event"], request["cluster"]["items"] = draw(
            gen_of, incoming, request["cluster"]["items"], v
        )
        gates = {"GenericWorkload": True}
        if v < "1.37":  # GangScheduling is its own gate before v1.37
            gates["GangScheduling"] = True
        if draw is _composite_event:  # CompositePodGroup needs TopologyAwareWorkloadScheduling
            gates.update(TopologyAwareWorkloadScheduling=True, CompositePodGroup=True)
        request["featureGates"] = {**request.get("featureGates", {}), **gates}
    return request


_GroupDraw = Callable[
    [Gen, dict[str, Any], list[dict[str, Any]], str],
    tuple[dict[str, Any], list[dict[str, Any]]],
]
"""A Workload API event's draw: ``(gen, rejected Pod, items, version) -> (event, items)``."""


# The Workload API's served version (GenericWorkload on) at each release this family draws.
_WORKLOAD_API = {"1.35": "scheduling.k8s.io/v1alpha1", "1.36": "scheduling.k8s.io/v1alpha2"}


def _gang_policy(gen: Gen) -> dict[str, Any]:
    """A ``gang`` policy (``minCount`` 1-5) most of the time, else ``basic``."""
    if gen.chance(0.75):
        return {"gang": {"minCount": gen.r.randint(1, 5)}}
    return {"basic": {}}


def _pod_group(gen: Gen, name: str, namespace: str, version: str) -> dict[str, Any]:
    """A PodGroup as the release serves it: ``scheduling.k8s.io/v1beta1`` from v1.37,
    ``v1alpha2`` at v1.36 (:func:`_gang_policy`)."""
    return {
        "apiVersion": _WORKLOAD_API.get(version, "scheduling.k8s.io/v1beta1"),
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"schedulingPolicy": _gang_policy(gen)},
    }


def _pod_group_event(
    gen: Gen, incoming: dict[str, Any], items: list[dict[str, Any]], version: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """GangScheduling's PodGroup events (v1.36's ``v1alpha2``, v1.37's ``v1beta1``,
    GenericWorkload on): the rejected Pod a member of ``group-0`` most of the time
    (``spec.schedulingGroup``), and a PodGroup added (its own group, another, or its name in
    another namespace), updated (``minCount`` lowered, raised or kept, gang to basic or back,
    a label only) or deleted.  Returns ``(event, items)``: the cluster holds the PodGroup
    after the change."""
    if gen.chance(0.85):
        incoming["spec"]["schedulingGroup"] = {"podGroupName": "group-0"}
    ns = incoming["metadata"].get("namespace") or "default"
    name = gen.pick(["group-0", "group-0", "group-1"])
    if gen.chance(0.15):
        ns = "other" if ns != "other" else "default"
    new = _pod_group(gen, name, ns, version)
    op = gen.pick(["add", "update", "update", "delete"])
    if op == "add":
        return {"op": "add", "new": new}, [*items, new]
    if op == "delete":
        return {"op": "delete", "old": new}, items
    old = copy.deepcopy(new)
    kind = gen.pick(["lower", "lower", "raise", "same", "policy", "label"])
    gang = new["spec"]["schedulingPolicy"].get("gang")
    if kind == "policy" or gang is None:
        old["spec"]["schedulingPolicy"] = (
            {"basic": {}} if gang is not None else {"gang": {"minCount": gen.r.randint(1, 5)}}
        )
    elif kind == "label":
        new["metadata"]["labels"] = {"hint-extra": "x"}
    else:
        delta = {"lower": 1, "raise": -1, "same": 0}[kind] * gen.r.randint(1, 3)
        old["spec"]["schedulingPolicy"] = {"gang": {"minCount": max(1, gang["minCount"] + delta)}}
    return {"op": "update", "old": old, "new": new}, [*items, new]


def _member_ref(version: str, group: str, workload: str = "workload-0") -> tuple[str, Any]:
    """The Pod field naming its group at ``version`` and its value: v1.35 ``workloadRef``
    (``workload``'s ``group``), v1.36+ ``schedulingGroup`` (PodGroup ``group``)."""
    if version == "1.35":
        return "workloadRef", {"name": workload, "podGroup": group}
    return "schedulingGroup", {"podGroupName": group}


def _member_added(
    gen: Gen, incoming: dict[str, Any], items: list[dict[str, Any]], version: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A Pod added that names a group (v1.35's ``spec.workloadRef``, v1.36+'s
    ``spec.schedulingGroup``): pending most of the time (the queue's ``UnscheduledPodAdd``,
    raised under GangScheduling before v1.37 and GenericWorkload from v1.37) or bound
    (``AssignedPodAdd``), while the rejected Pod is a member of ``group-0`` most of the time.
    The added Pod is in the same group, another one, or has the same reference in another
    namespace (v1.35: or another Workload, or another replica key), at times no reference;
    the groups' objects (v1.35: ``workload-0`` with ``group-0`` and ``group-1``; v1.36+: the
    PodGroups) are in the cluster most of the time.  Returns ``(event, items)``: the cluster
    holds the added Pod."""
    field, ref = _member_ref(version, "group-0")
    if gen.chance(0.85):
        incoming["spec"][field] = ref
    ns = incoming["metadata"].get("namespace") or "default"
    nodes = [o["metadata"]["name"] for o in items if o["kind"] == "Node"]
    new = gen.running_pod(40, nodes or ["node-0"])
    new["metadata"].update(name="member-new", uid="uid-member-new", namespace=ns)
    new["metadata"].pop("deletionTimestamp", None)
    if not nodes or gen.chance(0.6):
        del new["spec"]["nodeName"]
        new["status"] = {"phase": "Pending"}
    else:
        new["spec"]["nodeName"] = gen.pick(nodes)
    kinds = ["same", "same", "same", "other-group", "other-namespace", "none"]
    if version == "1.35":
        kinds += ["other-workload", "replica"]
    kind = gen.pick(kinds)
    if kind != "none":
        group = "group-1" if kind == "other-group" else "group-0"
        workload = "workload-1" if kind == "other-workload" else "workload-0"
        field, ref = _member_ref(version, group, workload)
        if kind == "replica":
            ref["podGroupReplicaKey"] = "r1"
        new["spec"][field] = ref
        if kind == "other-namespace":
            new["metadata"]["namespace"] = "other" if ns != "other" else "default"
    objects: list[dict[str, Any]] = []
    if version == "1.35":
        if gen.chance(0.85):
            wl = _workload(gen, "workload-0", ns, version)
            if len(wl["spec"]["podGroups"]) == 1:
                wl["spec"]["podGroups"].append({"name": "group-1", "policy": _gang_policy(gen)})
            objects.append(wl)
    else:
        objects = [_pod_group(gen, g, ns, version) for g in ("group-0", "group-1")]
        objects = [o for o in objects if gen.chance(0.85)]
    return {"op": "add", "new": new}, [*items, *objects, new]


_COMPOSITE_API = "scheduling.k8s.io/v1alpha3"
"""v1.37's CompositePodGroup API version (CompositePodGroup gate on)."""


def _composite_event(
    gen: Gen, incoming: dict[str, Any], items: list[dict[str, Any]], version: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """CompositePodGroup trees' events (v1.37, GenericWorkload, TopologyAwareWorkloadScheduling
    and CompositePodGroup on): the rejected Pod a member of ``group-0`` most of the time, a
    tree ``tree-root`` over ``group-0`` (directly or under ``tree-mid``) and at times
    ``group-1``, beside another tree ``tree-b`` over ``group-2``; some of those objects not
    observed.  The event: a CompositePodGroup added (one of the tree, the other tree's, or
    one of the same name in another namespace), updated (its policy or a label) or deleted;
    a PodGroup of either tree added or updated (``minCount`` lowered or raised); or a member
    Pod of either tree added (pending or bound).  GangScheduling's hints then ask whether
    both groups' roots are observed and the same (``areSameHierarchy``).  Returns ``(event,
    items)``: the cluster holds the objects after the change."""
    if gen.chance(0.9):
        incoming["spec"]["schedulingGroup"] = {"podGroupName": "group-0"}
    ns = incoming["metadata"].get("namespace") or "default"

    def policy(children: int) -> dict[str, Any]:
        if gen.chance(0.2):
            return {"basic": {}}
        return {"gang": {"minGroupCount": gen.r.randint(1, max(1, children))}}

    def cpg(name: str, parent: str | None, children: int) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "workloadRef": {"workloadName": "wl-tree", "templateName": f"t-{name}"},
            "schedulingPolicy": policy(children),
        }
        if parent is not None:
            spec["parentCompositePodGroupName"] = parent
        meta = {"name": name, "namespace": ns}
        return {"apiVersion": _COMPOSITE_API, "kind": "CompositePodGroup", "metadata": meta,
                "spec": spec}  # fmt: skip

    def pg(name: str, parent: str | None) -> dict[str, Any]:
        group = _pod_group(gen, name, ns, version)
        if parent is not None:
            group["spec"]["parentCompositePodGroupName"] = parent
            group["spec"]["workloadRef"] = {"workloadName": "wl-tree", "templateName": f"t-{name}"}
        return group

    middle = gen.chance(0.4)
    with_one = gen.chance(0.5)
    tree = [cpg("tree-root", None, 1 + int(with_one))]
    if middle:
        tree.append(cpg("tree-mid", "tree-root", 1))
    tree += [pg("group-0", "tree-mid" if middle else "tree-root"), cpg("tree-b", None, 1)]
    tree.append(pg("group-2", "tree-b"))
    if with_one:
        tree.append(pg("group-1", gen.pick(["tree-root", "tree-mid" if middle else "tree-b"])))
    observed = [o for o in tree if gen.chance(0.85)]
    what = gen.pick(["cpg-add", "cpg-add", "cpg-add", "cpg-update", "cpg-delete", "pg-add",
                     "pg-update", "pod-add"])  # fmt: skip
    if what.startswith("cpg"):
        pick = gen.pick([o for o in tree if o["kind"] == "CompositePodGroup"])
        new = copy.deepcopy(pick)
        if gen.chance(0.15):
            new["metadata"]["namespace"] = "other" if ns != "other" else "default"
        rest = [o for o in observed if o["metadata"] != new["metadata"]]
        if what == "cpg-add":
            return {"op": "add", "new": new}, [*items, *rest, new]
        if what == "cpg-delete":
            return {"op": "delete", "old": new}, [*items, *rest]
        old = copy.deepcopy(new)
        if gen.chance(0.5):
            new["metadata"]["labels"] = {"hint-extra": "x"}
        else:
            old["spec"]["schedulingPolicy"] = policy(2)
        return {"op": "update", "old": old, "new": new}, [*items, *rest, new]
    if what.startswith("pg"):
        new = copy.deepcopy(gen.pick([o for o in tree if o["kind"] == "PodGroup"]))
        rest = [o for o in observed if o["metadata"] != new["metadata"]]
        if what == "pg-add":
            return {"op": "add", "new": new}, [*items, *rest, new]
        old = copy.deepcopy(new)
        gang = new["spec"]["schedulingPolicy"].get("gang")
        count = gang["minCount"] if gang else 1
        old["spec"]["schedulingPolicy"] = {"gang": {"minCount": count + gen.pick([-1, 1, 2])}}
        if old["spec"]["schedulingPolicy"]["gang"]["minCount"] < 1:
            old["spec"]["schedulingPolicy"] = {"basic": {}}
        return {"op": "update", "old": old, "new": new}, [*items, *rest, new]
    nodes = [o["metadata"]["name"] for o in items if o["kind"] == "Node"]
    member = gen.running_pod(40, nodes or ["node-0"])
    member["metadata"].update(name="member-new", uid="uid-member-new", namespace=ns)
    member["metadata"].pop("deletionTimestamp", None)
    member["spec"]["schedulingGroup"] = {"podGroupName": gen.pick(["group-0", "group-1",
                                                                   "group-2"])}  # fmt: skip
    if not nodes or gen.chance(0.6):
        del member["spec"]["nodeName"]
        member["status"] = {"phase": "Pending"}
    else:
        member["spec"]["nodeName"] = gen.pick(nodes)
    return {"op": "add", "new": member}, [*items, *observed, member]


def _workload(gen: Gen, name: str, ns: str, version: str) -> dict[str, Any]:
    """v1.35's Workload ``name`` with ``group-0`` and, at times, ``group-1``
    (:func:`_gang_policy` each)."""
    groups = [{"name": "group-0", "policy": _gang_policy(gen)}]
    if gen.chance(0.3):
        groups.append({"name": "group-1", "policy": _gang_policy(gen)})
    return {
        "apiVersion": _WORKLOAD_API[version],
        "kind": "Workload",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"podGroups": groups},
    }


def _workload_event(
    gen: Gen, incoming: dict[str, Any], items: list[dict[str, Any]], version: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """GangScheduling's Workload events (v1.35's ``scheduling.k8s.io/v1alpha1``, GenericWorkload
    and GangScheduling on): the rejected Pod in ``workload-0``'s group ``group-0`` most of the
    time (``spec.workloadRef``), and a Workload added (its own, another, or its name in another
    namespace), updated (a group's policy, or a label only; upstream registers no Workload
    Update) or deleted.  Returns ``(event, items)`` as :func:`_pod_group_event`."""
    if gen.chance(0.85):
        incoming["spec"]["workloadRef"] = {"name": "workload-0", "podGroup": "group-0"}
    ns = incoming["metadata"].get("namespace") or "default"
    name = gen.pick(["workload-0", "workload-0", "workload-1"])
    if gen.chance(0.15):
        ns = "other" if ns != "other" else "default"
    new = _workload(gen, name, ns, version)
    op = gen.pick(["add", "add", "update", "delete"])
    if op == "add":
        return {"op": "add", "new": new}, [*items, new]
    if op == "delete":
        return {"op": "delete", "old": new}, items
    old = copy.deepcopy(new)
    if gen.chance(0.5):
        new["metadata"]["labels"] = {"hint-extra": "x"}
    else:
        old["spec"]["podGroups"][0]["policy"] = _gang_policy(gen)
    return {"op": "update", "old": old, "new": new}, [*items, new]


def _node_update(
    gen: Gen,
    nodes: list[dict[str, Any]],
    items: list[dict[str, Any]],
    change: Callable[[dict[str, Any]], None],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """An update event of one of ``nodes``: a copy ``change``d, at times with a label too,
    and either way round (the cluster holding the old or the new).  Returns
    ``(event, items)``."""
    old = gen.pick(nodes)
    new = copy.deepcopy(old)
    change(new)
    if gen.chance(0.3):
        new["metadata"].setdefault("labels", {})["hint-extra"] = "x"
    if gen.chance(0.5):
        old, new = new, old  # the change the other way round: the cluster holds ``new``
    else:
        items = [new if o is old else o for o in items]
    return {"op": "update", "old": old, "new": new}, items


def _deferred_resize(
    gen: Gen, incoming: dict[str, Any], items: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """DeferredPodScheduling's events (v1.37, InPlacePodVerticalScalingSchedulerPreemption
    on): the rejected Pod's in-place resize deferred by its kubelet (``PodResizePending``,
    ``Deferred``), its node named most of the time, and the event a node added (the Pod's
    own, or another) or a node's ``spec.podPreemptionPolicy`` changed (set, lifted, other
    owners), at times with a label too.  Returns ``(event, items)``."""
    conditions = incoming.setdefault("status", {}).setdefault("conditions", [])
    conditions.append({"type": "PodResizePending", "status": "True", "reason": "Deferred"})
    nodes = [o for o in items if o["kind"] == "Node"]

    def policy(node: dict[str, Any]) -> None:
        owners = gen.pick([None, ["cluster-autoscaler"], ["ops", "vpa"], []])
        spec = node.setdefault("spec", {})
        spec.pop("podPreemptionPolicy", None)
        if owners is not None:
            spec["podPreemptionPolicy"] = {"disableResizePreemption": owners}

    for node in nodes:
        policy(node)
    own = f"node-{10 + len(nodes)}"  # a name no node has
    if nodes and gen.chance(0.8):
        own = gen.pick([own, *(n["metadata"]["name"] for n in nodes)])
        incoming["spec"]["nodeName"] = own
    if not nodes or gen.chance(0.4):
        new = gen.node(10 + len(nodes))
        policy(new)
        return {"op": "add", "new": new}, [*items, new]
    return _node_update(gen, nodes, items, policy)


def _extended_resource_grows(
    gen: Gen, incoming: dict[str, Any], event: dict[str, Any], items: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Replace the event by a device plugin registering more of the extended resource on a
    node (its allocatable of it grows, nothing else changes) while the rejected Pod requests
    some of it (and at times nothing else): NodeResourcesFit's node hint then finds a
    requested scalar resource increased.  Returns ``(event, items)``."""
    old = next((o for o in items if o["kind"] == "Node"), None)
    if old is None:  # the event deleted the only node
        return event, items
    for c in incoming["spec"]["containers"]:
        res = c.setdefault("resources", {})
        res.pop("limits", None)
        if gen.chance(0.5):
            res["requests"] = {}
        res.setdefault("requests", {})
    incoming["spec"]["containers"][0]["resources"]["requests"][EXT] = gen.pick(["1", "2"])
    new = copy.deepcopy(old)
    old["status"]["allocatable"][EXT] = gen.pick(["0", "1"])
    new["status"]["allocatable"][EXT] = gen.pick(["4", "8"])
    for node in (old, new):
        node["status"]["capacity"] = dict(node["status"]["allocatable"])
    items = [new if o is old else o for o in items]
    return {"op": "update", "old": old, "new": new}, items


DECLARED_FEATURES_GATE = "NodeDeclaredFeatures"
FEATURES = ("RestartAllContainersOnContainerExits", "UserNamespacesHostNetworkSupport")
"""Node features a Pod's spec makes it need (``kubesched.api.nodefeatures``; v1.35's registry
knows only the first, so there a Pod needing the second needs nothing), and one no Pod
needs."""
UNNEEDED = "InPlacePodVerticalScaling"


def _declared_features(
    gen: Gen, incoming: dict[str, Any], event: dict[str, Any], items: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """NodeDeclaredFeatures' events (v1.35 Alpha, v1.36 Beta, v1.37 GA): the rejected Pod needs
    one or both of :data:`FEATURES` (a container's restart rule restarting all containers; host
    network without host users) in most cases, the nodes declare some of them, and the event is a
    node added or one whose declared features change (gained, lost, replaced, or only an unneeded
    one), at times with nothing else changed. Returns ``(event, items)``."""
    spec = incoming["spec"]
    needs = [x for x in FEATURES if gen.chance(0.6)]
    if FEATURES[0] in needs:
        rule = {"action": "RestartAllContainers",
                "exitCodes": {"operator": "In", "values": [gen.pick([1, 42])]}}  # fmt: skip
        spec["containers"][0]["restartPolicy"] = "Never"
        spec["containers"][0]["restartPolicyRules"] = [rule]
    if FEATURES[1] in needs:
        spec["hostNetwork"], spec["hostUsers"] = True, False

    def declared() -> list[str]:
        return sorted(x for x in (*FEATURES, UNNEEDED) if gen.chance(0.5))

    nodes = [o for o in items if o["kind"] == "Node"]
    for node in nodes:
        node["status"]["declaredFeatures"] = declared()
    if not nodes or gen.chance(0.3):
        new = gen.node(10 + len(nodes))  # a name no node has (a deleted one's included)
        new["status"]["declaredFeatures"] = declared()
        if gen.chance(0.2):
            new["spec"]["unschedulable"] = True
        return {"op": "add", "new": new}, [*items, new]

    def declare(node: dict[str, Any]) -> None:
        node["status"]["declaredFeatures"] = declared()

    return _node_update(gen, nodes, items, declare)


def _resources_for_hints(gen: Gen, incoming: dict[str, Any], pods: list[dict[str, Any]]) -> None:
    """Requests NodeResourcesFit's hints tell apart: the rejected Pod requesting nothing
    (BestEffort), or ephemeral storage and the extended resource, which running Pods
    request too (their scale-down frees them)."""
    containers = incoming["spec"]["containers"]
    if gen.chance(0.3):
        for c in containers:
            c.pop("resources", None)
        return
    req = containers[0].setdefault("resources", {}).setdefault("requests", {})
    req[gen.pick(["ephemeral-storage", EXT])] = "1"
    if gen.chance(0.3):
        req[EXT] = "0"  # requested at zero: the hints skip it
    for p in pods:
        r = p["spec"]["containers"][0].setdefault("resources", {}).setdefault("requests", {})
        r.update({"ephemeral-storage": "4Gi", EXT: "2"})


def _keys(incoming: dict[str, Any]) -> list[str]:
    """The node label keys the rejected Pod's constraints read: spreading and pod
    (anti-)affinity topology keys, node affinity and selector keys."""
    spec = incoming["spec"]
    keys = [c["topologyKey"] for c in spec.get("topologySpreadConstraints", [])]
    keys += list(spec.get("nodeSelector", {}))
    affinity = spec.get("affinity", {})
    for kind in ("podAffinity", "podAntiAffinity"):
        for t in affinity.get(kind, {}).get("requiredDuringSchedulingIgnoredDuringExecution", []):
            keys.append(t["topologyKey"])
    required = affinity.get("nodeAffinity", {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    for term in (required or {}).get("nodeSelectorTerms", []):
        keys += [e["key"] for e in term.get("matchExpressions", [])]
    return keys


def _selected_labels(incoming: dict[str, Any]) -> list[dict[str, str]]:
    """Labels the rejected Pod's required pod (anti-)affinity terms select by matchLabels."""
    out = []
    affinity = incoming["spec"].get("affinity", {})
    for kind in ("podAffinity", "podAntiAffinity"):
        for t in affinity.get(kind, {}).get("requiredDuringSchedulingIgnoredDuringExecution", []):
            out.append(dict(t["labelSelector"].get("matchLabels", {})))
    return [labels for labels in out if labels]


def _tie_to_running(gen: Gen, incoming: dict[str, Any], pods: list[dict[str, Any]]) -> None:
    """Make the running Pods' labels and the rejected Pod's terms meet: the hints of
    inter-pod affinity and spreading compare them."""
    app = incoming["metadata"]["labels"]["app"]
    for p in pods:
        if gen.chance(0.5):
            p["metadata"]["labels"]["app"] = app
            p["metadata"]["namespace"] = incoming["metadata"]["namespace"]


def _event(
    gen: Gen,
    op: str,
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    incoming: dict[str, Any],
) -> tuple[
    dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]
]:
    """The change ``op`` and the cluster as the informers hold it after it:
    ``(event, nodes, running Pods, rejected Pod, pending Pods)``."""
    names = [n["metadata"]["name"] for n in nodes]
    pending: list[dict[str, Any]] = []
    if op == "node-add":
        new = gen.node(len(nodes))
        if gen.chance(0.3):
            new["spec"]["unschedulable"] = True
        return {"op": "add", "new": new}, [*nodes, new], pods, incoming, pending
    if op == "node-update":
        i = gen.r.randrange(len(nodes))
        old = nodes[i]
        new = _node_changed(gen, old, _keys(incoming))
        if gen.chance(0.5):
            old, new = new, old  # the change the other way round
        nodes = [*nodes[:i], new, *nodes[i + 1 :]]
        return {"op": "update", "old": old, "new": new}, nodes, pods, incoming, pending
    if op == "node-delete":
        i = gen.r.randrange(len(nodes))
        old = nodes[i]
        return {"op": "delete", "old": old}, nodes[:i] + nodes[i + 1 :], pods, incoming, pending
    if op == "pod-add" or (op in ("pod-update", "pod-delete") and not pods):
        new = gen.running_pod(len(pods), names)
        new["spec"]["nodeName"] = gen.pick(names)
        if gen.chance(0.5):
            new["metadata"]["labels"]["app"] = incoming["metadata"]["labels"]["app"]
            new["metadata"]["namespace"] = incoming["metadata"]["namespace"]
        if gen.chance(0.2):
            _share_port(gen, incoming, new)
        return {"op": "add", "new": new}, nodes, [*pods, new], incoming, pending
    if op == "pod-update":
        i = gen.r.randrange(len(pods))
        old = pods[i]
        selected = _selected_labels(incoming)
        if selected:  # in the rejected Pod's namespace, which its terms default to
            old["metadata"]["namespace"] = incoming["metadata"]["namespace"]
        new = _pod_changed(gen, old, selected=selected)
        pods = [*pods[:i], new, *pods[i + 1 :]]
        return {"op": "update", "old": old, "new": new}, nodes, pods, incoming, pending
    if op == "pod-delete":
        i = gen.r.randrange(len(pods))
        old = pods[i]
        if gen.chance(0.2):
            _share_port(gen, incoming, old)
        return {"op": "delete", "old": old}, nodes, pods[:i] + pods[i + 1 :], incoming, pending
    if op == "self-update":
        old = incoming
        new = _pod_changed(gen, old, self_update=True)
        return {"op": "update", "old": old, "new": new}, nodes, pods, new, pending
    # pending-delete: another Pod waiting in the queue is deleted.
    other = gen.incoming_pod(names)
    other["metadata"].update(name="pending-0", uid="uid-pending-0")
    return {"op": "delete", "old": other}, nodes, pods, incoming, pending


def _share_port(gen: Gen, incoming: dict[str, Any], pod: dict[str, Any]) -> None:
    """Give ``pod`` a host port of the rejected Pod (NodePorts' hints compare them)."""
    ports = [p for c in incoming["spec"]["containers"] for p in c.get("ports", [])]
    if not ports:
        port = {"containerPort": 8080, "hostPort": gen.pick([8080, 9090])}
        incoming["spec"]["containers"][0]["ports"] = [port]
        ports = [port]
    pod["spec"]["containers"][0]["ports"] = [dict(gen.pick(ports))]


def _node_changed(gen: Gen, node: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    """``node`` after one to three changes the node controller, the kubelet or an admin
    makes (its labels mostly those of ``keys``, which the rejected Pod reads)."""
    new = copy.deepcopy(node)
    spec, status, labels = new["spec"], new["status"], new["metadata"]["labels"]
    for _ in range(gen.r.randint(1, 3)):
        what = gen.pick(["cordon", "labels", "taints", "allocatable", "annotations", "images",
                         "conditions"])  # fmt: skip
        if what == "cordon":
            if spec.get("unschedulable"):
                del spec["unschedulable"]
            else:
                spec["unschedulable"] = True
        elif what == "labels":
            key = gen.pick(
                keys
                if keys and gen.chance(0.7)
                else ["topology.kubernetes.io/zone", "tier", "disk", "kubernetes.io/hostname"]
            )
            if key in labels and gen.chance(0.4):
                del labels[key]
            else:
                values = {"topology.kubernetes.io/zone": ZONES, "tier": TIERS,
                          "disk": ["ssd", "hdd"]}.get(key, [new["metadata"]["name"]])  # fmt: skip
                labels[key] = gen.pick(values)
        elif what == "taints":
            taints = spec.setdefault("taints", [])
            if taints and gen.chance(0.5):
                taints.pop(gen.r.randrange(len(taints)))
            else:
                t = {"key": gen.pick(TAINT_KEYS), "effect": gen.pick(EFFECTS)}
                if gen.chance(0.7):
                    t["value"] = gen.pick(["true", "x"])
                taints.append(t)
            if not taints:
                del spec["taints"]
        elif what == "allocatable":
            alloc = status["allocatable"]
            name = gen.pick(["cpu", "memory", "pods", EXT, "ephemeral-storage"])
            alloc[name] = {
                "cpu": gen.pick(["500m", "2", "16"]),
                "memory": gen.pick(["1Gi", "32Gi"]),
                "pods": gen.pick(["1", "110"]),
                EXT: gen.pick(["0", "4", "8"]),
                "ephemeral-storage": gen.pick(["1Gi", "500Gi"]),
            }[name]
            status["capacity"] = dict(alloc)
        elif what == "annotations":
            new["metadata"].setdefault("annotations", {})["example.com/note"] = gen.pick(["a", "b"])
        elif what == "images":
            status["images"] = [{"names": ["nginx:1.27"], "sizeBytes": 300 * 1024 * 1024}]
        else:
            status["conditions"] = [{"type": "Ready", "status": gen.pick(["True", "False"])}]
    return new


def _pod_changed(
    gen: Gen,
    pod: dict[str, Any],
    self_update: bool = False,
    selected: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """``pod`` after a change its owner makes: labels (to or from ``selected``, labels the
    rejected Pod's affinity terms select), resources scaled down (in-place resize),
    tolerations added and scheduling gates removed (``self_update``: the only changes
    validation allows an unbound Pod besides labels), or nothing the scheduler reads.  A
    running Pod's update adds a toleration too, one time in ten, drawn last (validation
    allows adding tolerations to any Pod; upstream's queue hands the assigned Pod's
    ``UpdatePodToleration`` to every rejected Pod's hints, whose "another Pod" branch
    answers it)."""
    new = copy.deepcopy(pod)
    meta, spec = new["metadata"], new["spec"]
    choices = ["labels", "scale-down", "annotations"]
    if self_update:
        choices += ["tolerations", "gates", "tolerations"]
    for _ in range(gen.r.randint(1, 2)):
        what = gen.pick(choices)
        if what == "labels" and selected and gen.chance(0.6):
            # Matching every selected term before and none after, or the other way round.
            matching = {k: v for chosen in selected for k, v in chosen.items()}
            before, after = pod["metadata"].setdefault("labels", {}), meta["labels"]
            if gen.chance(0.5):
                before, after = after, before
            before.update(matching)
            after.update({k: "other" for k in matching})
        elif what == "labels":
            labels = meta.setdefault("labels", {})
            key = gen.pick(["app", "tier", "version"])
            if key in labels and key != "app" and gen.chance(0.4):
                del labels[key]
            else:
                labels[key] = gen.pick({"app": APPS, "tier": TIERS}.get(key, ["v1", "v2"]))
        elif what == "scale-down":
            for c in spec["containers"]:
                req = c.get("resources", {}).get("requests")
                if not req:
                    continue
                name = gen.pick(sorted(req))
                if gen.chance(0.3):
                    req.pop(name)
                else:
                    req[name] = {"cpu": "50m", "memory": "64Mi", EXT: "1"}.get(name, "1Mi")
        elif what == "annotations":
            meta.setdefault("annotations", {})["example.com/note"] = "x"
        elif what == "tolerations":
            _add_toleration(gen, spec)
        elif what == "gates":
            spec.pop("schedulingGates", None)
            if "schedulingGates" in pod["spec"] or gen.chance(0.5):
                pod["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    if not self_update and gen.chance(0.1):
        _add_toleration(gen, spec)
    return new


def _add_toleration(gen: Gen, spec: dict[str, Any]) -> None:
    """One more toleration in ``spec``: of cordoned Nodes' taint or a drawn one."""
    tol = spec.setdefault("tolerations", [])
    if gen.chance(0.3):
        tol.append({"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                    "effect": "NoSchedule"})  # fmt: skip
    else:
        tol.append(gen.toleration())


# --- the comparison ------------------------------------------------------------------------


def ours_hints(request: dict[str, Any], version: str | None = None) -> dict[str, Any]:
    """kubesched's answer: the events the change amounts to (``kubesched.queue.events``)
    and every plugin's hint for each event it registered (``events_to_register``), in
    ``kube-oracle hints``' shape; an input error is an answer too."""
    from compare import DEFAULT_VERSION

    from kubesched.api import objects as api
    from kubesched.api import workload
    from kubesched.api.errors import InputError
    from kubesched.api.parse import parse_node, parse_pod
    from kubesched.config import featuregates
    from kubesched.config.load import load_config
    from kubesched.explainer.cycle import build_cluster
    from kubesched.framework import podgroups
    from kubesched.framework.clusterevents import (
        ActionType,
        ClusterEvent,
        QueueingHint,
        Resource,
    )
    from kubesched.framework.events import object_event
    from kubesched.framework.interface import Handle
    from kubesched.framework.runtime import Framework
    from kubesched.plugins.registry import full_registry, known_plugin_names
    from kubesched.queue import events as ev

    def obj(raw: dict[str, Any] | None) -> Any:
        if raw is None:
            return None
        if raw.get("kind") == "Node":
            return parse_node(copy.deepcopy(raw), "event")
        if raw.get("kind") == "Pod":
            return parse_pod(copy.deepcopy(raw), "event")
        return copy.deepcopy(raw)  # another object: as ``Scheduler.on_object`` hears it

    try:
        gates = featuregates.from_spec(version or DEFAULT_VERSION, request.get("featureGates"), "")
        cfg = load_config(request["config"], known_plugins=known_plugin_names(), gates=gates)
        cluster, _ = build_cluster(request["cluster"])
        pod = parse_pod(copy.deepcopy(request["pod"]), "pod")
        event = request["event"]
        old, new = obj(event.get("old")), obj(event.get("new"))
    except InputError as e:
        return {"error": str(e)}
    op = event["op"]
    since_v137 = gates.at_least("1.37")
    subject = old if op == "delete" else new
    events: list[ClusterEvent]
    if isinstance(subject, dict):  # a storage object: its informer's one event
        event_of = object_event(
            str(subject.get("kind")),
            op == "delete",
            op == "update",
            workload_api=workload.is_workload_api(subject),
        )
        events = [] if event_of is None else [event_of]
    elif isinstance(subject, api.Node):
        if op == "update":
            events = ev.node_scheduling_properties_change(new, old)
        else:
            action = ActionType.ADD if op == "add" else ActionType.DELETE
            events = [ClusterEvent(Resource.NODE, action)]
    elif op == "update":
        # An unbound Pod's update is the queued Pod's own (kube-oracle's ``isTargetPod``).
        events = ev.pod_scheduling_properties_change(
            new, old, target=since_v137, since_v137=since_v137
        )
    elif op == "add" and not subject.node_name:
        # A pending Pod's add moves the pooled Pods only under the Workload API's gate
        # (upstream ``addPodToSchedulingQueue``): else no event.
        moves = podgroups.unscheduled_add_moves(cfg.feature_gates)
        events = [ev.EVENT_UNSCHEDULED_POD_ADD] if moves else []
    else:
        assigned = bool(subject.node_name)
        resource = Resource.ASSIGNED_POD if assigned else Resource.UNSCHEDULED_POD
        action = ActionType.ADD if op == "add" else ActionType.DELETE
        events = [ClusterEvent(resource, action)]
    out: dict[str, Any] = {
        "events": [ev.event_label(e, since_v137=since_v137) for e in events],
        "hints": [],
    }
    profile = next((p for p in cfg.profiles if p.scheduler_name == pod.scheduler_name), None)
    if profile is None:
        return out
    try:
        fwk = Framework(
            profile,
            full_registry(),
            Handle(cluster, feature_gates=cfg.feature_gates),
            percentage_of_nodes_to_score=100,
        )
    except InputError as e:
        return {"error": str(e)}
    hints = []
    for plugin, registered in fwk.events_to_register().items():
        for e in events:
            for reg in registered:
                if not ev.matches(reg.event, e):
                    continue
                hint = QueueingHint.QUEUE
                if reg.hint is not None:
                    try:
                        hint = reg.hint(pod, old, new)
                    except Exception:  # the queue: an error means Queue
                        hint = QueueingHint.QUEUE
                name = "Queue" if hint == QueueingHint.QUEUE else "QueueSkip"
                label = ev.event_label(e, since_v137=since_v137)
                hints.append({"event": label, "plugin": plugin, "hint": name})
    out["hints"] = sorted(hints, key=lambda h: (h["event"], h["plugin"]))
    return out


# Plugins whose hints only a rejection kubesched never makes would ask: DefaultPreemption
# registers Pod/Delete (always QueueSkip) for a Pod its PreEnqueue holds while its
# asynchronous preemption runs; kubesched preempts synchronously and holds no Pod
# (docs/fidelity.md, deliberate deviations), so it registers nothing.
NEVER_REJECTING = {"DefaultPreemption"}


def hint_differences(ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    """What differs: an error on one side only, the derived events, each (event, plugin)'s
    hint, and the (event, plugin) pairs one side asks and the other does not (but for
    ``NEVER_REJECTING``'s)."""
    if "error" in ours or "error" in theirs:
        if ("error" in ours) != ("error" in theirs):
            return [f"error: ours {ours.get('error')!r}, upstream {theirs.get('error')!r}"]
        return []
    lines = []
    if ours["events"] != theirs["events"]:
        lines.append(f"events: ours {ours['events']}, upstream {theirs['events']}")
    a = {(h["event"], h["plugin"]): h["hint"] for h in ours["hints"]}
    b = {(h["event"], h["plugin"]): h["hint"] for h in theirs["hints"]}
    for key in [k for k in b if k[1] in NEVER_REJECTING and k not in a]:
        del b[key]
    for key in sorted(a.keys() | b.keys()):
        if a.get(key) != b.get(key):
            lines.append(f"{key[1]} on {key[0]}: ours {a.get(key)}, upstream {b.get(key)}")
    return lines
