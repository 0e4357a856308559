"""``kubesched.explain``: why is this Pod Pending, and why that node?

Evaluates one Pod against a cluster snapshot (what ``kubectl get nodes,pods -A -o json``
prints) with the real plugins of the Pod's profile, on **every** node (no sampling), and
returns each node's filter verdict with reasons, each plugin's normalized score, the
weighted total and the node the scheduler would pick (ties broken by the same seeded
generator the scheduler starts with).  Output shape: docs/design.md section 5.

A Pod a PreEnqueue plugin holds back (``spec.schedulingGates``) is ``"Gated"`` with the
message ``schedule`` gives (``waiting for scheduling gates: [...]``) and no selected node;
its ``nodes`` are what the cycle would find if the gates were removed.

With ``extenders`` configured, the filter extenders are called once with every node the
plugins found feasible and the prioritize extenders once with the nodes left (real HTTP
calls, as the scheduler makes them); each node they saw gets an ``"extenders"`` mapping
``{urlPrefix: {"verdict": "Passed" | "Unschedulable" | "UnschedulableAndUnresolvable" |
"Removed" | "Skipped", "reasons": [str], "score": int, "weightedScore": int}}`` (``score``
keys only from prioritizing extenders, ``scoreError`` when that call failed); a node an
extender rejected has ``"plugin": "Extender"`` (upstream's name) and ``"extender"`` naming
it; extender scores (``score * weight * 10``) are part of the node's ``score``.

The chosen node then goes through Reserve and Permit (undone at once): a rejection there
makes the Pod Unschedulable with upstream's message, e.g. ``0/1 nodes are available: 1
PodGroup not found.`` for a Coscheduling member whose PodGroup the snapshot lacks (a missing
referenced object is logged once as a warning, see :mod:`kubesched.admission.references`).

Nominations count as in the scheduling cycle.  The snapshot's other pending Pods with
``status.nominatedNodeName`` (those a profile schedules and no PreEnqueue plugin holds back:
upstream's queue nominates them) are treated as running on their nominated node by the Filter
plugins for a Pod of lower or equal priority (upstream ``RunFilterPluginsWithNominatedPods``),
in the verdicts and in preemption's dry run.  A Pod with ``status.nominatedNodeName`` (it has
preempted) tries that node first, as upstream's ``evaluateNominatedNode``: when it passes
every filter (and filter extender) it is the selected node whatever the scores, and the
message says so (``... selected NODE, the Pod's nominated node: the scheduler tries it first
and it passes every filter``); otherwise the cycle goes on over every node as usual.

A member of a Workload API PodGroup (v1.35+, GenericWorkload on) also gets a
``"podGroup"`` object: whether its whole group fits, which member fits where and what is
missing (:mod:`kubesched.explainer.podgroup`); when the Pod fits alone but its group does
not, its ``result`` and ``message`` are what the scheduler would report for it.

Only an Unschedulable answer has a ``"capacity"`` object (short of capacity or fragmented,
:mod:`kubesched.explainer.capacity`).  In any answer, a node DynamicResources rejected with
``cannot allocate all claims`` has a ``"devices"`` list naming each request's problem there
(:mod:`kubesched.explainer.devicefit`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from kubesched.admission import references
from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.api.parse import ParsedObjects, parse_objects, parse_pod, split_documents
from kubesched.api.pods import skip_pod_level_resources
from kubesched.api.source import FREEZE_ANSWER_AFTER, bulk_allocation
from kubesched.config import extenders as extender_config
from kubesched.config.featuregates import RESIZE_PREEMPTION, FeatureGates
from kubesched.config.load import load_config
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.explainer import capacity, devicefit, podgroup
from kubesched.framework import podgroups
from kubesched.framework.interface import (
    SUCCESS,
    Code,
    CycleState,
    ExtenderError,
    Handle,
    IntArray,
    Status,
)
from kubesched.framework.outcomes import (
    FilterOutcome,
    PostFilterResult,
    with_nominated_failure,
)
from kubesched.framework.runtime import Framework, PluginError
from kubesched.plugins.registry import full_registry, known_plugin_names
from kubesched.queue.nominator import Nominator
from kubesched.scheduler import Diagnosis, rejected_on_node
from kubesched.scheduler.extenders import EXTENDER_NAME, ExtenderFilterOutcome, Extenders
from kubesched.state.cache import POD_LEVEL_RESIZE_GATE, RESIZE_TOTALS_SINCE, ClusterState
from kubesched.state.nodes import NodeTable

TERMINAL_PHASES = ("Succeeded", "Failed")


def build_cluster(
    snapshot: Mapping[str, Any] | list[Any] | ParsedObjects,
    *,
    leave_out: str | None = None,
) -> tuple[ClusterState, list[api.Pod]]:
    """A cache holding the snapshot's nodes and running Pods; also returns unbound Pods.
    ``snapshot`` is a List (or a list of objects), or the objects already parsed.  The bound
    Pod keyed ``leave_out`` is not added (the Pod being explained: never in the cache, so
    the others keep the snapshot's order on their nodes, which preemption reads)."""
    with bulk_allocation():
        if isinstance(snapshot, ParsedObjects):
            parsed = snapshot
        elif isinstance(snapshot, Mapping):
            if not isinstance(snapshot.get("items", []), list):
                raise InputError([("items", "must be a list of Node and Pod objects")])
            parsed = parse_objects(split_documents([dict(snapshot)]))
        else:
            parsed = parse_objects(split_documents(list(snapshot)))
        cluster = ClusterState(capacity=max(64, len(parsed.nodes)))
        for node in parsed.nodes:
            cluster.add_node(node)
        for obj in parsed.others:
            cluster.apply_object(obj)
        live = [p for p in parsed.pods if p.phase not in TERMINAL_PHASES]
        # Pods bound to a node the snapshot does not list are left out.
        cluster.add_bound_pods([p for p in live if p.node_name and p.key != leave_out])
        return cluster, [p for p in live if not p.node_name]


def _config(
    config: Mapping[str, Any] | KubeSchedulerConfiguration | None, gates: FeatureGates | None
) -> Any:
    if isinstance(config, KubeSchedulerConfiguration):
        return config
    return load_config(config, known_plugins=known_plugin_names(), gates=gates)


def explain(
    cluster: Mapping[str, Any] | list[Any] | ParsedObjects,
    pod: Mapping[str, Any] | api.Pod,
    config: Mapping[str, Any] | KubeSchedulerConfiguration | None = None,
    *,
    preemption: bool = False,
    gates: FeatureGates | None = None,
    pool_seed: int | None = None,
) -> dict[str, Any]:
    """Explain the placement of ``pod`` on ``cluster`` (dicts in, dict out).  The CLI passes
    all three parsed, after checking them once: the snapshot's objects, the Pod (as
    ``parse_objects(..., admit=False)`` gives it, taken and changed here: its node name is
    cleared) and the configuration.  With
    ``preemption``, an Unschedulable answer also has ``"preemption": {"message",
    "nominatedNode", "victims"}``: what PostFilter would do (a dry run, nothing deleted).
    ``gates`` (the Kubernetes version and feature gates) applies when ``config`` is not a
    loaded configuration, which carries its own.  ``pool_seed``: the order DynamicResources
    searches a node's device pools in is drawn from it (``Handle.pool_seed``)."""
    cfg = _config(config, gates)
    with bulk_allocation(FREEZE_ANSWER_AFTER):  # the cache and the plugins' indexes
        p = pod if isinstance(pod, api.Pod) else parse_pod(dict(pod), "pod")
        state_cluster, pending = build_cluster(cluster, leave_out=p.key if p.node_name else None)
        state_cluster.count_resize_totals(
            cfg.feature_gates.at_least(RESIZE_TOTALS_SINCE),
            cfg.feature_gates.enabled(POD_LEVEL_RESIZE_GATE),
        )
        if not cfg.feature_gates.enabled("PodLevelResources"):
            state_cluster.skip_pod_level_resources()
            for waiting in (*pending, p):
                skip_pod_level_resources(waiting)
        references.check(list(state_cluster.objects.values()), [p])  # warns about missing ones
        p.node_name = ""
        _check_other_profiles(cfg, state_cluster, p.scheduler_name)
        profile = next((pr for pr in cfg.profiles if pr.scheduler_name == p.scheduler_name), None)
        out: dict[str, Any] = {
            "pod": p.key,
            "profile": p.scheduler_name,
            "kubernetesVersion": cfg.feature_gates.version,
            "result": "Error",
            "selectedNode": None,
            "message": "",
            "nodes": {},
        }
        if profile is None:
            out["message"] = f'profile not found for scheduler name "{p.scheduler_name}"'
            return out
        ext_configs = extender_config.parse_extenders(cfg.extenders)
        profile = extender_config.apply_ignored_resources((profile,), ext_configs)[0]
        handle = Handle(state_cluster, feature_gates=cfg.feature_gates, pool_seed=pool_seed)
        if podgroups.enabled(cfg.feature_gates):  # GangScheduling counts the pending members
            manager = podgroups.PodGroupManager(cfg.feature_gates, state_cluster)
            for member in (*pending, p):
                manager.on_pod_add(member)
            handle.services.provide(podgroups.POD_GROUP_MANAGER, manager)
        fwk = Framework(profile, full_registry(), handle, percentage_of_nodes_to_score=100)
        fwk.nominator = _nominator(cfg, fwk, state_cluster, pending, p)
    extenders = Extenders(ext_configs) if ext_configs else None
    try:
        _evaluate(fwk, state_cluster, p, out, extenders, preemption)
    except (PluginError, ExtenderError) as e:
        out["result"], out["message"] = "Error", str(e)
    finally:
        if extenders is not None:
            extenders.close()
    gate = fwk.run_pre_enqueue(p)
    if not gate.is_success():
        # Upstream's PreEnqueue keeps the Pod out of activeQ, so no cycle runs for it; the
        # nodes still show what a cycle would find once the gates are removed.
        out.update(result="Gated", selectedNode=None, message=gate.message())
    group = podgroup.explain_group(cfg, state_cluster, pending, p)
    if group is not None:
        out["podGroup"], why = group
        if why is not None and out["result"] == "Scheduled":  # it fits, its group does not
            # What the framework says of the Pod alone (kube-oracle's explain runs only that).
            out["podGroup"]["alone"] = {
                k: out[k] for k in ("result", "selectedNode", "message") if k in out
            }
            out.update(
                result="Unschedulable" if why.message() and _rejected(why) else "Error",
                selectedNode=None,
                message=why.message(),
            )
    return out


def _check_other_profiles(
    cfg: KubeSchedulerConfiguration, cluster: ClusterState, scheduler_name: str
) -> None:
    """Build (and drop) the framework of every profile but ``scheduler_name``'s: upstream's
    scheduler creates all its profiles before it schedules anything, so a profile the Pod
    does not name refuses the configuration too (a plugin registered twice at a point, bad
    args of a plugin it enables): :class:`InputError`."""
    for profile in cfg.profiles:
        if profile.scheduler_name != scheduler_name:
            handle = Handle(cluster, feature_gates=cfg.feature_gates)
            Framework(profile, full_registry(), handle, percentage_of_nodes_to_score=100)


def _rejected(why: Diagnosis | Status) -> bool:
    return isinstance(why, Diagnosis) or why.is_rejected()


def _nominator(
    cfg: KubeSchedulerConfiguration,
    fwk: Framework,
    cluster: ClusterState,
    pending: list[api.Pod],
    pod: api.Pod,
) -> Nominator:
    """The nominations the scheduling queue would hold: each pending Pod (other than
    ``pod``) with a nominated node, whose profile exists and whose PreEnqueue plugins let it
    into activeQ (upstream nominates a Pod as it enters activeQ, so a gated one is not).
    From v1.37 upstream's ``addPod`` nominates every added Pod, gated or not."""
    nominator = Nominator()
    gated_too = cfg.feature_gates.at_least("1.37")
    profiles = {pr.scheduler_name: pr for pr in cfg.profiles}
    frameworks = {fwk.profile_name: fwk}
    for other in pending:
        profile = profiles.get(other.scheduler_name)
        if other.key == pod.key or not other.nominated_node_name or profile is None:
            continue
        f = frameworks.get(other.scheduler_name)
        if f is None:
            f = frameworks[other.scheduler_name] = Framework(
                profile,
                full_registry(),
                Handle(cluster, feature_gates=cfg.feature_gates),
                percentage_of_nodes_to_score=100,
            )
        if gated_too or f.run_pre_enqueue(other).is_success():
            nominator.add(other)
    return nominator


def _evaluate(
    fwk: Framework,
    cluster: ClusterState,
    pod: api.Pod,
    out: dict[str, Any],
    extenders: Extenders | None = None,
    preemption: bool = False,
) -> dict[str, Any]:
    table = cluster.nodes
    order = table.order()
    names = [table.names[int(r)] for r in order]
    nodes: dict[str, dict[str, Any]] = out["nodes"]
    n = len(names)
    if n == 0:
        out["message"] = "no nodes available to schedule pods"
        return out
    state = CycleState()
    pre, status, rejectors = fwk.run_pre_filter(state, pod)
    if not status.is_success():
        if status.code == Code.ERROR:
            out["message"] = status.message()
            return out
        for name in names:
            nodes[name] = _node(False, status.plugin, list(status.reasons))
        out["result"] = "Unschedulable"
        diagnosis = Diagnosis(n, Counter(), rejectors, status.message(), absent=status)
        out["message"] = diagnosis.message()
        devices = devicefit.DeviceFits.of(fwk.instances, cluster, pod)
        out["capacity"] = capacity.assess(fwk, state, pod, None, False, devices)
        if preemption:
            out["preemption"] = _preemption(fwk, state, pod, diagnosis)
        return out
    # Upstream findNodesThatFitPod: the nominated node is tried first, whatever PreFilter
    # narrowed to, and taken if it passes; every node's verdict is still worked out below.
    nominated: str | None = None
    interned: dict[Status, int] = {}
    first: FilterOutcome | None = None
    if pod.nominated_node_name in table.row_of:
        one = np.asarray([table.row_of[pod.nominated_node_name]], dtype=np.int64)
        first = fwk.run_filter_with_nominated(state, pod, one, interned)
        fits = first.feasible
        if fits.size and _nominated_passes_extenders(extenders, pod, table, fits):
            nominated = pod.nominated_node_name
    rows = order
    reason = ""
    absent: Status | None = None
    if pre is not None and pre.node_names is not None:
        keep = np.isin(np.asarray(names, dtype=object), np.asarray(sorted(pre.node_names)))
        reason = f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(rejectors))}]"
        absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (reason,))
        for name in np.asarray(names, dtype=object)[~keep].tolist():
            nodes[name] = _node(False, sorted(rejectors)[0], [reason])
        rows = order[keep]
    outcome = fwk.run_filter_with_nominated(state, pod, rows, interned)
    narrowed_out = 0
    if first is not None and not (rows == table.row_of[pod.nominated_node_name]).any():
        # PreFilter left the nominated node out, yet it was filtered: the cycle records its
        # Filter verdict for it (upstream's diagnosis keeps the first pass's status).
        narrowed_out = 1
        if first.failed.size:
            outcome = with_nominated_failure(outcome, first, rows)
        else:
            nodes[pod.nominated_node_name] = _node(True, None, [])
    devices = devicefit.DeviceFits.of(fwk.instances, cluster, pod)
    for i, row in enumerate(outcome.failed.tolist()):
        st = outcome.status_of(i)
        info = nodes[table.names[row]] = _node(False, st.plugin, list(st.reasons))
        if devices is not None and devicefit.CANNOT_ALLOCATE in st.reasons:
            info["devices"] = devices.node_problems(cluster, row)
    feasible = outcome.feasible
    counts = outcome.reason_counts()
    if extenders is not None and feasible.size:
        ext = extenders.filter(pod, table, feasible)
        _extender_verdicts(nodes, ext)
        for st in ext.statuses:
            counts[st.reasons[0]] += 1
        feasible = ext.feasible
    if feasible.size == 0 and nominated is None:
        if rows.size + narrowed_out < n:
            counts[reason] += n - int(rows.size) - narrowed_out
        out["result"] = "Unschedulable"
        diagnosis = Diagnosis(n, counts, rejectors, outcome=outcome, absent=absent)
        out["message"] = diagnosis.message()
        passed = bool(outcome.feasible.size)
        out["capacity"] = capacity.assess(fwk, state, pod, rows, passed, devices)
        if preemption:
            out["preemption"] = _preemption(fwk, state, pod, diagnosis)
        return _ordered(out, names)
    for row in feasible.tolist():  # listed feasible even when PreScore or Score fails next
        name = table.names[row]
        nodes[name] = {**_node(True, None, []), **nodes.get(name, {})}
    scores = None
    if fwk.has_score_plugins() and feasible.size:
        pre_status = fwk.run_pre_score(state, pod, feasible)
        # Upstream does not score when it takes the nominated node, so neither PreScore's
        # nor Score's failure ends the cycle then.
        if pre_status.is_success():
            try:
                scores = fwk.run_score(state, pod, feasible)
            except PluginError:
                if nominated is None:
                    raise
        elif nominated is None:
            raise PluginError(pre_status.plugin, pre_status.message(), point="pre_score")
    total: IntArray | None = None if scores is None else scores.total
    if extenders is not None and feasible.size:
        ext_total = _extender_scores(nodes, extenders, pod, cluster, feasible)
        total = ext_total if total is None else total + ext_total
    for i, row in enumerate(feasible.tolist()):
        name = table.names[row]
        info = nodes[name] = {**_node(True, None, []), **nodes.get(name, {})}
        if scores is not None:
            info["scores"] = {k: int(v[i]) for k, v in scores.by_plugin.items()}
        if total is not None:
            info["score"] = int(total[i])
    pick = 0
    if total is not None and total.size:
        best = np.flatnonzero(total == total.max())
        pick = int(best[0])
        if best.size > 1:
            pick = int(best[int(np.random.default_rng(0).integers(best.size))])
    chosen = nominated or table.names[int(feasible[pick])]
    status = _reserve_and_permit(fwk, state, pod, chosen)
    if not status.is_success() and status.code != Code.WAIT:
        out["result"] = "Unschedulable" if status.is_rejected() else "Error"
        out["message"] = rejected_on_node(status).message()
        if status.is_rejected():
            out["capacity"] = capacity.assess(fwk, state, pod, rows, True, devices)
        return _ordered(out, names)
    out["result"] = "Scheduled"
    out["selectedNode"] = chosen
    out["message"] = (
        f"{int(feasible.size)}/{n} nodes are feasible; "
        f"selected {chosen} with score {nodes[chosen]['score']}"
        if nominated is None
        else f"{int(feasible.size)}/{n} nodes are feasible; selected {chosen}, the Pod's "
        "nominated node: the scheduler tries it first and it passes every filter"
    )
    return _ordered(out, names)


