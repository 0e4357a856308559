"""scheduler_perf configuration files: test cases, workloads and ops, validated at load.

The format is upstream's (``test/integration/scheduler_perf/scheduler_perf.go`` and
``operations.go``): a YAML list of test cases, each with a ``workloadTemplate`` (ops run in
order) and ``workloads`` (params, labels, threshold).  Decoding is strict as upstream's
``UnmarshalStrict``: an unknown field, a wrong type or a repeated key is an error, and field
names match case-insensitively (Go's ``encoding/json``).  Every problem is reported with a
path naming the test case, the op index and the field, e.g.
``SchedulingBasic.workloadTemplate[2].countParam: createPods: must start with "$"``.

The per-op checks are upstream's ``isValid(allowParameterization=true)``; the checks that need
the workload's params run in :mod:`kubesched.bench.params`.  Paths in the file are resolved
against the config file's folder and must exist.  Upstream ops that kubesched does not model
(``createResourceClaims``, profiling) are refused by name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.errors import InputError, excerpt
from kubesched.bench import schema
from kubesched.config.load import read_file

MAX_PROBLEMS = 50


@dataclass(frozen=True, slots=True)
class MetricSelector:
    """Which data item and bucket a threshold applies to (upstream ``thresholdMetricSelector``)."""

    name: str = "SchedulingThroughput"
    labels: Mapping[str, str] = field(default_factory=dict)
    data_bucket: str = "Average"
    expect_lower: bool = False


@dataclass(frozen=True, slots=True)
class Op:
    """One op of a workload template, fields validated but ``$params`` not yet resolved."""

    opcode: str
    index: int
    fields: Mapping[str, Any]
    """Canonical field name to value; paths are absolute, durations in seconds."""
    path: str
    """``<case>.workloadTemplate[<index>]``, the prefix of this op's error paths."""


@dataclass(frozen=True, slots=True)
class Workload:
    """A workload: params for the template, labels, and the throughput threshold."""

    name: str
    params: Mapping[str, Any]
    labels: tuple[str, ...] = ()
    threshold: float = 0.0
    """0 disables the check (upstream)."""
    selector: MetricSelector = MetricSelector()
    feature_gates: Mapping[str, bool] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TestCase:
    """A test case: its ops, its workloads and what they share."""

    name: str
    ops: tuple[Op, ...]
    workloads: tuple[Workload, ...]
    labels: tuple[str, ...] = ()
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    scheduler_config_path: str | None = None
    default_pod_template_path: str | None = None
    base_dir: str = "."

    __test__ = False  # not a pytest class


def load_test_cases(path: str) -> list[TestCase]:
    """Read and validate a scheduler_perf config file; :class:`InputError` with every problem."""
    raw = read_file(path)
    base_dir = os.path.dirname(os.path.abspath(path))
    try:
        return parse_test_cases(raw, base_dir)
    except InputError as err:
        raise err.with_file(path) from None


def parse_test_cases(raw: Any, base_dir: str) -> list[TestCase]:
    """Validate decoded YAML (a list of test cases); paths resolve against ``base_dir``."""
    chk = schema.Checker(base_dir)
    if not isinstance(raw, list) or not raw:
        raise InputError([("", "must be a non-empty list of test cases")])
    cases: list[TestCase] = []
    seen: set[str] = set()
    for i, obj in enumerate(raw):
        name = obj.get("name") if isinstance(obj, dict) else None
        cpath = name if isinstance(name, str) and name else f"[{i}]"
        case = _test_case(chk, obj, cpath)
        if case is None:
            continue
        if case.name in seen:
            chk.add(f"{cpath}.name", "test case name is not unique")
        seen.add(case.name)
        cases.append(case)
    if chk.problems:
        raise InputError(chk.problems[:MAX_PROBLEMS])
    return cases


