"""The Workload API (``scheduling.k8s.io`` Workload and PodGroup, Kubernetes v1.35+): the
objects that make a gang part of kube-scheduler itself, as each release serves them.

The shapes differ per API version, and each release serves its own (only with the
``GenericWorkload`` gate on, as upstream's ``storage_scheduling.go``):

=========  ===========================  =============================================
release    API versions                 shape
=========  ===========================  =============================================
1.35       ``v1alpha1``                 Workload with ``spec.podGroups[]`` (name,
                                        ``policy.basic|gang``); a Pod joins by
                                        ``spec.workloadRef{name, podGroup,
                                        podGroupReplicaKey}``
1.36       ``v1alpha2``                 Workload with ``spec.podGroupTemplates[]``;
                                        PodGroup objects (``spec.podGroupTemplateRef.
                                        workload``, ``schedulingPolicy``); a Pod joins by
                                        ``spec.schedulingGroup.podGroupName``
1.37       ``v1beta1``, ``v1alpha3``    as 1.36, the PodGroup's template reference now
                                        ``spec.workloadRef{workloadName, templateName}``;
                                        CompositePodGroups (``v1alpha3``, gate
                                        CompositePodGroup)
=========  ===========================  =============================================

Two steps, as the API server takes an object:

- :func:`validate` checks a manifest against its own ``apiVersion``'s shape (upstream's
  hand-written ``pkg/apis/scheduling/validation`` and the declarative
  ``zz_generated.validations.go``: unions, ``minCount >= 1``, at most 8 templates, unique
  names, name formats, the priority's maximum), in the one input path
  (:mod:`kubesched.api.parse`), independent of the release;
- :func:`admit` then takes the objects of a snapshot or scenario under a release's gates:
  a version or kind the release does not serve is refused (``no matches for kind``), the
  priority admission plugin sets a PodGroup's priority (and, v1.37, preemption policy) from
  its PriorityClass, fields of a disabled gate are dropped (the registry strategies'
  ``dropDisabled*Fields``), the rest is validated and defaults are set
  (``SetDefaults_PodGroup``), giving the :class:`PodGroup` and :class:`Workload` values the
  scheduler reads.  v1.37's answers are checked against the real kube-apiserver
  (``tests/controlplane/test_workload_api.py``; ``docs/workload-api.md``).
  :func:`pod_group_key` says which runtime group a Pod belongs to in a release.

The Coscheduling ``PodGroup`` of ``scheduling.x-k8s.io`` has the same kind and lives in
:mod:`kubesched.admission.objects`; :func:`is_workload_api` tells the two apart by group.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

from kubesched.api import fielderr as fe
from kubesched.api import objects as api
from kubesched.api.errors import InputError

__all__ = [
    "GROUP",
    "KINDS",
    "SERVED",
    "CompositePodGroup",
    "Gates",
    "GroupTemplate",
    "PodGroup",
    "Workload",
    "WorkloadObjects",
    "admit",
    "is_workload_api",
    "pod_group_key",
    "read",
    "validate",
]

GROUP = "scheduling.k8s.io"
KINDS = ("Workload", "PodGroup", "CompositePodGroup")

SERVED: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "1.35": {"v1alpha1": ("Workload",)},
    "1.36": {"v1alpha2": ("Workload", "PodGroup")},
    "1.37": {
        "v1beta1": ("Workload", "PodGroup"),
        "v1alpha3": ("Workload", "PodGroup", "CompositePodGroup"),
    },
}
"""Per release, the ``scheduling.k8s.io`` versions and the kinds of this module each serves
(``pkg/registry/scheduling/rest/storage_scheduling.go``; all behind GenericWorkload,
CompositePodGroup also behind its own gate)."""

KNOWN_VERSIONS = ("v1alpha1", "v1alpha2", "v1alpha3", "v1beta1")
MAX_POD_GROUPS = 8
"""``WorkloadMaxPodGroups`` (v1.35) and the templates' ``+k8s:maxItems=8`` (v1.36+)."""
MAX_TOPOLOGY = 1
"""``schedulingConstraints.topology``: ``+k8s:maxItems=1``."""
MAX_RESOURCE_CLAIMS = 4
MAX_TREE_DEPTH = 4
"""``WorkloadMaxTreeDepth``: levels of (composite) pod groups under one root."""
MAX_PRIORITY = 1_000_000_000
"""``priority``: ``+k8s:maximum=1000000000`` (the highest user-definable priority)."""
PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")
DISRUPTION_MODES = ("Pod", "PodGroup")
"""v1alpha2's ``disruptionMode`` enum (v1.36; from v1.37 a union, ``single: {}`` or
``all: {}``): ``PodGroup`` is v1.37's ``all``, the group's Pods preempted only together."""

DROPPED: Mapping[str, Mapping[str, str]] = {
    "1.36": {
        "schedulingConstraints": "TopologyAwareWorkloadScheduling",
        "resourceClaims": "DRAWorkloadResourceClaims",
        "disruptionMode": "WorkloadAwarePreemption",
        "priorityClassName": "WorkloadAwarePreemption",
        "priority": "WorkloadAwarePreemption",
    },
    "1.37": {
        "schedulingConstraints": "TopologyAwareWorkloadScheduling",
        "resourceClaims": "DRAWorkloadResourceClaims",
        "preemptionPolicy": "PodGroupPreemptionPolicy",
        "parentCompositePodGroupName": "CompositePodGroup",
    },
}
"""Per release, a PodGroup's (and a Workload template's) spec fields the API server drops on
create while their gate is off (``dropDisabledPodGroupSpecFields``)."""

