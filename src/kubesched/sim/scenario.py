"""Simulation scenarios: node pools, arriving workloads and literal objects, from YAML.

Format (``kind: Scenario``, ``apiVersion: kubesched.io/v1alpha1``)::

    spec:
      seed: 42                       # placements and arrivals are a function of the seed
      durationSeconds: 120           # virtual time after which nothing new arrives
      drainSeconds: 60               # extra virtual time to let the queue settle
      timing: {cycleSeconds: 0.0005, bindLatencySeconds: 0.005, watchDelaySeconds: 0,
               clientQPS: 0, clientBurst: 0}   # client rate limit on binds (0: none)
      config: {...}                  # an inline KubeSchedulerConfiguration (optional)
      nodePools:                     # generated nodes: <name>-00000, <name>-00001, ...
      - {name, count, zones: [..], labels: {..}, taints: [..], allocatable: {..}}
      workloads:                     # generated Pods, Poisson arrivals
      - {name, count, ratePerSecond, startSeconds, lifetimeSeconds, gpuChoices, template,
         podGroup: {size, minMember, scheduleTimeoutSeconds}, nodeStartupSeconds}
      objects: [...]                 # literal Nodes, Pods and other objects (time 0): PodGroup,
                                     # ElasticQuota, ClusterQueue, LocalQueue, ResourceFlavor, ...
      admission: {enabled: true, fairSharing: false}   # Kueue admission (default: on when
                                                       # some ClusterQueue is declared)
      admission: {configuration: {...}}   # a Kueue Configuration (config.kueue.x-k8s.io/
                                          # v1beta1): fairSharing, waitForPodsReady
      faults: [...]                  # fault drills (kubesched.sim.faults)

``lifetimeSeconds`` is the mean of an exponential lifetime counted from the bind (absent:
the Pod runs forever).  ``nodeStartupSeconds`` is the node side of startup (image pull,
volumes, devices): how long after its bind a Pod becomes Ready, a number of seconds or a
distribution, ``{distribution: constant, seconds: S}``, ``{distribution: exponential,
meanSeconds: M}``, ``{distribution: uniform, minSeconds: A, maxSeconds: B}`` or
``{distribution: lognormal, medianSeconds: M, p99Seconds: P}`` (absent: lognormal, median
1 s, p99 5 s; literal Pods get that default too; every value at most a day).  It changes
no placement (:mod:`kubesched.sim.startup`); the summary splits each Pod's startup into
admission, scheduling, binding and node segments.  ``gpuChoices`` draws each Pod's
``nvidia.com/gpu`` from the list.
``podGroup`` makes gangs: every ``size`` consecutive Pods (default: all) form one PodGroup
``<name>-<k>`` (label ``scheduling.x-k8s.io/pod-group``) with ``minMember`` (default
``size``); the PodGroup objects exist from time 0.  Job-layer references are checked
(:mod:`kubesched.admission.references`): a PodGroup no Pod joins, a Pod naming a missing
PodGroup or LocalQueue, a quota tree with a cycle or children's min above the parent's are
errors naming the object and field.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np
import yaml

from kubesched.admission import objects, references
from kubesched.admission.kueue_config import KueueConfig, parse_configuration
from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.api.parse import load_documents, parse_node, parse_objects, parse_pod
from kubesched.sim import faultspec as fault_drills
from kubesched.sim import startup
from kubesched.sim.driver import SimTiming

API_VERSION = "kubesched.io/v1alpha1"
GPU = "nvidia.com/gpu"
ZONE_LABEL = "topology.kubernetes.io/zone"
HOSTNAME_LABEL = "kubernetes.io/hostname"


@dataclass(slots=True)
class Arrival:
    """A Pod created at virtual time ``at``, deleted ``lifetime`` after its bind."""

    at: float
    pod: api.Pod
    lifetime: float | None
    startup: float = 0.0
    """Seconds from the bind to Ready (the node side, ``nodeStartupSeconds``)."""


@dataclass(slots=True)
class Scenario:
    """A scenario ready to run: nodes, arrivals in time order, config, timing."""

    name: str
    seed: int
    duration: float
    drain: float
    timing: SimTiming
    config: dict[str, Any] | None
    nodes: list[api.Node] = field(default_factory=list)
    arrivals: list[Arrival] = field(default_factory=list)
    others: list[dict[str, Any]] = field(default_factory=list)
    admission: bool | None = None
    """Kueue admission on/off (None: on when some ClusterQueue is declared)."""
    fair_sharing: bool = False
    """Order workloads across ClusterQueues by fair share instead of priority only."""
    kueue: KueueConfig | None = None
    """``spec.admission.configuration``: Kueue's own configuration (fair sharing,
    waitForPodsReady), when given."""
    faults: list[fault_drills.Fault] = field(default_factory=list)
    """Fault drills (:mod:`kubesched.sim.faults`)."""


def default_scenario_text() -> str:
    """The embedded default scenario's YAML."""
    return resources.files("kubesched.sim").joinpath("scenarios/default.yaml").read_text()