def _test_case(chk: schema.Checker, obj: Any, cpath: str) -> TestCase | None:
    f = chk.fields(obj, cpath, schema.CASE_FIELDS, "test case")
    if not f:
        return None
    if not f.get("name"):
        chk.add(f"{cpath}.name", "test case: required field is missing")
    ops = _ops(chk, f.get("workloadTemplate"), cpath)
    workloads = _workloads(chk, f.get("workloads"), cpath, f.get("defaultThresholdMetricSelector"))
    if ops and not any(_collects_metrics(op) for op in ops):
        chk.add(f"{cpath}.workloadTemplate", "no op in the workload template collects metrics")
    return TestCase(
        name=str(f.get("name", "")),
        ops=tuple(ops),
        workloads=tuple(workloads),
        labels=tuple(f.get("labels", ())),
        feature_gates=_gates(chk, f.get("featureGates", {}), f"{cpath}.featureGates"),
        scheduler_config_path=f.get("schedulerConfigPath"),
        default_pod_template_path=f.get("defaultPodTemplatePath"),
        base_dir=chk.base_dir,
    )


def _collects_metrics(op: Op) -> bool:
    if op.opcode == "createPodSets":
        return bool(op.fields["createPodsOp"].get("collectMetrics"))
    return op.opcode == "stopCollectingMetrics" or (
        op.opcode == "createPods" and bool(op.fields.get("collectMetrics"))
    )


def pod_set_op(op: Op) -> Op:
    """The ``createPods`` op a ``createPodSets`` op repeats (its fields decoded at load)."""
    return Op("createPods", op.index, op.fields["createPodsOp"], f"{op.path}.createPodsOp")


def _gates(chk: schema.Checker, gates: Mapping[str, Any], path: str) -> dict[str, bool]:
    out = {}
    for k, v in gates.items():
        if not isinstance(v, bool):
            chk.add(f"{path}.{k}", f"feature gate must be true or false, got {v!r}")
        else:
            out[str(k)] = v
    return out


def _ops(chk: schema.Checker, raw: Any, cpath: str) -> list[Op]:
    if not isinstance(raw, list) or not raw:
        chk.add(f"{cpath}.workloadTemplate", "test case: no ops defined")
        return []
    ops = []
    for k, obj in enumerate(raw):
        opath = f"{cpath}.workloadTemplate[{k}]"
        opcode = obj.get("opcode") if isinstance(obj, dict) else None
        if opcode is not None and not isinstance(opcode, str):
            chk.add(f"{opath}.opcode", f"must be a string, got {excerpt(opcode)}")
            continue
        if opcode in schema.UPSTREAM_ONLY_OPS:
            chk.add(f"{opath}.opcode", f"op {opcode!r} {schema.UNSUPPORTED}")
            continue
        if opcode not in schema.OPS:
            chk.add(
                f"{opath}.opcode", f"unknown opcode {opcode!r} (known: {', '.join(schema.OPS)})"
            )
            continue
        fields = chk.fields(obj, opath, schema.OPS[opcode], str(opcode), skip=("opcode",))
        op = Op(str(opcode), k, fields, opath)
        if opcode == "createPodSets":  # upstream: a createPodsOp, checked as one
            fields["createPodsOp"] = chk.fields(
                fields.get("createPodsOp", {}),
                f"{opath}.createPodsOp",
                schema.OPS["createPods"],
                "createPods",
                skip=("opcode",),
            )
            for fname, message in op_problems(pod_set_op(op)):
                path = f"{opath}.createPodsOp" + (f".{fname}" if fname else "")
                chk.add(path, f"createPods: {message}")
        for fname, message in op_problems(op):
            chk.add(f"{opath}.{fname}" if fname else opath, f"{opcode}: {message}")
        ops.append(op)
    return ops