STORED_KEPT = ("schedulingConstraints",)
"""The fields the scheduler reads from a stored PodGroup whatever their gate.  The API server
drops a disabled field on create (and on an update only when the old object did not use
it: :func:`as_created`), so an object of the snapshot carries what it was stored with
(created while the gate was on), and the scheduler's informer sees it: v1.36's
workload-aware preemption refuses a group whose PodGroup has topology constraints even with
TopologyAwareWorkloadScheduling off (``runWorkloadAwarePreemption`` reads
``pg.Spec.SchedulingConstraints`` without asking the gate).  The other gated fields are
read only under their gates (v1.36's priority and ``disruptionMode`` by workload-aware
preemption alone), so :func:`read` may drop them as it always did."""

Obj = Mapping[str, Any]
Problems = list[fe.Problem]


class Gates(Protocol):
    """What :func:`admit` reads of a run's feature gates
    (:class:`kubesched.config.featuregates.FeatureGates` is one)."""

    @property
    def version(self) -> str:
        """The Kubernetes minor release, ``"1.37"``."""
        ...

    def enabled(self, name: str) -> bool:
        """Whether gate ``name`` is on (false for a gate the release does not have)."""
        ...


@dataclass(frozen=True, slots=True)
class GroupTemplate:
    """A pod group of a Workload (v1.35 ``spec.podGroups[]``, v1.36+ a PodGroupTemplate):
    ``min_count`` is the gang's ``minCount``, 0 for the ``basic`` policy."""

    name: str
    min_count: int = 0
    topology_keys: tuple[str, ...] = ()
    priority_class_name: str = ""
    priority: int | None = None
    preemption_policy: str | None = None
    disruption_all: bool = False
    """``disruptionMode`` ``PodGroup`` (v1.36) or ``all`` (v1.37): the group's Pods are
    preempted only together."""

    @property
    def gang(self) -> bool:
        """Whether the group is scheduled all-or-nothing (``schedulingPolicy.gang``)."""
        return self.min_count > 0


@dataclass(frozen=True, slots=True)
class Workload:
    """A Workload: its namespace, name, the API version it came in and its pod groups."""

    namespace: str
    name: str
    api_version: str
    templates: tuple[GroupTemplate, ...]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def template(self, name: str) -> GroupTemplate | None:
        """The pod group ``name`` of this Workload, or None."""
        return next((t for t in self.templates if t.name == name), None)


@dataclass(frozen=True, slots=True)
class PodGroup:
    """A PodGroup object (v1.36+): the runtime group Pods join by
    ``spec.schedulingGroup.podGroupName``; ``policy`` is its own copy of the template's
    (name, minCount, constraints, priority), ``workload``/``template`` what it was made from
    (empty if not from a Workload)."""

    namespace: str
    name: str
    api_version: str
    policy: GroupTemplate
    workload: str = ""
    template: str = ""
    parent: str | None = None
    """``spec.parentCompositePodGroupName`` (v1.37, gate CompositePodGroup)."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class CompositePodGroup:
    """A CompositePodGroup object (v1.37 ``v1alpha3``, gate CompositePodGroup): a group of
    PodGroups and CompositePodGroups (its children name it in
    ``spec.parentCompositePodGroupName``), at most :data:`MAX_TREE_DEPTH` levels.
    ``policy.min_count`` is ``schedulingPolicy.gang.minGroupCount`` (0 for ``basic``): how
    many children must be schedulable; the rest of ``policy`` (topology, priority,
    preemption policy, ``disruptionMode.all``) as a PodGroup's.  The scheduler schedules a
    tree in one cycle (:mod:`kubesched.scheduler.podgroup_tree`), a CompositePodGroup's
    topology constraint giving the placements its children are tried in."""

    namespace: str
    name: str
    api_version: str
    policy: GroupTemplate
    workload: str
    template: str
    parent: str | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class WorkloadObjects:
    """The admitted Workload API objects of a snapshot or scenario, by ``namespace/name``."""

    workloads: dict[str, Workload] = field(default_factory=dict)
    pod_groups: dict[str, PodGroup] = field(default_factory=dict)
    composite_pod_groups: dict[str, CompositePodGroup] = field(default_factory=dict)


# --------------------------------------------------------------------------- recognising
def is_workload_api(obj: Obj) -> bool:
    """Whether ``obj`` is one of this module's kinds in ``scheduling.k8s.io`` (any version)."""
    version = obj.get("apiVersion")
    return (
        obj.get("kind") in KINDS
        and isinstance(version, str)
        and version.split("/", 1)[0] == GROUP
        and "/" in version
    )


def _version(obj: Obj) -> str:
    return str(obj.get("apiVersion", "")).split("/", 1)[1]