def load_scenario(path: str | None, *, seed: int | None = None) -> Scenario:
    """Load a scenario file, or the embedded default when ``path`` is None."""
    if path is None:
        docs = [yaml.safe_load(default_scenario_text())]
        file = "<built-in default scenario>"
    else:
        docs = load_documents(path)
        file = path
    if len(docs) != 1 or docs[0].get("kind") != "Scenario":
        raise InputError([("kind", "expected one document of kind Scenario")], file=file)
    try:
        return build_scenario(docs[0], seed=seed)
    except InputError as e:
        raise e.with_file(file) from None


def _req(obj: dict[str, Any], key: str, path: str, kind: type | tuple[type, ...]) -> Any:
    if key not in obj:
        raise InputError([(f"{path}.{key}", "required field is missing")])
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise InputError([(f"{path}.{key}", f"must be {_kind_name(kind)}, got {value!r}")])
    return value


def _opt(
    obj: dict[str, Any], key: str, path: str, kind: type | tuple[type, ...], default: Any
) -> Any:
    if key not in obj or obj[key] is None:
        return default
    return _req(obj, key, path, kind)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {int: "an integer", float: "a number", str: "a string", list: "a list", dict: "a map"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def build_scenario(doc: dict[str, Any], *, seed: int | None = None) -> Scenario:
    """Expand a Scenario document into nodes and arrivals (deterministic in the seed)."""
    spec = _req(doc, "spec", "", dict)
    p = "spec"
    num = (int, float)
    seed = int(_opt(spec, "seed", p, int, 0)) if seed is None else seed
    timing_obj = _opt(spec, "timing", p, dict, {})
    timing = SimTiming(
        cycle_seconds=float(_opt(timing_obj, "cycleSeconds", f"{p}.timing", num, 0.0005)),
        bind_latency=float(_opt(timing_obj, "bindLatencySeconds", f"{p}.timing", num, 0.005)),
        watch_delay=float(_opt(timing_obj, "watchDelaySeconds", f"{p}.timing", num, 0.0)),
        client_qps=float(_opt(timing_obj, "clientQPS", f"{p}.timing", num, 0.0)),
        client_burst=int(_opt(timing_obj, "clientBurst", f"{p}.timing", int, 0)),
    )
    sc = Scenario(
        name=str((doc.get("metadata") or {}).get("name", "scenario")),
        seed=seed,
        duration=float(_opt(spec, "durationSeconds", p, num, 60.0)),
        drain=float(_opt(spec, "drainSeconds", p, num, 60.0)),
        timing=timing,
        config=_opt(spec, "config", p, dict, None),
    )
    rng = np.random.default_rng(seed)
    startup_rng = startup.rng_for(seed)  # its own stream: placements stay what they were
    for i, pool in enumerate(_opt(spec, "nodePools", p, list, [])):
        sc.nodes.extend(_pool_nodes(pool, f"{p}.nodePools[{i}]"))
    for i, wl in enumerate(_opt(spec, "workloads", p, list, [])):
        arrivals = _workload_arrivals(wl, f"{p}.workloads[{i}]", rng, sc.duration)
        latency = startup.parse_latency(
            wl.get("nodeStartupSeconds"), f"{p}.workloads[{i}].nodeStartupSeconds"
        )
        for a, s in zip(arrivals, latency.draw(startup_rng, len(arrivals)), strict=True):
            a.startup = float(s)
        sc.others.extend(_pod_groups(wl, f"{p}.workloads[{i}]", arrivals))
        sc.arrivals.extend(arrivals)
    adm = _opt(spec, "admission", p, dict, {})
    for key in ("enabled", "fairSharing"):
        if key in adm and not isinstance(adm[key], bool):
            raise InputError([(f"{p}.admission.{key}", f"must be true or false, got {adm[key]!r}")])
    if "enabled" in adm:
        sc.admission = adm["enabled"]
    sc.fair_sharing = bool(adm.get("fairSharing", False))
    if adm.get("configuration") is not None:
        conf = adm["configuration"]
        if not isinstance(conf, dict):
            raise InputError([(f"{p}.admission.configuration", "must be a map")])
        sc.kueue = parse_configuration(conf, f"{p}.admission.configuration")
        sc.fair_sharing = sc.fair_sharing or sc.kueue.fair_sharing
    sc.faults = fault_drills.parse_faults(spec.get("faults"), f"{p}.faults")
    literal = _opt(spec, "objects", p, list, [])
    if literal:
        parsed = parse_objects(literal)
        sc.nodes.extend(parsed.nodes)
        draws = startup.DEFAULT.draw(startup_rng, len(parsed.pods))
        sc.arrivals.extend(
            Arrival(0.0, pod, None, float(s)) for pod, s in zip(parsed.pods, draws, strict=True)
        )
        sc.others.extend(parsed.others)
    sc.arrivals.sort(key=lambda a: a.at)
    references.check(sc.others, [a.pod for a in sc.arrivals], all_pods_known=True)
    return sc


def _pod_groups(wl: Any, path: str, arrivals: list[Arrival]) -> list[dict[str, Any]]:
    """Label ``arrivals`` into gangs per ``podGroup`` and return the PodGroup objects."""
    pg = wl.get("podGroup") if isinstance(wl, dict) else None
    if pg is None:
        return []
    gp = f"{path}.podGroup"
    if not isinstance(pg, dict):
        raise InputError([(gp, "must be a map")])
    size = int(_opt(pg, "size", gp, int, len(arrivals)) or 1)
    if size < 1:
        raise InputError([(f"{gp}.size", "must be at least 1")])
    min_member = int(_opt(pg, "minMember", gp, int, size))
    timeout = _opt(pg, "scheduleTimeoutSeconds", gp, int, None)
    out: list[dict[str, Any]] = []
    for j, a in enumerate(arrivals):
        name = f"{wl['name']}-{j // size}" if size < len(arrivals) else str(wl["name"])
        a.pod.labels[objects.POD_GROUP_LABEL] = name
        if j % size == 0:
            spec: dict[str, Any] = {"minMember": min_member}
            if timeout is not None:
                spec["scheduleTimeoutSeconds"] = timeout
            out.append(
                {
                    "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                    "kind": "PodGroup",
                    "metadata": {"name": name, "namespace": a.pod.namespace},
                    "spec": spec,
                }
            )
    return out


def _pool_nodes(pool: Any, path: str) -> list[api.Node]:
    if not isinstance(pool, dict):
        raise InputError([(path, "must be a map")])
    name = _req(pool, "name", path, str)
    count = _req(pool, "count", path, int)
    zones = _opt(pool, "zones", path, list, [])
    labels = _opt(pool, "labels", path, dict, {})
    manifest = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"{name}-template", "labels": labels},
        "spec": {"taints": _opt(pool, "taints", path, list, [])},
        "status": {"allocatable": _req(pool, "allocatable", path, dict)},
    }
    template = parse_node(manifest, path)
    nodes = []
    for j in range(count):
        node_name = f"{name}-{j:05d}"
        node_labels = {**template.labels, HOSTNAME_LABEL: node_name}
        if zones:
            node_labels[ZONE_LABEL] = str(zones[j % len(zones)])
        nodes.append(dataclasses.replace(template, name=node_name, labels=node_labels, raw={}))
    return nodes


