"""Simulation scenarios: node pools, arriving workloads and literal objects, from YAML.

The reference is ``docs/scenario.md``, and :func:`scenario_schema` the format's JSON Schema.

Format (``kind: Scenario``, ``apiVersion: kubesched.io/v1alpha1``)::

    spec:
      seed: 42                       # placements and arrivals are a function of the seed
      durationSeconds: 120           # virtual time after which nothing new arrives
      drainSeconds: 60               # extra virtual time to let the queue settle
      timing: {cycleSeconds: 0.0005, bindLatencySeconds: 0.005, watchDelaySeconds: 0,
               clientQPS: 0, clientBurst: 0,   # client rate limit on binds (0: none)
               costModel: constant}   # or upstream: each attempt takes what upstream's
                                      # kube-scheduler would (kubesched.sim.costmodel), with
                                      # calibration: FILE (default: the shipped one), whose
                                      # client QPS/burst/latency are the defaults then
      config: {...}                  # an inline KubeSchedulerConfiguration (optional)
      nodePools:                     # generated nodes: <name>-00000, <name>-00001, ...
      - {name, count, zones: [..], labels: {..}, taints: [..], allocatable: {..}}
      workloads:                     # generated Pods, Poisson arrivals
      - {name, count, ratePerSecond, startSeconds, lifetimeSeconds, gpuChoices, template,
         podGroup: {size, minMember, scheduleTimeoutSeconds, api, topologyKey},
         nodeStartupSeconds,
         volumeClaimTemplates: [...]}
      objects: [...]                 # literal Nodes, Pods and other objects (time 0): PodGroup,
                                     # ElasticQuota, ClusterQueue, LocalQueue, ResourceFlavor, ...
      admission: {enabled: true, fairSharing: false}   # Kueue admission (default: on when
                                                       # some ClusterQueue is declared)
      admission: {configuration: {...}}   # a Kueue Configuration (config.kueue.x-k8s.io/
                                          # v1beta1): fairSharing, waitForPodsReady
      faults: [...]                  # fault drills (kubesched.sim.faults)
      provisioningSeconds: {fast-ssd: 3}   # per StorageClass: seconds its provisioner takes
                                           # to create a PV (kubesched.sim.pvcontroller)

``lifetimeSeconds`` is the mean of an exponential lifetime counted from the bind (absent:
the Pod runs forever), or a map drawing it as ``nodeStartupSeconds`` below does
(``{distribution: constant, seconds: 600}``: every member of a job runs as long).
``nodeStartupSeconds`` is the node side of startup (image pull,
volumes, devices): how long after its bind a Pod becomes Ready, a number of seconds or a
distribution, ``{distribution: constant, seconds: S}``, ``{distribution: exponential,
meanSeconds: M}``, ``{distribution: uniform, minSeconds: A, maxSeconds: B}`` or
``{distribution: lognormal, medianSeconds: M, p99Seconds: P}`` (absent: lognormal, median
1 s, p99 5 s; literal Pods get that default too; every value at most a day).  It changes
no placement (:mod:`kubesched.sim.startup`); the summary splits each Pod's startup into
admission, scheduling, binding and node segments.  ``gpuChoices`` draws each Pod's
``nvidia.com/gpu`` from the list.
``volumeClaimTemplates`` are PersistentVolumeClaim templates as a StatefulSet's: each Pod
``<pod>`` gets the claim ``<template>-<pod>`` (created at time 0, the template's labels,
annotations and spec) and a volume named as the template using it.
``podGroup`` makes gangs: every ``size`` consecutive Pods (default: all) form one PodGroup
``<name>-<k>`` (label ``scheduling.x-k8s.io/pod-group``) with ``minMember`` (default
``size``); the PodGroup objects exist from time 0.  ``api: workload`` expresses the same
gangs through upstream's Workload API instead (v1.36+, GenericWorkload on): a
``scheduling.k8s.io`` PodGroup ``<name>-<k>`` of the release's version with the ``gang``
policy, ``minCount`` = ``minMember`` and, with ``topologyKey``, one topology constraint
(a placement per value of that node label, under TopologyAwareWorkloadScheduling), each Pod
joining it by ``spec.schedulingGroup.podGroupName``; GangScheduling's own Permit timeout
applies (``scheduleTimeoutSeconds`` is Coscheduling's).  Job-layer references are checked
(:mod:`kubesched.admission.references`): a PodGroup no Pod joins, a Pod naming a missing
PodGroup or LocalQueue, a quota tree with a cycle or children's min above the parent's are
errors naming the object and field.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np

from kubesched.admission import objects, references
from kubesched.admission.kueue_config import KueueConfig, parse_configuration
from kubesched.api import objects as api
from kubesched.api import source, storage, workload
from kubesched.api.errors import InputError, excerpt
from kubesched.api.parse import load_documents, parse_node, parse_objects, parse_pod
from kubesched.config import featuregates
from kubesched.config.featuregates import FeatureGates
from kubesched.sim import faultspec as fault_drills
from kubesched.sim import scenario_fields as sf
from kubesched.sim import startup
from kubesched.sim.costmodel import CostModel, load_calibration
from kubesched.sim.driver import SimTiming

API_VERSION = "kubesched.io/v1alpha1"
GPU = "nvidia.com/gpu"
ZONE_LABEL = "topology.kubernetes.io/zone"
HOSTNAME_LABEL = "kubernetes.io/hostname"
COST_MODELS = (COST_CONSTANT, COST_UPSTREAM) = ("constant", "upstream")


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
    timing_given: frozenset[str] = frozenset()
    """The ``spec.timing`` fields the scenario set (the others took defaults)."""
    gates: FeatureGates = field(default_factory=FeatureGates)
    """``spec.kubernetesVersion`` and ``spec.featureGates`` (default: the newest version)."""
    version_given: bool = False
    """Whether the scenario named its Kubernetes version."""
    provisioning: dict[str, float] = field(default_factory=dict)
    """``spec.provisioningSeconds``: StorageClass name -> seconds its provisioner takes."""


def scenario_schema() -> dict[str, Any]:
    """The JSON Schema of a scenario document shipped with the package
    (``sim/schema/scenario.schema.json``; ``docs/scenario.md`` is its reference page).  It
    states the fields, types and limits that :func:`build_scenario` checks."""
    text = resources.files("kubesched.sim").joinpath("schema/scenario.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


def default_scenario_text() -> str:
    """The embedded default scenario's YAML."""
    return resources.files("kubesched.sim").joinpath("scenarios/default.yaml").read_text()