# --------------------------------------------------------------------------- shape checks
class _Reader:
    """Reads a manifest's fields, collecting upstream-worded problems with their paths."""

    def __init__(self, admitted: bool = True) -> None:
        self.problems: Problems = []
        self.admitted = admitted
        """The object is as the API server stores it (gated fields dropped): checks whose
        text shows the whole stored value (duplicate templates) are made only then."""

    def mapping(self, obj: Obj, key: str, path: str, required: bool = False) -> Obj | None:
        value = obj.get(key)
        p = fe.join(path, key)
        if value is None:
            if required:
                self.problems.append(fe.required(p))
            return None
        if not isinstance(value, dict):
            self.problems.append((p, "must be an object"))
            return None
        return value

    def seq(self, obj: Obj, key: str, path: str) -> list[Any]:
        value = obj.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.problems.append((fe.join(path, key), "must be a list"))
            return []
        return value

    def string(self, obj: Obj, key: str, path: str) -> str | None:
        value = obj.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            self.problems.append((fe.join(path, key), "must be a string"))
            return None
        return value

    def name(self, obj: Obj, key: str, path: str, long: bool, required: bool = True) -> str:
        """A name field: ``LongName`` (DNS subdomain) or ``ShortName`` (DNS label)."""
        p = fe.join(path, key)
        value = self.string(obj, key, path)
        if not value:
            if required:
                self.problems.append(fe.required(p))
            return ""
        errors = fe.dns1123_subdomain_errors(value) if long else fe.dns1123_label_errors(value)
        self.problems.extend(fe.invalid(p, value, m) for m in errors)
        return value

    def int32(self, obj: Obj, key: str, path: str) -> int | None:
        value = obj.get(key)
        if value is None:
            return None
        p = fe.join(path, key)
        if isinstance(value, bool) or not isinstance(value, int):
            self.problems.append((p, "must be an integer"))
            return None
        if not fe.INT32_MIN <= value <= fe.INT32_MAX:
            self.problems.append((p, "must be a 32-bit integer"))
            return None
        return value

    def max_items(self, items: Sequence[Any], limit: int, path: str) -> bool:
        if len(items) > limit:
            noun = "item" if limit == 1 else "items"  # field.TooMany's wording
            self.problems.append(
                (path, f"Too many: {len(items)}: must have at most {limit} {noun}")
            )
            return False
        return True

    def union(self, obj: Obj, members: tuple[str, ...], path: str) -> str | None:
        """The one member of a union set, or None with upstream's ``validate.Union`` text."""
        given = [m for m in members if obj.get(m) is not None and obj.get(m) != []]
        shown = ", ".join(f"`{m}`" for m in members)
        if not given:
            self.problems.append(fe.invalid(path, "", f"must specify one of: {shown}"))
            return None
        if len(given) > 1:
            value = "{" + ", ".join(given) + "}"
            self.problems.append(fe.invalid(path, value, f"must specify exactly one of: {shown}"))
            return None
        return given[0]


def _meta(r: _Reader, obj: Obj, path: str) -> tuple[str, str]:
    """``(namespace, name)``: the name a DNS subdomain (``NameIsDNSSubdomain``)."""
    meta = r.mapping(obj, "metadata", path, required=True) or {}
    mpath = fe.join(path, "metadata")
    name = r.name(meta, "name", mpath, long=True)
    return r.string(meta, "namespace", mpath) or "default", name


def _policy(
    r: _Reader, obj: Obj, key: str, path: str, positive: bool = False, count_key: str = "minCount"
) -> int:
    """A ``policy``/``schedulingPolicy`` union: ``minCount`` of ``gang``, 0 for ``basic``.
    ``minCount`` is a required value, 0 counting as missing, then at least 1 (declarative,
    v1.36+); with ``positive`` (v1.35's hand-written ``ValidatePositiveField``) any value
    not above 0 is ``must be greater than zero``.  ``count_key`` names the gang's count
    (a CompositePodGroup's ``minGroupCount``)."""
    ppath = fe.join(path, key)
    policy = r.mapping(obj, key, path) or {}
    if positive:  # v1.35's validatePodGroupPolicy
        given = [m for m in ("basic", "gang") if policy.get(m) is not None]
        exactly = "exactly one of `basic`, `gang` is required"
        if not given:
            r.problems.append(fe.required(ppath, exactly))
        elif len(given) > 1:
            shown = "{" + ", ".join(f"`{m}`" for m in given) + "}"
            r.problems.append(fe.invalid(ppath, shown, f"{exactly}, but multiple fields are set"))
        if given != ["gang"]:
            return 0
    elif r.union(policy, ("basic", "gang"), ppath) != "gang":
        return 0
    gpath = fe.join(ppath, "gang")
    gang = r.mapping(policy, "gang", ppath) or {}
    count = r.int32(gang, count_key, gpath)
    cpath = fe.join(gpath, count_key)
    if positive:
        if count is None or count < 1:
            if count is not None or count_key not in gang:
                r.problems.append(fe.invalid(cpath, count or 0, "must be greater than zero"))
            return 0
        return count
    if not count:
        if count is not None or count_key not in gang:
            r.problems.append(fe.required(cpath))
        return 0
    if count < 1:
        r.problems.append(fe.invalid(cpath, count, "must be greater than or equal to 1"))
        return 0
    return count


