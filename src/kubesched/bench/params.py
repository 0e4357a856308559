"""A workload's ops with its ``$params`` resolved, and which workloads a label filter selects.

Upstream (``patchParams`` in ``operations.go``): ``countParam: $initNodes`` takes
``workload.params.initNodes`` (a number, truncated to int), ``durationParam`` a duration
string, ``steadyStateParam`` a bool; ``templateParams`` values that start with ``$`` are
replaced by the param.  A param that is undefined or of the wrong type fails the workload,
and so does a param that no op uses ("defined on workload W, but unused").  kubesched
resolves every selected workload before running any, so such a config fails at once with
``InputError`` naming ``<case>/<workload>``, the op index and the field.  (The
``nodedeclaredfeatures`` suite's ``numNodeDeclaredFeatures`` is read by that suite's own hooks,
:mod:`kubesched.bench.declaredfeatures`, when the workload sets its gate.)

``createPodSets`` is unrolled here as upstream's ``unrollWorkloadTemplate`` does: ``count``
copies of its ``createPodsOp`` in namespaces ``<namespacePrefix>-<i>``, and every op is
numbered by its place in the unrolled list (so a later ``createPods`` without a namespace
writes to ``namespace-<unrolled index>``).

The label filter is upstream's ``enabled()``: a workload's labels are its test case's plus
its own; a plain (or ``+``) label must be present, a ``-label`` must be absent.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from kubesched.api.errors import InputError
from kubesched.bench import config as c
from kubesched.bench import declaredfeatures, schema
from kubesched.bench.config import Op, TestCase, Workload
from kubesched.bench.dra import AllocResourceClaims, CreateResourceDriver
from kubesched.bench.update import UpdateAny


@dataclass(frozen=True, slots=True)
class CreateNodes:
    """``createNodes``: ``count`` Nodes from ``template`` (None: upstream's base node)."""

    index: int
    count: int
    template: str | None = None
    label_key: str = ""
    label_values: tuple[str, ...] = ()
    unique_label_key: str = ""
    template_params: Mapping[str, Any] = field(default_factory=dict)
    allocatable: NodeAllocatable | None = None


@dataclass(frozen=True, slots=True)
class NodeAllocatable:
    """``nodeAllocatableStrategy`` (upstream ``NodeAllocatableStrategy``): ``allocatable``
    is added to each Node's ``status.allocatable``; each Node gets a CSINode listing
    ``csi`` (driver name to its ``allocatable``, e.g. ``{"count": 39}``) with the
    ``storage.alpha.kubernetes.io/migrated-plugins`` annotation of ``migrated``."""

    allocatable: Mapping[str, str] = field(default_factory=dict)
    csi: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    migrated: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CreateNamespaces:
    """``createNamespaces``: ``<prefix>-0`` ... ``<prefix>-<count-1>``."""

    index: int
    prefix: str
    count: int
    template: str | None = None


@dataclass(frozen=True, slots=True)
class CreatePods:
    """``createPods`` in ``namespace`` (``namespace-<index>`` unless the op names one)."""

    index: int
    count: int
    namespace: str
    template: str | None
    collect_metrics: bool = False
    skip_wait: bool = False
    steady_state: bool = False
    duration: float = 0.0
    signature_batch_size: int = 1
    template_params: Mapping[str, Any] = field(default_factory=dict)
    pv_template: str | None = None
    """``persistentVolumeTemplatePath``: with ``pvc_template``, each Pod gets its own bound
    claim and volume (upstream ``CreatePodWithPersistentVolume``)."""
    pvc_template: str | None = None


@dataclass(frozen=True, slots=True)
class DeletePods:
    """``deletePods`` in ``namespace`` (matching ``label_selector``), ``per_second`` (0: all)."""

    index: int
    namespace: str
    label_selector: Mapping[str, str] = field(default_factory=dict)
    per_second: int = 0
    skip_wait: bool = False


@dataclass(frozen=True, slots=True)
class Churn:
    """``churn``: every ``interval`` seconds, one object per template (create or recreate)."""

    index: int
    mode: str
    number: int
    interval: float
    namespace: str
    templates: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Barrier:
    """``barrier``: wait until the Pods of ``namespaces`` (all known if empty) reach ``stage``."""

    index: int
    namespaces: tuple[str, ...] = ()
    label_selector: Mapping[str, str] = field(default_factory=dict)
    stage: str = "Scheduled"


@dataclass(frozen=True, slots=True)
class Sleep:
    """``sleep`` for ``duration`` seconds (the scheduler keeps running)."""

    index: int
    duration: float


@dataclass(frozen=True, slots=True)
class StartCollecting:
    """``startCollectingMetrics`` for Pods of ``namespaces`` matching ``label_selector``."""

    index: int
    name: str
    namespaces: tuple[str, ...]
    label_selector: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StopCollecting:
    """``stopCollectingMetrics``."""

    index: int


@dataclass(frozen=True, slots=True)
class CreateAny:
    """``createAny``: ``count`` objects from ``template`` in ``namespace`` ("" = cluster)."""

    index: int
    template: str
    namespace: str = ""
    count: int = 1
    template_params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CreatePodGroups:
    """``createPodGroups``: ``count`` Workload API PodGroups from ``template`` in
    ``namespace`` (upstream ``runCreatePodGroupsOp``)."""

    index: int
    template: str
    namespace: str
    count: int
    template_params: Mapping[str, Any] = field(default_factory=dict)


Step = (
    CreateNodes
    | CreateNamespaces
    | CreatePods
    | DeletePods
    | Churn
    | Barrier
    | Sleep
    | StartCollecting
    | StopCollecting
    | CreateAny
    | CreatePodGroups
    | CreateResourceDriver
    | AllocResourceClaims
    | UpdateAny
)


class ParamError(Exception):
    """A ``$param`` that is undefined or of the wrong type; ``field`` names the op field."""

    field = ""


class Params:
    """A workload's params; remembers which ones were used (upstream ``isUsed``)."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = dict(values)
        self.used: set[str] = set()

    def _get(self, ref: str) -> Any:
        key = ref[1:]
        self.used.add(key)
        if key not in self.values:
            raise ParamError(f"parameter {key} is undefined")
        return self.values[key]

    def get_int(self, ref: str) -> int:
        """A number param, truncated to int (upstream reads JSON numbers as float64)."""
        value = self._get(ref)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ParamError(f"parameter {ref[1:]} has the wrong type {type(value).__name__}")
        return int(value)

    def get_str(self, ref: str) -> str:
        """A string param."""
        value = self._get(ref)
        if not isinstance(value, str):
            raise ParamError(f"parameter {ref[1:]} has the wrong type {type(value).__name__}")
        return value

    def get_bool(self, ref: str) -> bool:
        """A bool param."""
        value = self._get(ref)
        if not isinstance(value, bool):
            raise ParamError(f"parameter {ref[1:]} has the wrong type {type(value).__name__}")
        return value

    def template_params(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """``templateParams`` with ``$name`` values replaced by the param (upstream
        ``resolveTemplateParams``): ``$name|default`` falls back to ``default``, decoded as
        YAML (``$n|2`` is the int 2, ``$s|`` null), when the workload has no param ``name``."""
        out = dict(raw)
        for k, v in raw.items():
            if isinstance(v, str) and v.startswith("$"):
                name, default = v[1:], None
                sep = name.find("|")
                if sep > 0:
                    name, default = name[:sep], name[sep + 1 :]
                if name in self.values:
                    self.used.add(name)
                    out[k] = self.values[name]
                elif default is not None:
                    try:
                        out[k] = yaml.safe_load(default)
                    except yaml.YAMLError as err:
                        raise ParamError(
                            f'decoding parameter "{name}" default {default!r} as YAML: {err}'
                        ) from None
                else:
                    raise ParamError(f'parameter "{name}" not found')
        return out

    def unused(self) -> list[str]:
        """Params no op asked for, sorted."""
        return sorted(set(self.values) - self.used)


def _resolve_fields(op: Op, params: Params) -> dict[str, Any]:
    """The op's fields with every ``*Param`` folded into its field; a :class:`ParamError`
    names the field (``countParam``) in its ``field`` attribute."""
    f = dict(op.fields)
    getters = {
        "countParam": ("count", params.get_int),
        "signatureBatchSizeParam": ("signatureBatchSize", params.get_int),
        "steadyStateParam": ("steadyState", params.get_bool),
        "countMultiplierParam": ("", params.get_int),
        "durationParam": ("duration", params.get_str),
        "maxClaimsPerNodeParam": ("maxClaimsPerNode", params.get_int),
    }
    for ref_field, (target, getter) in getters.items():
        ref = f.pop(ref_field, "")
        if not ref:
            continue
        try:
            value: Any = getter(ref)
            if ref_field == "durationParam":
                try:
                    value = schema.parse_duration(value)
                except ValueError as err:
                    raise ParamError(f"parsing duration parameter {ref}: {err}") from None
        except ParamError as err:
            err.field = ref_field
            raise
        if ref_field == "countMultiplierParam":
            f["count"] = f.get("count", 0) * value
        else:
            f[target] = value
    if "templateParams" in f:
        try:
            f["templateParams"] = params.template_params(f["templateParams"])
        except ParamError as err:
            err.field = "templateParams"
            raise
    return f


def _allocatable(raw: Mapping[str, Any] | None) -> NodeAllocatable | None:
    if raw is None:
        return None
    csi = {str(k): dict(v or {}) for k, v in (raw.get("csiNodeAllocatable") or {}).items()}
    return NodeAllocatable(
        dict(raw.get("nodeAllocatable") or {}), csi, tuple(raw.get("migratedPlugins") or ())
    )


def _step(op: Op, f: Mapping[str, Any], case: TestCase, i: int) -> Step:
    """The step of ``op`` with resolved fields ``f``, at index ``i`` of the unrolled ops."""
    tp = f.get("templateParams", {})
    ns = f.get("namespace")
    if op.opcode == "createNodes":
        label = f.get("labelNodePrepareStrategy") or {}
        unique = f.get("uniqueNodeLabelStrategy") or {}
        return CreateNodes(
            i,
            f.get("count", 0),
            f.get("nodeTemplatePath"),
            label.get("labelKey", ""),
            tuple(label.get("labelValues", ())),
            unique.get("labelKey", ""),
            tp,
            _allocatable(f.get("nodeAllocatableStrategy")),
        )
    if op.opcode == "createNamespaces":
        return CreateNamespaces(
            i, f.get("prefix", ""), f.get("count", 0), f.get("namespaceTemplatePath")
        )
    if op.opcode == "createPods":
        return CreatePods(
            i,
            f.get("count", 0),
            ns if ns is not None else f"namespace-{i}",
            f.get("podTemplatePath") or case.default_pod_template_path,
            f.get("collectMetrics", False),
            f.get("skipWaitToCompletion", False),
            f.get("steadyState", False),
            f.get("duration", 0.0),
            f.get("signatureBatchSize") or 1,
            tp,
            f.get("persistentVolumeTemplatePath"),
            f.get("persistentVolumeClaimTemplatePath"),
        )
    if op.opcode == "deletePods":
        return DeletePods(
            i,
            ns or "",
            f.get("labelSelector", {}),
            f.get("deletePodsPerSecond", 0),
            f.get("skipWaitToCompletion", False),
        )
    if op.opcode == "churn":
        return Churn(
            i,
            f["mode"],
            f.get("number", 0),
            (f.get("intervalMilliseconds") or 500) / 1000.0,
            ns if ns is not None else f"namespace-{i}",
            tuple(f["templatePaths"]),
        )
    if op.opcode == "barrier":
        return Barrier(
            i,
            tuple(f.get("namespaces", ())),
            f.get("labelSelector", {}),
            f.get("stageRequirement") or "Scheduled",
        )
    if op.opcode == "sleep":
        return Sleep(i, f.get("duration", 0.0))
    if op.opcode == "startCollectingMetrics":
        return StartCollecting(
            i, f.get("name", ""), tuple(f.get("namespaces", ())), f.get("labelSelector", {})
        )
    if op.opcode == "stopCollectingMetrics":
        return StopCollecting(i)
    if op.opcode == "createResourceDriver":
        return CreateResourceDriver(i, f["driverName"], f["nodes"], f.get("maxClaimsPerNode", 0))
    if op.opcode == "allocResourceClaims":
        return AllocResourceClaims(i, ns or "")
    if op.opcode == "updateAny":
        count = f.get("count")
        return UpdateAny(
            i,
            f["templatePath"],
            ns or "",
            1 if count is None else count,
            f.get("updatePerSecond", 0),
            tuple(f.get("subresources", ())),
        )
    if op.opcode == "createPodGroups":
        return CreatePodGroups(i, f["templatePath"], ns or "", f.get("count", 0), tp)
    return CreateAny(i, f["templatePath"], ns or "", f.get("count", 1), tp)


def resolve(case: TestCase, workload: Workload) -> list[Step]:
    """The workload's steps; :class:`InputError` naming ``<case>/<workload>``, op and field."""
    params = Params(workload.params)
    problems: list[tuple[str, str]] = []
    steps: list[Step] = []
    where = f"{case.name}/{workload.name}"
    for top in case.ops:
        try:
            top_fields = _resolve_fields(top, params)
        except ParamError as err:
            problems.append((f"{where}: workloadTemplate[{top.index}].{err.field}", str(err)))
            continue
        unrolled: list[tuple[Op, dict[str, Any]]] = [(top, top_fields)]
        if top.opcode == "createPodSets":  # upstream unrollWorkloadTemplate
            prefix, inner = top_fields.get("namespacePrefix", ""), c.pod_set_op(top)
            unrolled = []
            for n in range(max(top_fields.get("count", 0), 0)):
                try:
                    fields = _resolve_fields(inner, params)
                except ParamError as err:
                    field = f"createPodsOp.{err.field}"
                    problems.append((f"{where}: workloadTemplate[{top.index}].{field}", str(err)))
                    break
                unrolled.append((inner, {**fields, "namespace": f"{prefix}-{n}"}))
        for op, fields in unrolled:
            resolved = Op(op.opcode, op.index, fields, op.path)
            bad = c.op_problems(resolved, resolved=True)
            for fname, message in bad:
                path = f"{where}: workloadTemplate[{top.index}]" + (f".{fname}" if fname else "")
                problems.append((path, f"{op.opcode}: {message}"))
            if not bad:  # an unrolled op's index counts the ops before it, unrolled
                steps.append(_step(op, fields, case, len(steps)))
    if declaredfeatures.hooked(workload):  # the suite's own Go hooks read it
        params.used.add(declaredfeatures.PARAM)
    unused = params.unused()
    if unused:
        problems.append(
            (
                f"{where}.params",
                f"the parameters {unused} are defined on workload {workload.name}, but unused",
            )
        )
    if problems:
        raise InputError(problems)
    return steps


def enabled(selectors: Iterable[str], labels: Collection[str]) -> bool:
    """Upstream ``enabled``: ``L`` / ``+L`` must be in ``labels``, ``-L`` must not."""
    for sel in selectors:
        if not sel:
            continue
        if sel[0] == "-":
            if sel[1:] in labels:
                return False
        elif (sel[1:] if sel[0] == "+" else sel) not in labels:
            return False
    return True


def split_filter(values: Sequence[str]) -> list[str]:
    """``["performance,-fast", "short"]`` to ``["performance", "-fast", "short"]``."""
    return [s.strip() for v in values for s in v.split(",") if s.strip()]


def select(
    cases: Sequence[TestCase],
    *,
    case: str | None = None,
    workload: str | None = None,
    labels: Sequence[str] = (),
) -> list[tuple[TestCase, Workload]]:
    """Workloads picked by test case name, workload name (or ``Case/Workload``) and labels."""
    selectors = split_filter(labels)
    out = []
    for tc in cases:
        if case is not None and tc.name != case:
            continue
        for w in tc.workloads:
            if workload is not None and workload not in (w.name, f"{tc.name}/{w.name}"):
                continue
            if enabled(selectors, (*tc.labels, *w.labels)):
                out.append((tc, w))
    return out


def nothing_selected(
    cases: Sequence[TestCase],
    *,
    case: str | None = None,
    workload: str | None = None,
    labels: Sequence[str] = (),
) -> InputError:
    """The usage error (exit 2) for filters that :func:`select` nothing: the filters, and every
    test case with its workloads and their labels."""
    selectors = split_filter(labels)
    given = [
        *([f"--case {case}"] if case is not None else []),
        *([f"--workload {workload}"] if workload is not None else []),
        *([f"--label {','.join(selectors)}"] if selectors else []),
    ]
    problems = [("", f"no workload matches the filters {' '.join(given)}; the config has:")]
    for tc in cases:
        names = ", ".join(
            w.name + (f" [{','.join((*tc.labels, *w.labels))}]" if tc.labels or w.labels else "")
            for w in tc.workloads
        )
        problems.append((tc.name, names or "no workloads"))
    return InputError(problems)