def load_scenario(path: str | None, *, seed: int | None = None) -> Scenario:
    """Load a scenario file, or the embedded default when ``path`` is None."""
    if path is None:
        docs = source.load_text(default_scenario_text())
        file = "<built-in default scenario>"
    else:
        docs = load_documents(path)
        file = path
    if len(docs) != 1 or docs[0].get("kind") != "Scenario":
        raise InputError([("kind", "expected one document of kind Scenario")], file=file)
    try:
        folder = os.path.dirname(os.path.abspath(path)) if path is not None else None
        return build_scenario(docs[0], seed=seed, directory=folder)
    except InputError as e:
        raise e.with_file(file) from None


def build_scenario(
    doc: dict[str, Any], *, seed: int | None = None, directory: str | None = None
) -> Scenario:
    """Expand a Scenario document into nodes and arrivals (deterministic in the seed).
    Every field is checked against :mod:`kubesched.sim.scenario_fields` (types, finite
    numbers, bounds, unknown fields, unique names) before anything is generated; a relative
    ``timing.calibration`` is found in ``directory`` (the scenario file's)."""
    spec = sf.req(doc, "spec", "", dict)
    p = "spec"
    sf.known(spec, sf.SPEC_FIELDS, p)
    if seed is None:
        seed = sf.integer(spec, "seed", p, high=sf.MAX_SEED, default=0)
    timing_spec = sf.opt(spec, "timing", p, dict, {})
    timing = _timing(timing_spec, f"{p}.timing", directory)
    metadata = sf.opt(doc, "metadata", "", dict, {})
    sc = Scenario(
        name=str(metadata.get("name") or "scenario"),
        seed=seed,
        duration=sf.number(spec, "durationSeconds", p, default=60.0),
        drain=sf.number(spec, "drainSeconds", p, default=60.0),
        timing=timing,
        config=sf.opt(spec, "config", p, dict, None),
        timing_given=frozenset(timing_spec),
        gates=featuregates.from_spec(spec.get("kubernetesVersion"), spec.get("featureGates"), p),
        version_given="kubernetesVersion" in spec,
    )
    provisioning = sf.opt(spec, "provisioningSeconds", p, dict, {})
    for klass in provisioning:
        sc.provisioning[str(klass)] = sf.number(provisioning, klass, f"{p}.provisioningSeconds")
    pools = sf.opt(spec, "nodePools", p, list, [])
    workloads = sf.opt(spec, "workloads", p, list, [])
    literal = sf.opt(spec, "objects", p, list, [])
    _check_sizes(pools, workloads, literal)
    rng = np.random.default_rng(seed)
    startup_rng = startup.rng_for(seed)  # its own stream: placements stay what they were
    names: dict[str, str] = {}
    for i, pool in enumerate(pools):
        sc.nodes.extend(_pool_nodes(pool, f"{p}.nodePools[{i}]", names))
    names = {}
    for i, wl in enumerate(workloads):
        wp = f"{p}.workloads[{i}]"
        sf.unique_name(wl, wp, names)
        arrivals = _workload_arrivals(wl, wp, rng, sc.duration)
        latency = startup.parse_latency(wl.get("nodeStartupSeconds"), f"{wp}.nodeStartupSeconds")
        for a, s in zip(arrivals, latency.draw(startup_rng, len(arrivals)), strict=True):
            a.startup = float(s)
        sc.others.extend(_pod_groups(wl, wp, arrivals, sc.gates.version))
        sc.others.extend(_claims_per_pod(wl, wp, arrivals))
        sc.arrivals.extend(arrivals)
    adm = sf.opt(spec, "admission", p, dict, {})
    sf.known(adm, sf.ADMISSION_FIELDS, f"{p}.admission")
    for key in ("enabled", "fairSharing"):
        if key in adm and not isinstance(adm[key], bool):
            shown = excerpt(adm[key])
            raise InputError([(f"{p}.admission.{key}", f"must be true or false, got {shown}")])
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
    fault_drills.check_targets(sc.faults, sc.nodes, [a.pod for a in sc.arrivals], f"{p}.faults")
    return sc