def _group_fields(
    r: _Reader, obj: Obj, path: str, name: str, policy_key: str, count_key: str = "minCount"
) -> GroupTemplate:
    """The scheduling fields a v1.36+ template, a PodGroup's spec and a CompositePodGroup's
    spec (``count_key`` ``minGroupCount``) share."""
    min_count = _policy(r, obj, policy_key, path, count_key=count_key)
    keys: list[str] = []
    cons = r.mapping(obj, "schedulingConstraints", path)
    if cons is not None:
        cpath = fe.join(fe.join(path, "schedulingConstraints"), "topology")
        topology = r.seq(cons, "topology", fe.join(path, "schedulingConstraints"))
        if r.max_items(topology, MAX_TOPOLOGY, cpath):
            for i, t in enumerate(topology):
                tpath = fe.index(cpath, i)
                if not isinstance(t, dict):
                    r.problems.append((tpath, "must be an object"))
                    continue
                key = r.string(t, "key", tpath)
                if not key:
                    r.problems.append(fe.required(fe.join(tpath, "key")))
                    continue
                r.problems.extend(fe.validate_label_name(fe.join(tpath, "key"), key))
                keys.append(key)
    claims = r.seq(obj, "resourceClaims", path)
    r.max_items(claims, MAX_RESOURCE_CLAIMS, fe.join(path, "resourceClaims"))
    priority = r.int32(obj, "priority", path)
    if priority is not None and priority > MAX_PRIORITY:
        r.problems.append(
            fe.invalid(
                fe.join(path, "priority"), priority, f"must be less than or equal to {MAX_PRIORITY}"
            )
        )
    policy = r.string(obj, "preemptionPolicy", path)
    if policy is not None and policy not in PREEMPTION_POLICIES:
        r.problems.append(
            fe.not_supported(fe.join(path, "preemptionPolicy"), policy, PREEMPTION_POLICIES)
        )
    mode = obj.get("disruptionMode")
    if isinstance(mode, str) and mode not in DISRUPTION_MODES:  # v1alpha2's enum
        r.problems.append(fe.not_supported(fe.join(path, "disruptionMode"), mode, DISRUPTION_MODES))
    if count_key == "minGroupCount" and isinstance(mode, dict):  # CompositeDisruptionMode
        given = [m for m in ("single", "all") if mode.get(m) is not None]
        if len(given) > 1:
            value = "{" + ", ".join(given) + "}"
            shown = "must specify exactly one of: `single`, `all`"
            r.problems.append(fe.invalid(fe.join(path, "disruptionMode"), value, shown))
    return GroupTemplate(
        name,
        min_count,
        tuple(keys),
        r.string(obj, "priorityClassName", path) or "",
        priority,
        policy,
        mode == DISRUPTION_MODES[1] or (isinstance(mode, dict) and mode.get("all") is not None),
    )


def _templates(r: _Reader, spec: Obj, key: str, path: str, v1alpha1: bool) -> list[GroupTemplate]:
    """A Workload's pod groups (``podGroups`` in v1alpha1, else ``podGroupTemplates``),
    names unique, at most :data:`MAX_POD_GROUPS`."""
    items = r.seq(spec, key, path)
    lpath = fe.join(path, key)
    if not r.max_items(items, MAX_POD_GROUPS, lpath):
        return []
    out: list[GroupTemplate] = []
    seen: set[str] = set()
    for i, t in enumerate(items):
        tpath = fe.index(lpath, i)
        if not isinstance(t, dict):
            r.problems.append((tpath, "must be an object"))
            continue
        if v1alpha1:  # ValidatePodGroupName: an empty name fails the format too
            name = r.string(t, "name", tpath) or ""
            npath = fe.join(tpath, "name")
            r.problems.extend(fe.invalid(npath, name, m) for m in fe.dns1123_label_errors(name))
        else:
            name = r.name(t, "name", tpath, long=False)
        if name in seen and v1alpha1:
            r.problems.append(fe.duplicate(fe.join(tpath, "name"), name))
        elif name in seen and r.admitted:  # declarative ValSliceUnique: the whole item
            r.problems.append(fe.duplicate(tpath, _stored_template(t)))
        seen.add(name)
        if v1alpha1:
            out.append(GroupTemplate(name, _policy(r, t, "policy", tpath, positive=True)))
        else:
            out.append(_group_fields(r, t, tpath, name, "schedulingPolicy"))
    return out


def _stored_template(t: Obj) -> dict[str, Any]:
    """A PodGroupTemplate as the API server's Go types marshal it (field order, ``omitempty``:
    ``schedulingConstraints`` is ``null`` when absent), for the value of a ``Duplicate``."""
    policy = t.get("schedulingPolicy") or {}
    out: dict[str, Any] = {"name": t.get("name", "")}
    shown: dict[str, Any] = {}
    if policy.get("basic") is not None:
        shown["basic"] = {}
    if policy.get("gang") is not None:
        shown["gang"] = {"minCount": (policy.get("gang") or {}).get("minCount", 0)}
    out["schedulingPolicy"] = shown
    cons = t.get("schedulingConstraints")
    if cons is None:
        out["schedulingConstraints"] = None
    else:
        topology = [{"key": c.get("key", "")} for c in cons.get("topology") or []]
        out["schedulingConstraints"] = {"topology": topology} if topology else {}
    for key in ("resourceClaims", "disruptionMode", "priorityClassName", "priority"):
        if t.get(key) not in (None, "", []):
            out[key] = t[key]
    if t.get("preemptionPolicy") is not None:
        out["preemptionPolicy"] = t["preemptionPolicy"]
    return out


