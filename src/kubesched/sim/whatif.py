"""``kubesched.schedule``: the offline what-if.

Takes a cluster snapshot and a list of Pods to submit, runs them through the real queue and
scheduler in virtual time until nothing more can happen (no Pod is ready to schedule or
being bound), and reports each Pod's outcome.  Pods are submitted in
``metadata.creationTimestamp`` order (file order for equal or missing timestamps).  Pods
whose ``schedulerName`` matches no profile are ignored, as upstream does, and counted in the
summary.  The result is a dict whose shape later layers extend (gangs, quotas, preemption).

The job layer (:mod:`kubesched.sim.jobs`) adds ``workloads`` / ``clusterQueues`` (Kueue
admission, when the snapshot declares ClusterQueues: queued Pods are gated until admitted),
``gangs`` (PodGroups) and ``quotas`` (ElasticQuotas, with CapacityScheduling enabled).
Preemption adds, per Pod, ``nominatedNode`` and ``victims`` (the Pods it preempted) for a
preemptor, result ``Preempted`` with ``preemptedBy`` for a submitted Pod that was preempted,
and ``preempted`` / ``preemptions`` / ``victims`` counts in the summary.  Victims are deleted
gracefully (:mod:`kubesched.sim.apiserver`): virtual time runs on until they have terminated
and their preemptors are bound; ``preemptionLatencySeconds`` in the summary is the time from
a preemptor's nomination to its bind (p50 / p99).

The snapshot's own Pending Pods (unbound, not terminated, for one of the profiles) are
scheduled too, as the real scheduler would, and reported beside the submitted ones: each
Pod's ``source`` says which file it came from (``"pods"`` or ``"cluster"``), and the summary
counts them in ``fromCluster``.  A Pod in both files (``kubectl get pods
--field-selector=status.phase=Pending -o json`` of the cluster the snapshot was taken from)
is submitted once, as the Pods file has it, and counted in ``overlap``; one the snapshot
already has bound to a node is not submitted again: it is reported ``Scheduled`` on that node
with 0 attempts and counted in ``alreadyBound``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubesched.api import objects as api
from kubesched.api import workload
from kubesched.api.parse import (
    Documents,
    ParsedObjects,
    parse_objects,
    split_documents,
    with_priority_classes,
)
from kubesched.api.pods import parse_timestamp
from kubesched.config.featuregates import FeatureGates
from kubesched.config.load import load_config
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.metrics import SchedulerMetrics
from kubesched.plugins.dynamicresources.faults import check_claim_faults
from kubesched.plugins.registry import known_plugin_names
from kubesched.sim.apiserver import check_bind_faults, check_volume_faults
from kubesched.sim.driver import SimCluster
from kubesched.sim.jobs import JobLayer

MAX_VIRTUAL_SECONDS = 900.0
"""Give up on Pods that keep failing with errors after this much virtual time."""

SPIN_ATTEMPTS = 200
"""A run whose ready Pods have each been attempted this often, nothing being bound, has
settled into an endless retry (:meth:`SimCluster.spinning`) and ends; kube-oracle's schedule
verb counts such a member as settled after as many attempts (``docs/fidelity.md``)."""

SPIN_RETRIES = 3
"""A run whose queue retries failed attempts after their backoff alone (v1.36 PodGroup
members, v1.37 PodGroup entities) has settled when each ready Pod has been retried this
often with nothing changed at the API server (:meth:`SimCluster.retrying_unchanged`; looked
at every 256 steps and once a virtual second).  kube-oracle counts such a member settled
once rejected after the last release (``rejectedSinceRelease``); three retries leave room
for one attempt in flight when the change was seen.  Before v1.37's entities counted, such
a run went on to :data:`MAX_VIRTUAL_SECONDS`, past the five-minute flush of the
unschedulable pool, which kube-oracle's run never reaches (v1.37 seed 21373 case 138: a
Pod that upstream's stale nomination kept out was flushed and bound).  Each retry of a member
whose backoff is 1 s costs the virtual second: a group spinning beside it (v1.36, no
backoff) runs ~2,000 cycles a virtual second, so 20 retries took over a minute of CPU
(v1.36 seed 3 case 8, seed 4 case 3)."""

TERMINAL_PHASES = ("Succeeded", "Failed")


def _documents(obj: Mapping[str, Any] | Sequence[Any]) -> Documents:
    return split_documents([dict(obj)] if isinstance(obj, Mapping) else list(obj))


def _created(obj: Mapping[str, Any]) -> float | None:
    """An object's ``metadata.creationTimestamp`` in seconds (None: not given)."""
    meta = obj.get("metadata") or {}
    return parse_timestamp(meta.get("creationTimestamp"), "metadata.creationTimestamp")