def check_workload_objects(sc: Scenario) -> None:
    """The scenario's Workload API objects and the Pods' group references as the API server
    of ``sc.gates`` takes them (:func:`kubesched.api.workload.admit`): checked once the run's
    release and gates are final (a command line's ``--feature-gates`` may turn
    GenericWorkload on), so not by :func:`load_scenario`.  Raises :class:`InputError`."""
    workload.admit(sc.others, sc.gates)
    refs = workload.check_pod_refs([a.pod for a in sc.arrivals], sc.gates)
    if refs:
        raise InputError(refs)


def _timing(obj: dict[str, Any], tp: str, directory: str | None) -> SimTiming:
    """``spec.timing``; with ``costModel: upstream`` the calibration (``calibration``, else
    the shipped default) times each attempt and sets the client's defaults (QPS, burst,
    request latency) unless the scenario gives them."""
    sf.known(obj, sf.TIMING_FIELDS, tp)
    kind = sf.opt(obj, "costModel", tp, str, COST_CONSTANT)
    if kind not in COST_MODELS:
        raise InputError(
            [(f"{tp}.costModel", f"want one of {', '.join(COST_MODELS)}, got {kind!r}")]
        )
    calibration = sf.opt(obj, "calibration", tp, str, None)
    model = None
    if kind == COST_UPSTREAM:
        model = cost_model(calibration, directory, f"{tp}.calibration")
    elif calibration is not None:
        raise InputError([(f"{tp}.calibration", "only with costModel: upstream")])
    b = model.binding if model is not None else {}
    return SimTiming(
        cycle_seconds=sf.number(obj, "cycleSeconds", tp, default=0.0005),
        bind_latency=sf.number(
            obj, "bindLatencySeconds", tp, default=b.get("requestLatencySeconds", 0.005)
        ),
        watch_delay=sf.number(obj, "watchDelaySeconds", tp, default=0.0),
        client_qps=sf.number(obj, "clientQPS", tp, default=b.get("clientQPS", 0.0), high=1e9),
        client_burst=sf.integer(
            obj, "clientBurst", tp, high=10**9, default=int(b.get("clientBurst", 0))
        ),
        cost_model=model,
    )


def cost_model(calibration: str | None, directory: str | None, field: str) -> CostModel:
    """The calibration ``calibration`` (None: the shipped one); a problem with the file
    names the field that referred to it too.  With a ``directory`` (a scenario file's
    folder) the file is found there and must be inside it, symbolic links followed: a
    scenario names no file elsewhere (``simulate --calibration`` may)."""
    path = calibration
    if path is not None and directory is not None:
        path = _inside(path, directory, field)
    try:
        return load_calibration(path)
    except InputError as e:
        raise InputError([(field, str(e))]) from None