def _controller_ref(r: _Reader, spec: Obj, path: str) -> None:
    ref = r.mapping(spec, "controllerRef", path)
    if ref is None:
        return
    rpath = fe.join(path, "controllerRef")
    for key in ("kind", "name"):
        if not r.string(ref, key, rpath):
            r.problems.append(fe.required(fe.join(rpath, key)))


def _parse_workload(r: _Reader, obj: Obj, path: str) -> Workload:
    version = _version(obj)
    namespace, name = _meta(r, obj, path)
    spec = r.mapping(obj, "spec", path, required=True) or {}
    spath = fe.join(path, "spec")
    _controller_ref(r, spec, spath)
    if version == "v1alpha1":
        templates = _templates(r, spec, "podGroups", spath, v1alpha1=True)
        if not r.seq(spec, "podGroups", spath):
            at_least_one = "must have at least one item"
            r.problems.append(fe.required(fe.join(spath, "podGroups"), at_least_one))
    else:
        templates = _templates(r, spec, "podGroupTemplates", spath, v1alpha1=False)
        composite = r.seq(spec, "compositePodGroupTemplates", spath)
        if version in ("v1alpha3", "v1beta1"):
            r.union(spec, ("podGroupTemplates", "compositePodGroupTemplates"), spath)
            r.max_items(composite, MAX_POD_GROUPS, fe.join(spath, "compositePodGroupTemplates"))
        _same_priority(r, templates, spath)
    return Workload(namespace, name, obj["apiVersion"], tuple(templates))


def _same_priority(r: _Reader, templates: Sequence[GroupTemplate], path: str) -> None:
    """``validateWorkloadPriority``: every template the same priority and class."""
    if len({(t.priority_class_name, t.priority) for t in templates}) > 1:
        r.problems.append(fe.invalid(path, None, "detected multiple priority configurations"))


def _parse_pod_group(r: _Reader, obj: Obj, path: str) -> PodGroup:
    version = _version(obj)
    namespace, name = _meta(r, obj, path)
    spec = r.mapping(obj, "spec", path, required=True) or {}
    spath = fe.join(path, "spec")
    workload = template = ""
    if version == "v1alpha2":
        ref = r.mapping(spec, "podGroupTemplateRef", spath)
        rpath = fe.join(spath, "podGroupTemplateRef")
        wl = r.mapping(ref, "workload", rpath) if ref is not None else None
        if wl is not None:
            wpath = fe.join(rpath, "workload")
            workload = r.name(wl, "workloadName", wpath, long=True)
            template = r.name(wl, "podGroupTemplateName", wpath, long=False)
    else:
        ref = r.mapping(spec, "workloadRef", spath)
        rpath = fe.join(spath, "workloadRef")
        if ref is not None:
            workload = r.name(ref, "workloadName", rpath, long=True)
            template = r.name(ref, "templateName", rpath, long=False)
    parent = r.string(spec, "parentCompositePodGroupName", spath)
    if parent is not None:
        if ref is None:
            needed = "must be set when parentCompositePodGroupName is set"
            r.problems.append(fe.required(fe.join(spath, "workloadRef"), needed))
        r.name(spec, "parentCompositePodGroupName", spath, long=True)
    policy = _group_fields(r, spec, spath, name, "schedulingPolicy")
    return PodGroup(namespace, name, obj["apiVersion"], policy, workload, template, parent)


def _parse_composite(r: _Reader, obj: Obj, path: str) -> CompositePodGroup:
    """A ``v1alpha3`` CompositePodGroup (``Validate_CompositePodGroupSpec``): ``workloadRef``
    required, ``parentCompositePodGroupName`` a long name, ``schedulingPolicy`` the
    ``basic``/``gang`` union with ``gang.minGroupCount`` at least 1, the rest as a
    PodGroup's."""
    namespace, name = _meta(r, obj, path)
    spec = r.mapping(obj, "spec", path, required=True) or {}
    spath = fe.join(path, "spec")
    workload = template = ""
    ref = r.mapping(spec, "workloadRef", spath, required=True)
    if ref is not None:
        rpath = fe.join(spath, "workloadRef")
        workload = r.name(ref, "workloadName", rpath, long=True)
        template = r.name(ref, "templateName", rpath, long=False)
    parent = None
    if spec.get("parentCompositePodGroupName") is not None:
        parent = r.name(spec, "parentCompositePodGroupName", spath, long=True)
    class_name = r.string(spec, "priorityClassName", spath)
    if class_name:
        r.name(spec, "priorityClassName", spath, long=True)
    policy = _group_fields(r, spec, spath, name, "schedulingPolicy", count_key="minGroupCount")
    return CompositePodGroup(namespace, name, obj["apiVersion"], policy, workload, template, parent)