def _nominated_passes_extenders(
    extenders: Extenders | None, pod: api.Pod, table: NodeTable, rows: IntArray
) -> bool:
    """Upstream ``evaluateNominatedNode``: the nominated node must pass the filter
    extenders too; an extender error only skips the shortcut (upstream logs it)."""
    if extenders is None:
        return True
    try:
        return bool(extenders.filter(pod, table, rows).feasible.size)
    except ExtenderError:
        return False


def _preemption(
    fwk: Framework, state: CycleState, pod: api.Pod, diagnosis: Diagnosis
) -> dict[str, Any]:
    """What PostFilter would do (a dry run: explain's handle has no API to delete through):
    its message, the node the Pod would be nominated to and the victims it would delete,
    ``ns/name`` sorted.  From v1.35 upstream sends no deletion for a victim already
    terminating (``prepareCandidate``), so such a victim is not one it deletes."""
    result, status = fwk.run_post_filter(state, pod, diagnosis)
    found = result if isinstance(result, PostFilterResult) else None
    nominated = (found.nominated_node_name if found is not None else "") or None
    chosen = found.victims if found is not None else ()
    if fwk.handle.feature_gates.at_least("1.35"):
        chosen = tuple(v for v in chosen if v.deletion_timestamp is None)
    victims = sorted(v.key for v in chosen)
    return {"message": status.message(), "nominatedNode": nominated, "victims": victims}