def _inside(path: str, directory: str, field: str) -> str:
    """``path`` resolved in ``directory``, which it must not leave (see :func:`cost_model`)."""
    folder = os.path.realpath(directory)
    full = os.path.realpath(os.path.join(folder, path))
    if os.path.commonpath([full, folder]) != folder:
        message = (
            f"{excerpt(path)} is outside the scenario's folder {folder} (to {full}): put "
            "it there, or give it with simulate --calibration"
        )
        raise InputError([(field, message)])
    return full


def with_cost_model(sc: Scenario, kind: str, calibration: str | None) -> None:
    """``simulate --cost-model KIND [--calibration FILE]``: replaces the scenario's cost model;
    upstream's also brings the calibration's client QPS/burst when the scenario set none, and
    its request latency when the scenario did not set ``bindLatencySeconds``."""
    if kind == COST_CONSTANT:
        sc.timing = dataclasses.replace(sc.timing, cost_model=None)
        return
    model = cost_model(calibration, None, "--calibration")
    t, b = sc.timing, model.binding
    limited = t.client_qps > 0
    sc.timing = dataclasses.replace(
        t,
        cost_model=model,
        client_qps=t.client_qps if limited else b["clientQPS"],
        client_burst=t.client_burst if limited else int(b["clientBurst"]),
        bind_latency=(
            t.bind_latency
            if "bindLatencySeconds" in sc.timing_given
            else b.get("requestLatencySeconds", t.bind_latency)
        ),
    )


def _check_sizes(pools: list[Any], workloads: list[Any], literal: list[Any]) -> None:
    """Refuse more than :data:`~kubesched.sim.scenario_fields.MAX_NODES` nodes or
    :data:`~kubesched.sim.scenario_fields.MAX_PODS` Pods before generating or parsing any:
    the literal ``objects`` count too (Nodes against the nodes, every other object against
    the Pods; a List's items one by one), then each pool's and workload's ``count``."""
    nodes, others = _literal_counts(literal)
    for what, items, limit, unit, total in (
        ("nodePools", pools, sf.MAX_NODES, "nodes", nodes),
        ("workloads", workloads, sf.MAX_PODS, "Pods", others),
    ):
        why = f" (a scenario has at most {limit} {unit} in all)"
        if total > limit:
            message = f"{total} literal {unit}: a scenario has at most {limit} {unit} in all"
            raise InputError([("spec.objects", message)])
        for i, item in enumerate(items):
            path = f"spec.{what}[{i}]"
            if not isinstance(item, dict):
                raise InputError([(path, "must be a map")])
            left = max(limit - total, 0)
            total += sf.integer(item, "count", path, high=left, limit=why)


def _literal_counts(literal: list[Any]) -> tuple[int, int]:
    """How many of the literal ``objects`` are Nodes and how many are other objects (the
    items of a ``...List`` counted one by one, as they are parsed)."""
    nodes = others = 0
    for obj in literal:
        items = [obj]
        if type(obj) is dict:
            kind = obj.get("kind")
            if isinstance(kind, str) and kind.endswith("List") and type(obj.get("items")) is list:
                items = obj["items"]
        for item in items:
            if type(item) is dict and item.get("kind") == "Node":
                nodes += 1
            else:
                others += 1
    return nodes, others


POD_GROUP_APIS = ("coscheduling", "workload")
"""``podGroup.api``: scheduler-plugins' Coscheduling PodGroup (the default) or upstream's
Workload API PodGroup."""
WORKLOAD_POD_GROUP_VERSION = {"1.36": "v1alpha2", "1.37": "v1beta1"}
"""The ``scheduling.k8s.io`` version a generated Workload API PodGroup is written in."""


