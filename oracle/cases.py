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
limiting the candidates); and a node crowded with more than 12 equally important Pods
(``equal_victims``: the victims upstream's unstable sort picks among them).
"""

from __future__ import annotations

import random
from typing import Any

from configs import scarce_resource_scoring, ties
from dra_cases import dra_case, dra_schedule_case  # oracle/dra_cases.py
from generator import Gen
from lived_in import add_gates, lived_in, lived_in_pods, pod_status_resize
from real_shapes import (
    as_stored,
    controllers_status,
    equal_victims,
    nominations,
    preemption_traces,
    rare_shapes,
    unparsable_preference,
)
from release_draws import (
    deferred_resize,
    machinery_gates,
    resize_preemption_gate,
    version_draws,
)
from storage_cases import storage_case, storage_schedule_case

__all__ = [
    "case",
    "dra_case",
    "dra_schedule_case",
    "schedule_case",
    "storage_case",
    "storage_schedule_case",
    "version_draws",
]


def case(seed: int, index: int, version: str | None = None) -> dict[str, Any]:
    """The ``index``-th case of ``seed``; at ``version`` (1.35+) with what that release adds
    (:func:`version_draws`, in ``featureGates`` the gates it sets, when any)."""
    gen = Gen(random.Random(f"{seed}/{index}"))
    request = _request(gen)
    items = request["cluster"]["items"]
    gates = version_draws(gen, items, [request["pod"]], version)
    if gates:
        request["featureGates"] = gates
    # A stream of its own, drawn last: the other draws of a seed stay as they were.
    lived = Gen(random.Random(f"lived/{seed}/{index}"))
    if lived.chance(0.35):
        running = [o for o in items if o["kind"] == "Pod" and o["spec"].get("nodeName")]
        request["config"] = lived_in(
            lived, items, running, request["pod"], request["config"], version
        )
        add_gates(request, pod_status_resize(lived, running, version), version)  # drawn last
    # Its own stream too, after everything: the other cases of a seed stay as they were.
    deferred = Gen(random.Random(f"deferred/{seed}/{index}"))
    add_gates(request, deferred_resize(deferred, items, request["pod"], version), version)
    return request


def schedule_case(seed: int, index: int, version: str | None = None) -> dict[str, Any]:
    """The ``index``-th ``kubesched.schedule`` case of ``seed``: ``{"cluster", "pods",
    "config"}`` with one node (upstream breaks ties between nodes at random, so a sequence
    of placements on several nodes need not repeat), its running Pods and 2-6 Pods to
    submit at once, competing for it by priority, ports, affinity and resources.  They do
    not preempt: upstream preempts asynchronously and retries in wall-clock time, so what
    follows a preemption depends on timing (preemption is compared through explain).  At
    ``version``, with what that release adds, as :func:`case`; at every release, the
    scheduler's own gates turned from their defaults at times (:func:`machinery_gates`)."""
    gen = Gen(random.Random(f"schedule/{seed}/{index}"))
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
    gates.update(machinery_gates(gen, version))  # drawn last
    if gates:
        request["featureGates"] = gates
    lived_in_pods(f"schedule-lived/{seed}/{index}", request, version)  # own stream, last
    resize = Gen(random.Random(f"schedule-resize/{seed}/{index}"))  # own stream, after it
    add_gates(request, resize_preemption_gate(resize, items, incoming, version), version)
    bind_faults(random.Random(f"schedule-bind/{seed}/{index}"), request)  # own stream, last
    return request


def bind_faults(r: random.Random, request: dict[str, Any]) -> None:
    """In four schedule cases in ten, the binding of a submitted Pod the API server refuses,
    every time (``bindFaults``): DefaultBinder's Bind fails through the clientset or, with
    SchedulerAsyncAPICalls, the API dispatcher; the failed binding cycle runs Unreserve and
    the Pod retries with backoff until the run settles (``Error``).  That Pod is then the
    only one submitted: kube-oracle's fake API server refuses within microseconds of the
    Reserve, so the next Pod's cycle never meets the refused one assumed; kubesched's
    binding cycle ran ``bind_latency`` later and it did (the timing residual of
    docs/fidelity.md, "VolumeBinding's binding cycle under faults").  Since session 22 the
    simulator answers a refused binding at once ("A refused binding answered at once"); the
    draw keeping every Pod is not measured against CI's coverage floors yet.  Played by
    kube-oracle (``schedule.go``) and ``kubesched.schedule(bind_faults=)``."""
    if r.random() >= 0.4:
        return
    pod = r.choice(request["pods"])
    request["pods"] = [pod]
    meta = pod["metadata"]
    request["bindFaults"] = {
        f"Pod/{meta.get('namespace', 'default')}/{meta['name']}": "refuseBinding"
    }


def _request(gen: Gen) -> dict[str, Any]:
    """One explain request: the main generator's cluster and Pod, then (each drawn after the
    last, so adding one left earlier cases of a seed as they were) rare shapes, objects as
    stored, nominations, scarce-resource scoring, preemption traces and ties."""
    nodes = [gen.node(i) for i in range(gen.r.randint(1, gen.pick([4, 8, 12])))]
    names = [n["metadata"]["name"] for n in nodes]
    pods = [gen.running_pod(i, names) for i in range(gen.r.randint(0, gen.pick([6, 24])))]
    _free_host_ports(pods)
    incoming = gen.incoming_pod(names)
    items: list[dict[str, Any]] = [*nodes, *pods, *gen.others(incoming)]
    if gen.chance(0.2):
        items.append(gen.replica_set(incoming, pods))
    if gen.chance(0.3):
        rare_shapes(gen, nodes, pods, incoming)
    if gen.chance(0.35):
        items += as_stored(gen, nodes, pods, incoming)
        controllers_status(items)
    config = gen.config()
    if gen.chance(0.25):  # drawn last: the cases without nominations stay as they were
        items += nominations(gen, names, incoming, pods)
    if gen.chance(0.06):  # after the nominations: the other cases stay as they were
        config = scarce_resource_scoring(gen, config)
    if pods and gen.chance(0.08):
        items += preemption_traces(gen, incoming, pods)
    if gen.chance(0.4):  # drawn after everything else
        config = ties(gen, items, config)
    if gen.chance(0.06):  # drawn last: the other cases stay as they were
        equal_victims(gen, items, incoming)
    if gen.chance(0.03):  # drawn last: the other cases stay as they were
        unparsable_preference(gen, incoming)
    return {
        "cluster": {"apiVersion": "v1", "kind": "List", "items": items},
        "pod": incoming,
        "config": config,
    }


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