def _workload_arrivals(
    wl: Any, path: str, rng: np.random.Generator, duration: float
) -> list[Arrival]:
    if not isinstance(wl, dict):
        raise InputError([(path, "must be a map")])
    num = (int, float)
    name = _req(wl, "name", path, str)
    count = _req(wl, "count", path, int)
    rate = float(_req(wl, "ratePerSecond", path, num))
    if rate <= 0:
        raise InputError([(f"{path}.ratePerSecond", "must be positive")])
    start = float(_opt(wl, "startSeconds", path, num, 0.0))
    lifetime = _opt(wl, "lifetimeSeconds", path, num, None)
    choices = _opt(wl, "gpuChoices", path, list, [])
    template = _req(wl, "template", path, dict)
    variants: dict[int | None, api.Pod] = {}
    for choice in choices or [None]:
        manifest = copy.deepcopy(template)
        manifest.setdefault("apiVersion", "v1")
        manifest.setdefault("kind", "Pod")
        manifest.setdefault("metadata", {})["name"] = f"{name}-template"
        if choice is not None:
            for c in manifest.get("spec", {}).get("containers", [])[:1]:
                res = c.setdefault("resources", {})
                for part in ("requests", "limits"):
                    if GPU in res.get(part, {}) or part == "requests":
                        res.setdefault(part, {})[GPU] = str(choice)
        variants[choice] = parse_pod(manifest, f"{path}.template")
    gaps = rng.exponential(1.0 / rate, size=count)
    times = start + np.cumsum(gaps)
    picks = rng.integers(len(choices), size=count) if choices else None
    lifetimes = rng.exponential(float(lifetime), size=count) if lifetime is not None else None
    out = []
    for j in range(count):
        key = choices[int(picks[j])] if picks is not None else None
        base = variants[key]
        pod_name = f"{name}-{j:06d}"
        pod = dataclasses.replace(
            base,
            name=pod_name,
            uid=f"{base.namespace}-{pod_name}",
            labels=dict(base.labels),
            creation_timestamp=float(times[j]),
            raw={},
        )
        life = float(lifetimes[j]) if lifetimes is not None else None
        out.append(Arrival(float(times[j]), pod, life))
    del duration
    return out