def _pod_groups(wl: Any, path: str, arrivals: list[Arrival], version: str) -> list[dict[str, Any]]:
    """Make ``arrivals`` into gangs per ``podGroup`` and return the PodGroup objects
    (Coscheduling's, or the Workload API's of release ``version`` with ``api: workload``)."""
    pg = wl.get("podGroup") if isinstance(wl, dict) else None
    if pg is None:
        return []
    gp = f"{path}.podGroup"
    if not isinstance(pg, dict):
        raise InputError([(gp, "must be a map")])
    sf.known(pg, sf.POD_GROUP_FIELDS, gp)
    size = sf.integer(pg, "size", gp, low=1, high=sf.MAX_PODS, default=max(len(arrivals), 1))
    min_member = sf.integer(pg, "minMember", gp, low=1, high=sf.MAX_PODS, default=size)
    timeout = None
    if pg.get("scheduleTimeoutSeconds") is not None:
        timeout = sf.integer(pg, "scheduleTimeoutSeconds", gp, high=int(sf.MAX_SECONDS))
    kind = pg.get("api", "coscheduling")
    if kind not in POD_GROUP_APIS:
        raise InputError([(f"{gp}.api", f"must be one of {', '.join(POD_GROUP_APIS)}")])
    topology = sf.opt(pg, "topologyKey", gp, str, None)
    if kind == "workload":
        if version not in WORKLOAD_POD_GROUP_VERSION:
            raise InputError(
                [(f"{gp}.api", f"workload needs Kubernetes 1.36 or later, not {version}")]
            )
        if timeout is not None:
            msg = "is Coscheduling's; GangScheduling's Permit timeout is fixed"
            raise InputError([(f"{gp}.scheduleTimeoutSeconds", msg)])
    elif topology is not None:
        raise InputError([(f"{gp}.topologyKey", "needs api: workload (Coscheduling has none)")])
    out: list[dict[str, Any]] = []
    for j, a in enumerate(arrivals):
        name = f"{wl['name']}-{j // size}" if size < len(arrivals) else str(wl["name"])
        if kind == "workload":
            a.pod.scheduling_group = name
        else:
            a.pod.labels[objects.POD_GROUP_LABEL] = name
        if j % size:
            continue
        meta = {"name": name, "namespace": a.pod.namespace}
        if kind == "workload":
            gspec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_member}}}
            if topology is not None:
                gspec["schedulingConstraints"] = {"topology": [{"key": topology}]}
            api_version = f"{workload.GROUP}/{WORKLOAD_POD_GROUP_VERSION[version]}"
            out.append({"apiVersion": api_version, "kind": "PodGroup", "metadata": meta})
            out[-1]["spec"] = gspec
            continue
        spec: dict[str, Any] = {"minMember": min_member}
        if timeout is not None:
            spec["scheduleTimeoutSeconds"] = timeout
        out.append(
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": meta,
                "spec": spec,
            }
        )
    return out


def _claims_per_pod(wl: Any, path: str, arrivals: list[Arrival]) -> list[dict[str, Any]]:
    """The workload's ``volumeClaimTemplates``: a claim ``<template>-<pod>`` per Pod and
    template, and the Pod's volume of the template's name using it (as a StatefulSet)."""
    templates = sf.opt(wl, "volumeClaimTemplates", path, list, [])
    if not templates:
        return []
    tp = f"{path}.volumeClaimTemplates"
    names: list[str] = []
    for i, t in enumerate(templates):
        ip = f"{tp}[{i}]"
        if not isinstance(t, dict):
            raise InputError([(ip, "must be a map")])
        meta = sf.req(t, "metadata", ip, dict)
        name = sf.req(meta, "name", f"{ip}.metadata", str)
        if not name or name in names:
            raise InputError([(f"{ip}.metadata.name", f'Duplicate value: "{name}"')])
        storage.read_claim_spec(sf.req(t, "spec", ip, dict), f"{ip}.spec")
        if arrivals and any(v.name == name for v in arrivals[0].pod.volumes):
            raise InputError([(f"{ip}.metadata.name", f'the template has a volume "{name}"')])
        names.append(name)
    out: list[dict[str, Any]] = []
    for a in arrivals:
        pod = a.pod
        extra = []
        for name, t in zip(names, templates, strict=True):
            claim = f"{name}-{pod.name}"
            meta = t["metadata"]
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {
                        "name": claim,
                        "namespace": pod.namespace,
                        "labels": dict(meta.get("labels") or {}),
                        "annotations": dict(meta.get("annotations") or {}),
                    },
                    "spec": copy.deepcopy(t["spec"]),
                }
            )
            extra.append(api.Volume(name, api.VOLUME_PVC, claim=claim))
        pod.volumes = (*pod.volumes, *extra)
    return out


def _pool_nodes(pool: dict[str, Any], path: str, names: dict[str, str]) -> list[api.Node]:
    sf.known(pool, sf.POOL_FIELDS, path)
    name = sf.unique_name(pool, path, names)
    count = sf.integer(pool, "count", path, high=sf.MAX_NODES)  # the total: _check_sizes
    zones = sf.opt(pool, "zones", path, list, [])
    labels = sf.opt(pool, "labels", path, dict, {})
    manifest = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"{name}-template", "labels": labels},
        "spec": {"taints": sf.opt(pool, "taints", path, list, [])},
        "status": {"allocatable": sf.req(pool, "allocatable", path, dict)},
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