def schedule(
    cluster: Mapping[str, Any] | Sequence[Any],
    pods: Mapping[str, Any] | Sequence[Any],
    config: Mapping[str, Any] | KubeSchedulerConfiguration | None = None,
    *,
    seed: int = 0,
    metrics: SchedulerMetrics | None = None,
    gates: FeatureGates | None = None,
    release_seed: int | None = None,
    volume_faults: Mapping[str, str] | None = None,
    claim_faults: Mapping[str, str] | None = None,
    bind_faults: Mapping[str, str] | None = None,
    pool_seed: int | None = None,
) -> dict[str, Any]:
    """Schedule ``pods`` onto ``cluster`` in virtual time; see the module docstring.

    ``metrics`` receives the scheduler's metrics (gauges synced at the end); ``gates`` (the
    Kubernetes version and feature gates) applies when ``config`` is not loaded already;
    ``release_seed`` draws the order of Pods one event releases from the unschedulable pool
    (``SchedulingQueue.shuffle_releases``; None: the pool's order); ``volume_faults``: what
    goes wrong with VolumeBinding's PreBind writes, per object
    (:data:`kubesched.sim.apiserver.VOLUME_FAULTS`); ``claim_faults``: what goes wrong with
    DynamicResources' writes of a ResourceClaim, per claim
    (:data:`kubesched.plugins.dynamicresources.faults.CLAIM_FAULTS`); ``bind_faults``: what
    goes wrong with a Pod's binding, per Pod (:data:`kubesched.sim.apiserver.BIND_FAULTS`);
    ``pool_seed`` draws the order DynamicResources searches each node's device pools in
    (``Handle.pool_seed``).
    """
    faults = check_volume_faults(volume_faults)
    claims = check_claim_faults(claim_faults)
    binds = check_bind_faults(bind_faults)
    cfg = (
        config
        if isinstance(config, KubeSchedulerConfiguration)
        else load_config(config, known_plugins=known_plugin_names(), gates=gates)
    )
    cluster_docs = _documents(cluster)
    snapshot = parse_objects(cluster_docs)
    submitted = parse_objects(with_priority_classes(_documents(pods), cluster_docs))
    later = [o for o in submitted.others if workload.is_workload_api(o)]
    return schedule_parsed(
        snapshot,
        submitted.pods,
        cfg,
        seed=seed,
        metrics=metrics,
        later_objects=later,
        release_seed=release_seed,
        volume_faults=faults,
        claim_faults=claims,
        bind_faults=binds,
        pool_seed=pool_seed,
    )