def validate(obj: Obj, path: str) -> None:
    """Check a ``scheduling.k8s.io`` Workload, PodGroup or CompositePodGroup against its own
    ``apiVersion``'s shape; :class:`InputError` with every problem, paths under ``path``."""
    problems = _check(_without_gated(obj), path, admitted=False)[1]
    if problems:
        raise InputError(problems)


def _check(
    obj: Obj, path: str, admitted: bool = True
) -> tuple[Workload | PodGroup | CompositePodGroup | None, Problems]:
    r = _Reader(admitted)
    kind, version = obj.get("kind"), _version(obj)
    if version not in KNOWN_VERSIONS:
        shown = ", ".join(f"{GROUP}/{v}" for v in KNOWN_VERSIONS)
        return None, [(fe.join(path, "apiVersion"), f"must be one of {shown}")]
    if kind == "Workload":
        return _parse_workload(r, obj, path), r.problems
    if kind == "PodGroup":
        if version == "v1alpha1":
            why = f"no PodGroup kind in {GROUP}/v1alpha1 (v1.35's pod groups are a Workload's"
            return None, [(fe.join(path, "kind"), why + " spec.podGroups)")]
        return _parse_pod_group(r, obj, path), r.problems
    if version != "v1alpha3":
        why = f"no CompositePodGroup kind in {GROUP}/{version} (served as {GROUP}/v1alpha3)"
        return None, [(fe.join(path, "kind"), why)]
    return _parse_composite(r, obj, path), r.problems


# --------------------------------------------------------------------------- admission
def _drop(obj: Obj, version: str, gates: Gates, kept: Sequence[str] = ()) -> dict[str, Any]:
    """``obj`` (a PodGroup manifest or a Workload template) without the spec fields of
    disabled gates (:data:`DROPPED`), except those in ``kept``."""
    out = dict(obj)
    for key, gate in DROPPED.get(version, {}).items():
        if key in out and key not in kept and not gates.enabled(gate):
            del out[key]
    return out


class _AllOff:
    """Gates with every gate off, at a release: :func:`validate` checks only what no gate
    drops (the rest is checked by :func:`admit`, which knows the gates)."""

    def __init__(self, version: str) -> None:
        self.version = version

    def enabled(self, name: str) -> bool:
        return False


_RELEASE_OF = {"v1alpha1": "1.35", "v1alpha2": "1.36", "v1alpha3": "1.37", "v1beta1": "1.37"}


def _without_gated(obj: Obj) -> Obj:
    """``obj`` without any field a gate of its API version's release may drop."""
    return _admitted(obj, _AllOff(_RELEASE_OF.get(_version(obj), "")))


def _admitted(obj: Obj, gates: Gates, kept: Sequence[str] = ()) -> Obj:
    """The manifest as the API server of ``gates`` stores it: disabled fields dropped
    (a PodGroup's ``kept`` ones excepted)."""
    version = gates.version
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return obj
    if obj.get("kind") == "PodGroup":
        return {**obj, "spec": _drop(spec, version, gates, kept)}
    if obj.get("kind") == "CompositePodGroup":  # dropDisabledCompositePodGroupSpecFields
        if gates.enabled("PodGroupPreemptionPolicy"):
            return obj
        return {**obj, "spec": {k: v for k, v in spec.items() if k != "preemptionPolicy"}}
    templates = spec.get("podGroupTemplates")
    new_spec = dict(spec)
    if isinstance(templates, list):
        new_spec["podGroupTemplates"] = [
            _drop(t, version, gates) if isinstance(t, dict) else t for t in templates
        ]
    if version == "1.37" and not gates.enabled("CompositePodGroup"):
        new_spec.pop("compositePodGroupTemplates", None)
    return {**obj, "spec": new_spec}


def _served_problem(obj: Obj, gates: Gates, path: str) -> fe.Problem | None:
    kind, version = str(obj.get("kind")), _version(obj)
    served = SERVED.get(gates.version, {})
    if (
        gates.enabled("GenericWorkload")
        and kind in served.get(version, ())
        and (kind != "CompositePodGroup" or gates.enabled("CompositePodGroup"))
    ):
        return None
    gate = "CompositePodGroup" if kind == "CompositePodGroup" else "GenericWorkload"
    offered = [f"{GROUP}/{v}" for v, kinds in served.items() if kind in kinds]
    if not offered:
        why = f"Kubernetes {gates.version} does not serve {kind}"
    else:
        why = f"Kubernetes {gates.version} serves {kind} as {', '.join(offered)}, with {gate} on"
    return (
        fe.join(path, "apiVersion"),
        f'no matches for kind "{kind}" in version "{obj.get("apiVersion")}" ({why})',
    )