def _reserve_and_permit(fwk: Framework, state: CycleState, pod: api.Pod, node: str) -> Status:
    """Reserve and Permit on the chosen node, then Unreserve (explain commits nothing).  A
    rejection there (Coscheduling's ``PodGroup not found`` for a Pod whose PodGroup is
    missing) makes the Pod Unschedulable with upstream's one-node ``FitError`` message; a
    Wait (a gang member waiting for its siblings) still counts as scheduled."""
    if pod.resize_deferred and fwk.handle.feature_gates.enabled(RESIZE_PREEMPTION):
        # Upstream never gets to DeferredPodScheduling's Permit rejection: a bound Pod cannot
        # be assumed, an unbound one fails DynamicResources' Reserve (docs/fidelity.md); the
        # answer is the filters' and the scores', as kube-oracle's explain gives it.
        return SUCCESS
    status = fwk.run_reserve(state, pod, node)
    if status.is_success():
        status = fwk.run_permit(state, pod, node)
    fwk.run_unreserve(state, pod, node)
    return status


def _extender_verdicts(nodes: dict[str, dict[str, Any]], ext: ExtenderFilterOutcome) -> None:
    """Each filter extender's verdict on every node it was sent; rejected nodes are marked
    as rejected by ``Extender`` (the first extender that rejected them)."""
    for call in ext.calls:
        res = call.result
        passed = set(res.passed) if res is not None else set()
        for name in call.sent:
            if res is None:
                verdict: dict[str, Any] = {"verdict": "Skipped", "reasons": [call.error]}
            elif name in passed:
                verdict = {"verdict": "Passed", "reasons": []}
            elif name in res.unresolvable:
                verdict = {"verdict": "UnschedulableAndUnresolvable"}
                verdict["reasons"] = [res.unresolvable[name]]
            elif name in res.failed:
                verdict = {"verdict": "Unschedulable", "reasons": [res.failed[name]]}
            else:
                verdict = {"verdict": "Removed", "reasons": []}
            info = nodes.setdefault(name, {})
            info.setdefault("extenders", {})[call.extender] = verdict
            if res is not None and name not in passed:
                info.update(_node(False, EXTENDER_NAME, verdict["reasons"]))
                info["extender"] = call.extender