def schedule_parsed(
    snapshot: ParsedObjects,
    incoming: list[api.Pod],
    cfg: KubeSchedulerConfiguration,
    *,
    seed: int = 0,
    metrics: SchedulerMetrics | None = None,
    later_objects: Sequence[Mapping[str, Any]] = (),
    release_seed: int | None = None,
    volume_faults: Mapping[str, str] | None = None,
    claim_faults: Mapping[str, str] | None = None,
    bind_faults: Mapping[str, str] | None = None,
    pool_seed: int | None = None,
) -> dict[str, Any]:
    """:func:`schedule` of inputs already parsed: the snapshot's objects and the Pods to
    submit, their priorities resolved (as ``kubesched schedule`` has checked them).
    ``later_objects`` are objects of the Pods file (scheduling.k8s.io Workloads and
    PodGroups: a gang's group created after some of its members), created among the Pods in
    ``metadata.creationTimestamp`` order, before virtual time starts, as the API server
    stores a new object (:func:`kubesched.api.workload.as_created`: the snapshot's are
    stored already and keep what they hold); ``release_seed``, ``volume_faults``,
    ``claim_faults``, ``bind_faults`` (all checked) and ``pool_seed`` as :func:`schedule`'s."""
    order = sorted(
        range(len(incoming)),
        key=lambda i: (
            incoming[i].creation_timestamp is None,
            incoming[i].creation_timestamp or 0,
            i,
        ),
    )
    gates = cfg.feature_gates
    pending_objects = sorted(
        ((_created(o), i, workload.as_created(o, gates)) for i, o in enumerate(later_objects)),
        key=lambda t: (t[0] is None, t[0] or 0, t[1]),
    )
    sim = SimCluster(cfg, seed=seed, metrics=metrics, pool_seed=pool_seed)
    if release_seed is not None:
        sim.scheduler.queue.shuffle_releases(release_seed)
    sim.api.volume_faults = dict(volume_faults or {})
    sim.api.claim_faults = dict(claim_faults or {})
    sim.api.bind_faults = dict(bind_faults or {})
    for node in snapshot.nodes:
        sim.api.create_node(node)
    for obj in snapshot.others:
        sim.api.apply_object(obj)
    incoming_at = {p.key for p in incoming}  # parse_objects refuses a key twice
    profiles = {p.scheduler_name for p in cfg.profiles}
    jobs = JobLayer(
        sim, snapshot.others, [*(p for p in snapshot.pods if p.key not in incoming_at), *incoming]
    )
    submitted: list[api.Pod] = []
    source: dict[str, str] = {}
    bound: dict[str, str] = {}
    overlap = 0
    for pod in snapshot.pods:
        if pod.phase in TERMINAL_PHASES or (pod.node_name and pod.node_name not in sim.api.nodes):
            continue
        if pod.key in incoming_at:
            if not pod.node_name:  # Pending in both: submitted once, as the Pods file has it
                overlap += 1
                continue
            bound[pod.key] = pod.node_name  # already placed: the Pods file's copy is not sent
        sim.api.create_pod(pod)
        if not pod.node_name and pod.scheduler_name in profiles:
            submitted.append(pod)
            source[pod.key] = "cluster"
    ignored = 0
    for i in order:
        pod = incoming[i]
        stamp = pod.creation_timestamp
        while pending_objects and stamp is not None and (pending_objects[0][0] or 0) <= stamp:
            sim.api.apply_object(dict(pending_objects.pop(0)[2]))
        if pod.key in bound:
            continue
        if pod.scheduler_name not in profiles and not pod.node_name:
            ignored += 1
            continue
        sim.api.create_pod(jobs.prepare(pod))
        submitted.append(pod)
        source[pod.key] = "pods"
    for _, _, late in pending_objects:
        sim.api.apply_object(dict(late))
    steps = 0
    check_at = 0.0  # also look once a virtual second: a group backing off steps rarely
    while sim.loop.now <= MAX_VIRTUAL_SECONDS and (not sim.quiet() or jobs.busy()):
        if not sim.loop.step():
            break
        steps += 1
        if steps % 256 == 0 or sim.loop.now >= check_at:
            check_at = sim.loop.now + 1.0
            if sim.spinning(SPIN_ATTEMPTS) or sim.retrying_unchanged(SPIN_RETRIES):
                break
    sim.scheduler.sync_metrics()
    result = _result(sim, submitted, ignored, source)
    for key, where in bound.items():  # placed in the snapshot already: not submitted again
        result["pods"][key] = {
            "result": "Scheduled",
            "node": where,
            "message": f"already bound to {where} in the cluster snapshot; not submitted again",
            "attempts": 0,
            "source": "cluster",
        }
    summary = result["summary"]
    summary["pods"] += len(bound)
    summary["scheduled"] += len(bound)
    summary["fromCluster"] = sum(1 for s in source.values() if s == "cluster") + len(bound)
    summary["overlap"] = overlap + len(bound)
    summary["alreadyBound"] = len(bound)
    return {"kubernetesVersion": cfg.feature_gates.version, **result, **jobs.report(submitted)}