def _check_gpu_place(template: dict[str, Any], path: str) -> None:
    """With ``gpuChoices`` the GPU request is written into the template's first container:
    each step of the way there must be a mapping (or absent, for resources and its parts)."""
    spec = sf.req(template, "spec", path, dict)
    containers = sf.req(spec, "containers", f"{path}.spec", list)
    if not containers:
        return
    cp = f"{path}.spec.containers[0]"
    if not isinstance(containers[0], dict):
        raise InputError([(cp, f"must be a mapping, got {excerpt(containers[0])}")])
    res = sf.opt(containers[0], "resources", cp, dict, {})
    for part in ("requests", "limits"):
        sf.opt(res, part, f"{cp}.resources", dict, None)


def _workload_arrivals(
    wl: Any, path: str, rng: np.random.Generator, duration: float
) -> list[Arrival]:
    sf.known(wl, sf.WORKLOAD_FIELDS, path)
    name = sf.req(wl, "name", path, str)
    count = sf.integer(wl, "count", path, high=sf.MAX_PODS)  # the total: _check_sizes
    rate = sf.number(wl, "ratePerSecond", path, high=1e9, positive=True)
    start = sf.number(wl, "startSeconds", path, default=0.0)
    life = wl.get("lifetimeSeconds")
    lifetime = None if isinstance(life, dict) else sf.optional_number(wl, "lifetimeSeconds", path)
    drawn = (
        startup.parse_latency(life, f"{path}.lifetimeSeconds") if isinstance(life, dict) else None
    )
    choices = sf.opt(wl, "gpuChoices", path, list, [])
    for j, choice in enumerate(choices):
        if not isinstance(choice, int) or isinstance(choice, bool) or choice < 0:
            raise InputError([(f"{path}.gpuChoices[{j}]", "must be an integer >= 0")])
    distinct = dict.fromkeys(choices or [None])  # one Pod parsed per distinct value
    if len(distinct) > sf.MAX_GPU_CHOICES:
        message = f"{len(distinct)} distinct values: at most {sf.MAX_GPU_CHOICES}"
        raise InputError([(f"{path}.gpuChoices", message)])
    template = sf.req(wl, "template", path, dict)
    sf.opt(template, "metadata", f"{path}.template", dict, None)
    if choices:
        _check_gpu_place(template, f"{path}.template")
    variants: dict[int | None, api.Pod] = {}
    for choice in distinct:
        manifest = copy.deepcopy(template)
        manifest.setdefault("apiVersion", "v1")
        manifest.setdefault("kind", "Pod")
        if manifest.get("metadata") is None:
            manifest["metadata"] = {}
        manifest["metadata"]["name"] = f"{name}-template"
        if choice is not None:
            for c in manifest["spec"]["containers"][:1]:
                if c.get("resources") is None:
                    c["resources"] = {}
                res = c["resources"]
                for part in ("requests", "limits"):
                    if GPU in (res.get(part) or {}) or part == "requests":
                        if res.get(part) is None:
                            res[part] = {}
                        res[part][GPU] = str(choice)
        variants[choice] = parse_pod(manifest, f"{path}.template")
    gaps = rng.exponential(1.0 / rate, size=count)
    times = start + np.cumsum(gaps)
    picks = rng.integers(len(choices), size=count) if choices else None
    lifetimes = rng.exponential(float(lifetime), size=count) if lifetime is not None else None
    if drawn is not None:
        lifetimes = drawn.draw(rng, count)
    out = []
    at = times.tolist()
    keys = [choices[k] for k in picks.tolist()] if picks is not None else [None] * count
    lives = lifetimes.tolist() if lifetimes is not None else [None] * count
    for j in range(count):
        base = variants[keys[j]]
        pod_name = f"{name}-{j:06d}"
        pod = base.shallow_copy()  # what dataclasses.replace does, ~30x cheaper (1M arrivals)
        pod.rename(pod_name)
        pod.uid = f"{base.namespace}-{pod_name}"
        pod.labels = dict(base.labels)
        pod.creation_timestamp = at[j]
        pod.raw = {}
        out.append(Arrival(at[j], pod, lives[j]))
    del duration
    return out