def op_problems(op: Op, *, resolved: bool = False) -> list[tuple[str, str]]:
    """Upstream ``isValid(allowParameterization=not resolved)``: (field, message) pairs."""
    f, out = op.fields, []

    def count(name: str) -> None:
        if (resolved or not f.get(name + "Param")) and f.get(name, 0) < 0:
            out.append((name, f"must be >= 0, got {f[name]}"))

    if op.opcode in ("createNodes", "createNamespaces", "createAny", "createPodSets"):
        count("count")
    if op.opcode in ("createAny", "updateAny", "createPodGroups") and not f.get("templatePath"):
        out.append(("templatePath", "must be set"))
    if op.opcode == "createPodGroups":  # upstream createPodGroups.isValid
        count("count")
        if not f.get("namespace"):
            out.append(("namespace", "must be set"))
        if resolved and f.get("count", 0) < 1:
            out.append(("count", f"must be greater than 0, got {f.get('count', 0)}"))
    if op.opcode == "updateAny" and f.get("updatePerSecond", 0) < 0:
        out.append(("updatePerSecond", f"invalid {f['updatePerSecond']}; should be non-negative"))
    if op.opcode == "createPods":
        count("count")
        count("signatureBatchSize")
        if f.get("collectMetrics") and f.get("skipWaitToCompletion"):
            out.append(("", "collectMetrics and skipWaitToCompletion cannot be true at once"))
        if f.get("skipWaitToCompletion") and f.get("steadyState"):
            out.append(("", "skipWaitToCompletion and steadyState cannot be true at once"))
        if f.get("persistentVolumeClaimTemplatePath") and not f.get("persistentVolumeTemplatePath"):
            out.append(("persistentVolumeTemplatePath", "must be set with a claim template"))
        if resolved and f.get("steadyState") and f.get("duration", 0) <= 0:
            out.append(("duration", "when creating pods in a steady state, it must be > 0"))
    if op.opcode == "deletePods" and f.get("deletePodsPerSecond", 0) < 0:
        out.append(("deletePodsPerSecond", "must be >= 0"))
    if op.opcode == "churn":
        mode = f.get("mode", "")
        if mode not in ("create", "recreate"):
            out.append(("mode", f'must be "create" or "recreate", got {mode!r}'))
        if f.get("number", 0) < 0:
            out.append(("number", "cannot be negative"))
        if mode == "recreate" and not f.get("number"):
            out.append(("number", "cannot be 0 when mode is recreate"))
        if not f.get("templatePaths"):
            out.append(("templatePaths", "at least one template file is needed"))
    if op.opcode == "barrier" and f.get("stageRequirement", "") not in (
        "",
        "Scheduled",
        "Attempted",
    ):
        out.append(("stageRequirement", f"invalid stage {f['stageRequirement']!r}"))
    if op.opcode == "createResourceDriver":
        count("maxClaimsPerNode")
        for name in ("driverName", "nodes"):
            if not f.get(name):
                out.append((name, "must be set"))
    if op.opcode == "startCollectingMetrics" and not f.get("namespaces"):
        out.append(("namespaces", "cannot be empty"))
    return out


def _selector(raw: Mapping[str, Any] | None) -> MetricSelector:
    if not raw:
        return MetricSelector()
    return MetricSelector(
        name=raw.get("name", "SchedulingThroughput"),
        labels=raw.get("labels", {}),
        data_bucket=raw.get("dataBucket", ""),
        expect_lower=raw.get("expectLower", False),
    )


def _workloads(
    chk: schema.Checker, raw: Any, cpath: str, default_selector: Mapping[str, Any] | None
) -> list[Workload]:
    if not isinstance(raw, list) or not raw:
        chk.add(f"{cpath}.workloads", "test case: no workloads defined")
        return []
    out: list[Workload] = []
    for j, obj in enumerate(raw):
        wpath = f"{cpath}.workloads[{j}]"
        f = chk.fields(obj, wpath, schema.WORKLOAD_FIELDS, "workload")
        name = f.get("name")
        if not name:
            chk.add(f"{wpath}.name", "workload: required field is missing")
            continue
        if any(w.name == name for w in out):
            chk.add(f"{wpath}.name", f"workload name {name} is not unique")
        threshold = f.get("threshold", 0)
        if isinstance(threshold, dict):  # upstream: topic name -> value; no topics here
            threshold = threshold.get("", 0)
        if isinstance(threshold, bool) or not isinstance(threshold, int | float):
            chk.add(f"{wpath}.threshold", f"workload: must be a number, got {threshold!r}")
            threshold = 0
        elif threshold < 0:
            chk.add(f"{wpath}.threshold", f"invalid threshold {threshold}; should be >= 0")
        selector = _selector(f.get("thresholdMetricSelector") or default_selector)
        if not selector.data_bucket:
            chk.add(f"{wpath}.thresholdMetricSelector.dataBucket", "must be set")
        out.append(
            Workload(
                name=str(name),
                params=dict(f.get("params", {})),
                labels=tuple(f.get("labels", ())),
                threshold=float(threshold),
                selector=selector,
                feature_gates=_gates(chk, f.get("featureGates", {}), f"{wpath}.featureGates"),
            )
        )
    return out