def _result(
    sim: SimCluster, submitted: list[api.Pod], ignored: int, source: Mapping[str, str]
) -> dict[str, Any]:
    s = sim.scheduler
    queued = {qp.pod.key: qp for qp in s.queue.pending_pod_infos()}
    out: dict[str, dict[str, Any]] = {}
    counts = {"Scheduled": 0, "Unschedulable": 0, "Gated": 0, "Error": 0, "Preempted": 0}
    for pod in submitted:
        live = sim.api.pods.get(pod.key)
        attempts = s.pod_attempts.get(pod.key, 0)
        entry: dict[str, Any]
        victim = pod.key in s.preempted_by and (live is None or live.deletion_timestamp is not None)
        if live is not None and live.node_name and not victim:
            entry = {
                "result": "Scheduled",
                "node": live.node_name,
                "message": f"Successfully assigned {pod.key} to {live.node_name}",
            }
        elif victim:  # gone, or still terminating when the run gave up
            by = s.preempted_by[pod.key]
            where = s.preemptions[by][0]
            entry = {
                "result": "Preempted",
                "node": None,
                "message": f"Preempted by {by}" + (f" on node {where}" if where else ""),
                "preemptedBy": by,
            }
        else:
            qp = queued.get(pod.key)
            reason, message = s.failures.get(pod.key, ("", ""))
            held = s.queue.held_gate(pod.key) if attempts == 0 else ""
            # Gated: held by PreEnqueue before any attempt, or by its own scheduling gates; a
            # Pod held after an attempt (its claim deleted since) reports that attempt, as
            # kube-oracle reports a Pod by its last PodScheduled condition.
            first = attempts == 0 or bool((live or pod).scheduling_gates)
            if qp is not None and qp.gated and first:
                entry = {"result": "Gated", "node": None, "message": qp.message or message}
            elif held:  # held until its PodGroup is observed: PreEnqueue's answer
                entry = {"result": "Gated", "node": None, "message": held}
            elif reason == "SchedulerError":
                entry = {"result": "Error", "node": None, "message": message}
            else:
                entry = {"result": "Unschedulable", "node": None, "message": message}
        entry["attempts"] = attempts
        entry["source"] = source[pod.key]
        preempted = s.preemptions.get(pod.key)
        if preempted is not None:
            entry["victims"] = list(preempted[1])
            if preempted[0]:
                entry["nominatedNode"] = preempted[0]
        if entry["result"] != "Scheduled" and s.queue.nominator.node_of(pod.key):
            entry["nominatedNode"] = s.queue.nominator.node_of(pod.key)
        counts[entry["result"]] += 1
        out[pod.key] = entry
    summary: dict[str, Any] = {
        "pods": len(submitted),
        "scheduled": counts["Scheduled"],
        "unschedulable": counts["Unschedulable"],
        "gated": counts["Gated"],
        "error": counts["Error"],
        "preempted": counts["Preempted"],
        "preemptions": len(s.preemptions),
        "victims": len(s.preempted_by),
        "ignored": ignored,
        "attempts": {r: int(s.attempts.get(r, 0)) for r in ("scheduled", "unschedulable", "error")},
        "nodes": len(sim.api.nodes),
        "virtualSeconds": round(sim.loop.now, 6),
        "preemptionLatencySeconds": sim.api.stats.preemption_latency(),
    }
    return {"pods": out, "summary": summary}