def _extender_scores(
    nodes: dict[str, dict[str, Any]],
    extenders: Extenders,
    pod: api.Pod,
    cluster: ClusterState,
    rows: IntArray,
) -> IntArray:
    """The prioritize extenders' weighted scores for ``rows``, recorded per node."""
    table = cluster.nodes
    got = extenders.prioritize(pod, table, rows)
    weights = {e.name: e.weight for e in extenders.extenders}
    for i, row in enumerate(rows.tolist()):
        per = nodes.setdefault(table.names[row], {}).setdefault("extenders", {})
        for name, raw in got.raw.items():
            entry = per.setdefault(name, {"verdict": "Passed", "reasons": []})
            entry["score"] = int(raw[i])
            entry["weightedScore"] = int(raw[i]) * weights[name] * 10
        for name, err in got.errors.items():
            per.setdefault(name, {"verdict": "Passed", "reasons": []})["scoreError"] = err
    return got.total


def _node(feasible: bool, plugin: str | None, reasons: list[str]) -> dict[str, Any]:
    return {"feasible": feasible, "plugin": plugin, "reasons": reasons, "score": 0, "scores": {}}


def _ordered(out: dict[str, Any], names: list[str]) -> dict[str, Any]:
    nodes = out["nodes"]
    out["nodes"] = {name: nodes[name] for name in names if name in nodes}
    return out