def admit(
    objects: Iterable[Obj],
    gates: Gates,
    paths: Sequence[str] | None = None,
    *,
    priority_admission: bool = True,
) -> WorkloadObjects:
    """The Workload API objects among ``objects`` as the API server of ``gates``' release
    stores them (see the module docstring); others are skipped, except PriorityClasses,
    which the priority admission plugin reads for PodGroups.  ``paths`` name each object in
    errors (default ``Kind/namespace/name``).  :class:`InputError` with every problem: a
    version or kind not served, a priority the admission plugin forbids, or an object
    :func:`validate` refuses.  ``priority_admission=False``: an API server without the
    Priority admission plugin (upstream's scheduler_perf cluster disables it), which keeps
    a PodGroup's ``spec.priority`` as given."""
    objects = list(objects)
    classes = _PriorityClasses(o for o in objects if o.get("kind") == "PriorityClass")
    out = WorkloadObjects()
    problems: Problems = []
    for i, obj in enumerate(objects):
        if not is_workload_api(obj):
            continue
        path = paths[i] if paths is not None else _name_path(obj)
        refused = _served_problem(obj, gates, path)
        if refused is not None:
            problems.append(refused)
            continue
        if obj.get("kind") in ("PodGroup", "CompositePodGroup") and priority_admission:
            obj, forbidden = _admit_priority(obj, gates, classes)
            if forbidden:
                problems.append((path, forbidden))
                continue
        value, found = _check(_admitted(obj, gates), path)
        problems.extend(found)
        if isinstance(value, Workload):
            out.workloads[value.key] = value
        elif isinstance(value, PodGroup):
            out.pod_groups[value.key] = _defaulted(value, gates)
        elif isinstance(value, CompositePodGroup):
            out.composite_pod_groups[value.key] = _defaulted(value, gates)
    if problems:
        raise InputError(problems)
    return out


class _PriorityClasses:
    """PriorityClass values by name (the system classes included) and the global default
    (the lowest-valued one, as the admission plugin picks)."""

    def __init__(self, objects: Iterable[Obj]) -> None:
        self.classes: dict[str, tuple[int, str]] = {
            name: (value, PREEMPTION_POLICIES[1])
            for name, value in api.SYSTEM_PRIORITY_CLASSES.items()
        }
        self.default: tuple[str, int, str] | None = None
        for obj in objects:
            meta, value = obj.get("metadata"), obj.get("value")
            if not isinstance(meta, dict) or not isinstance(value, int):
                continue  # parse_objects reported it
            name = str(meta.get("name", ""))
            policy = obj.get("preemptionPolicy") or PREEMPTION_POLICIES[1]
            self.classes[name] = (value, str(policy))
            if obj.get("globalDefault") is True and (
                self.default is None or value < self.default[1]
            ):
                self.default = (name, value, str(policy))

    def establish(self, name: str) -> tuple[str, int, str] | str:
        """Upstream ``establishPriority``: ``(class name, priority, preemption policy)``, or
        the forbidden message for a class that does not exist."""
        if not name:
            return self.default or ("", 0, PREEMPTION_POLICIES[1])
        found = self.classes.get(name)
        if found is None:
            return f"no PriorityClass with name {name} was found"
        return name, found[0], found[1]


_POD_GROUP = ("podgroups", "pod group")
_G = TypeVar("_G", "PodGroup", "CompositePodGroup")


def _admit_priority(obj: Obj, gates: Gates, classes: _PriorityClasses) -> tuple[Obj, str]:
    """The priority admission plugin's ``admitPodGroup`` (v1.36 under WorkloadAwarePreemption,
    v1.37 under GenericWorkload; it runs before validation): ``spec.priority`` and
    ``spec.priorityClassName`` from the class (or the global default), ``spec.preemptionPolicy``
    too in v1.37 under PodGroupPreemptionPolicy; a value given that differs is forbidden.
    A CompositePodGroup the same (``admitCompositePodGroup``, under CompositePodGroup).
    The admitted manifest and the forbidden message ("" when admitted)."""
    version = gates.version
    gate = {"1.36": "WorkloadAwarePreemption", "1.37": "GenericWorkload"}.get(version)
    composite = obj.get("kind") == "CompositePodGroup"
    if composite:  # admitCompositePodGroup
        gate = "CompositePodGroup"
    spec = obj.get("spec")
    if gate is None or not gates.enabled(gate) or not isinstance(spec, dict):
        return obj, ""
    meta = obj.get("metadata") or {}
    resource, noun = ("compositepodgroups", "composite pod group") if composite else _POD_GROUP
    head = f'{resource}.{GROUP} "{meta.get("name", "")}" is forbidden: '
    given_class = spec.get("priorityClassName")
    established = classes.establish(given_class if isinstance(given_class, str) else "")
    if isinstance(established, str):
        return obj, head + established
    class_name, priority, policy = established
    given = spec.get("priority")
    if isinstance(given, int) and not isinstance(given, bool) and given != priority:
        return obj, head + (
            f"priority set in the {noun} ({given}) must match the priority computed "
            f"({priority}) based on the priority class set in the spec"
        )
    new_spec = {**spec, "priority": priority, "priorityClassName": class_name}
    if not class_name:
        del new_spec["priorityClassName"]
    if version == "1.37" and gates.enabled("PodGroupPreemptionPolicy"):
        given_policy = spec.get("preemptionPolicy")
        if given_policy is not None and given_policy != policy:
            return obj, head + (
                f"the string value of PreemptionPolicy ({given_policy}) must not be provided "
                f"in {noun} spec; priority admission controller computed {policy} from the "
                "given PriorityClass name"
            )
        new_spec["preemptionPolicy"] = policy
    return {**obj, "spec": new_spec}, ""


def _defaulted(group: _G, gates: Gates) -> _G:
    """``SetDefaults_PodGroup`` and ``SetDefaults_CompositePodGroup`` (v1.37):
    ``preemptionPolicy`` PreemptLowerPriority under PodGroupPreemptionPolicy."""
    if group.policy.preemption_policy is None and gates.enabled("PodGroupPreemptionPolicy"):
        policy = replace(group.policy, preemption_policy=PREEMPTION_POLICIES[1])
        return replace(group, policy=policy)
    return group


def _name_path(obj: Obj) -> str:
    meta = obj.get("metadata")
    name = meta.get("name", "?") if isinstance(meta, dict) else "?"
    namespace = (meta.get("namespace") if isinstance(meta, dict) else None) or "default"
    return f"{obj.get('kind')}/{namespace}/{name}"


# --------------------------------------------------------------------------- Pods
def pod_group_key(pod: api.Pod, gates: Gates) -> str | None:
    """The runtime group ``pod`` belongs to under ``gates``, or None: v1.35
    ``namespace/workload/podGroup/replicaKey`` from ``spec.workloadRef``, v1.36+
    ``namespace/podGroupName`` from ``spec.schedulingGroup``.  The API server drops the field
    while GenericWorkload is off (``dropDisabledWorkloadRef``/``dropDisabledSchedulingGroup``),
    and the other release's field is unknown to it."""
    version = gates.version
    if version not in SERVED or not gates.enabled("GenericWorkload"):
        return None
    if version == "1.35":
        ref = pod.workload_ref
        if ref is None:
            return None
        return f"{pod.namespace}/{ref.name}/{ref.pod_group}/{ref.replica_key}"
    if not pod.scheduling_group:
        return None
    return f"{pod.namespace}/{pod.scheduling_group}"


def check_pod_refs(pods: Iterable[api.Pod], gates: Gates) -> Problems:
    """The Pods' group references under ``gates``' Pod validation (kept only with
    GenericWorkload on): v1.35 ``workloadRef`` (``name`` a DNS subdomain, ``podGroup`` a DNS
    label, ``podGroupReplicaKey`` empty or a DNS label), v1.36+
    ``schedulingGroup.podGroupName`` (required, a DNS subdomain)."""
    version = gates.version
    if version not in SERVED or not gates.enabled("GenericWorkload"):
        return []
    problems: Problems = []
    for pod in pods:
        base = f"Pod {pod.key}: spec"
        if version == "1.35" and pod.workload_ref is not None:
            ref, rpath = pod.workload_ref, f"{base}.workloadRef"
            checks = [
                ("name", ref.name, fe.dns1123_subdomain_errors),
                ("podGroup", ref.pod_group, fe.dns1123_label_errors),
            ]
            if ref.replica_key:
                checks.append(("podGroupReplicaKey", ref.replica_key, fe.dns1123_label_errors))
            for key, value, rule in checks:
                problems.extend(fe.invalid(f"{rpath}.{key}", value, m) for m in rule(value))
        elif version != "1.35" and pod.scheduling_group is not None:
            p = f"{base}.schedulingGroup.podGroupName"
            value = pod.scheduling_group
            if not value:
                problems.append(fe.invalid(p, None, "must specify one of: `podGroupName`"))
                continue
            problems.extend(fe.invalid(p, value, m) for m in fe.dns1123_subdomain_errors(value))
    return problems


def as_created(obj: Obj, gates: Gates) -> Obj:
    """A Workload API manifest as the API server of ``gates`` stores it when it is created
    during a run (``dropDisabledPodGroupSpecFields`` and the Workload's templates: the
    fields of disabled gates dropped); any other object as it is."""
    if not is_workload_api(obj):
        return obj
    return _admitted(obj, gates)


def read(
    obj: Obj, gates: Gates, priority_classes: Iterable[Obj] = ()
) -> Workload | PodGroup | CompositePodGroup | None:
    """One Workload or PodGroup as the scheduler's informer of ``gates``' release sees it
    once the API server stored it (the priority admission plugin's ``spec.priority`` from
    ``priority_classes`` where the object does not carry one, fields of disabled gates
    dropped, defaults set), or None: not one of this module's kinds, not served by the
    release, or not valid (:func:`admit` reported it at load time).  A PodGroup keeps its
    :data:`STORED_KEPT` fields: ``obj`` is what the API server holds (an object created
    during a run went through :func:`as_created` first)."""
    if not is_workload_api(obj) or _served_problem(obj, gates, "") is not None:
        return None
    spec = obj.get("spec")
    if (
        obj.get("kind") in ("PodGroup", "CompositePodGroup")
        and isinstance(spec, dict)
        and "priority" not in spec
    ):
        admitted, forbidden = _admit_priority(obj, gates, _PriorityClasses(priority_classes))
        obj = obj if forbidden else admitted  # a class missing now: the priority stays unset
    value, problems = _check(_admitted(obj, gates, STORED_KEPT), "")
    if problems:  # a kept field that could not have been stored: read as the create drops it
        value, problems = _check(_admitted(obj, gates), "")
    if problems:
        return None
    if isinstance(value, PodGroup):
        return _defaulted(value, gates)
    if isinstance(value, CompositePodGroup):
        return _defaulted(value, gates)
    return value if isinstance(value, Workload) else None
