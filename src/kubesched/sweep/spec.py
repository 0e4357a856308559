"""Sweep files: a base, a grid of variants and a list of seeds, validated at the boundary.

Format (``kind: Sweep``, ``apiVersion: kubesched.io/v1alpha1``)::

    spec:
      base:                          # exactly one of:
        scenario: cluster.yaml       #   a simulate scenario (path relative to this file)
        bench: {config: perf.yaml, workload: Case/workload}   # a scheduler_perf workload
        replay: {nodes: nodes.csv, pods: pods.csv, policy: fgd}  # a GPU trace replay
        recording: {directory: rec/, config: ksc.yaml}  # a recording (kubesched record);
                                     #   or recording: rec/ (upstream's default configuration)
      seeds: [1, 2, 3]               # every variant runs once per seed, on the same inputs
      vary:                          # the grid: every combination of these values
        percentageOfNodesToScore: [0, 10, 20, 50, 100]
      variants:                      # or / and: named variants, each a set of paths
      - name: packed
        set: {"profiles[0].pluginConfig[NodeResourcesFit].args.scoringStrategy.type": ...}
      baseline: {percentageOfNodesToScore: 0}   # the row compared with (default: the first)
      allowMixedClasses: false       # variables of several classes at once (see paths.CLASSES)
      tolerance: {fragmentationPercent: 0.5}    # what "worse" means per quality measure

Each (variant, seed) pair is a :class:`Task`: plain data (JSON-ready, picklable), so a
process pool or a Ray cluster can run it anywhere the package is installed.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.errors import InputError, excerpt
from kubesched.api.parse import load_documents
from kubesched.config.versions import parse_version
from kubesched.sweep import paths

API_VERSION = "kubesched.io/v1alpha1"
BASE_KINDS = ("scenario", "bench", "replay", "recording")
SIMULATE, BENCH, REPLAY, RECORDING = BASE_KINDS
SUPPORTED = {
    SIMULATE: {"config", "shards", "apiLatency", "client", "version"},
    BENCH: {"config", "shards", "apiLatency", "client", "version"},
    REPLAY: {"policy"},
    RECORDING: {"config", "version"},
}
"""Which variables each kind of base can vary (``config``: any configuration path)."""


@dataclass(frozen=True, slots=True)
class Variant:
    """One point of the grid: a name and the values it sets, path -> value."""

    name: str
    settings: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Task:
    """One run: a variant of the base with one seed."""

    index: int
    variant: str
    seed: int
    settings: dict[str, Any]
    base: dict[str, Any]
    """``{"kind": scenario|bench|replay, ...}`` with absolute file paths."""


@dataclass(slots=True)
class SweepSpec:
    """A validated sweep."""

    name: str
    base: dict[str, Any]
    seeds: list[int]
    variants: list[Variant]
    baseline: str
    var_class: str
    """The class of the variables (``mixed`` when several are allowed)."""
    tolerance: dict[str, float] = field(default_factory=dict)

    def tasks(self) -> list[Task]:
        """Every (variant, seed) pair, variants in order, seeds in order."""
        pairs = itertools.product(self.variants, self.seeds)
        return [Task(i, v.name, s, v.settings, self.base) for i, (v, s) in enumerate(pairs)]


def load_sweep(path: str) -> SweepSpec:
    """Load and validate a sweep file; :class:`InputError` names the file and field."""
    docs = load_documents(path)
    if len(docs) != 1 or not isinstance(docs[0], dict) or docs[0].get("kind") != "Sweep":
        raise InputError([("kind", "expected one document of kind Sweep")], file=path)
    try:
        return build_sweep(docs[0], os.path.dirname(os.path.abspath(path)))
    except InputError as e:
        raise e.with_file(path) from None


def _abs(base_dir: str, p: Any, where: str) -> str:
    if not isinstance(p, str) or not p:
        raise InputError([(where, "must be a file path")])
    full = p if os.path.isabs(p) else os.path.join(base_dir, p)
    if not os.path.exists(full):
        raise InputError([(where, f"no such file: {full}")])
    return full


def _base(raw: Any, base_dir: str) -> dict[str, Any]:
    p = "spec.base"
    if not isinstance(raw, dict):
        raise InputError([(p, "required: a map with one of scenario, bench, replay")])
    kinds = [k for k in BASE_KINDS if k in raw]
    extra = sorted(set(raw) - set(BASE_KINDS))
    if len(kinds) != 1 or extra:
        raise InputError([(p, f"exactly one of {', '.join(BASE_KINDS)} (got {sorted(raw)})")])
    kind = kinds[0]
    body = raw[kind]
    if kind == SIMULATE:
        return {"kind": SIMULATE, "scenario": _abs(base_dir, body, f"{p}.scenario")}
    if kind == RECORDING:
        return _recording(body, base_dir, f"{p}.recording")
    if not isinstance(body, dict):
        raise InputError([(f"{p}.{kind}", "must be a map")])
    if kind == BENCH:
        out = {"kind": BENCH, "config": _abs(base_dir, body.get("config"), f"{p}.bench.config")}
        wl = body.get("workload")
        if not isinstance(wl, str) or not wl:
            raise InputError([(f"{p}.bench.workload", "required: NAME or CASE/NAME")])
        out["workload"] = wl
        out["binding"] = str(body.get("binding", "api"))
        return out
    out = {
        "kind": REPLAY,
        "nodes": _abs(base_dir, body.get("nodes"), f"{p}.replay.nodes"),
        "pods": _abs(base_dir, body.get("pods"), f"{p}.replay.pods"),
        "policy": str(body.get("policy", "kubesched")),
    }
    return out


def _recording(body: Any, base_dir: str, p: str) -> dict[str, Any]:
    """``recording: DIR`` or ``recording: {directory: DIR, config: KSC}``."""
    if isinstance(body, str):
        body = {"directory": body}
    if not isinstance(body, dict):
        raise InputError([(p, "a recording directory, or a map with directory and config")])
    unknown = sorted(set(body) - {"directory", "config"})
    if unknown:
        raise InputError([(f"{p}.{unknown[0]}", "unknown field (want directory, config)")])
    out: dict[str, Any] = {
        "kind": RECORDING,
        "directory": _abs(base_dir, body.get("directory"), f"{p}.directory"),
        "config": None,
    }
    if body.get("config") is not None:
        out["config"] = _abs(base_dir, body["config"], f"{p}.config")
    return out


def _variants(spec: dict[str, Any]) -> list[Variant]:
    out: list[Variant] = []
    vary = spec.get("vary") or {}
    if not isinstance(vary, dict):
        raise InputError([("spec.vary", "must be a map of path -> list of values")])
    for key, values in vary.items():
        if not isinstance(values, list) or not values:
            raise InputError([(f"spec.vary.{key}", "must be a non-empty list of values")])
    if vary:
        keys = list(vary)
        for combo in itertools.product(*(vary[k] for k in keys)):
            settings = dict(zip(keys, combo, strict=True))
            out.append(Variant(_name(settings), settings))
    listed = spec.get("variants") or []
    if not isinstance(listed, list):
        raise InputError([("spec.variants", "must be a list of {name, set: {path: value}}")])
    for i, v in enumerate(listed):
        where = f"spec.variants[{i}]"
        if not isinstance(v, dict) or not isinstance(v.get("set", {}), dict):
            raise InputError([(where, "must be a map with name and set: {path: value}")])
        settings = dict(v.get("set") or {})
        out.append(Variant(str(v.get("name") or _name(settings)), settings))
    if not out:
        raise InputError([("spec.vary", "a sweep needs vary or variants")])
    names = [v.name for v in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError([("spec.variants", f"variant names must differ: {dup}")])
    return out


def _name(settings: dict[str, Any]) -> str:
    if not settings:
        return "base"
    return ",".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in settings.items())


def build_sweep(doc: dict[str, Any], base_dir: str) -> SweepSpec:
    """Validate a Sweep document (paths relative to ``base_dir``)."""
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        raise InputError([("spec", "required field is missing")])
    base = _base(spec.get("base"), base_dir)
    seeds = spec.get("seeds", [0])
    if not isinstance(seeds, list) or not seeds or not all(type(s) is int for s in seeds):
        raise InputError([("spec.seeds", "must be a non-empty list of integers")])
    variants = _variants(spec)
    problems: list[tuple[str, str]] = []
    classes: set[str] = set()
    for v in variants:
        for key in v.settings:
            try:
                cls = paths.classify(key)
            except ValueError as e:
                problems.append((f"spec.vary.{key}", str(e)))
                continue
            classes.add(cls)
            family = "config" if paths.is_config(key) else cls
            if family not in SUPPORTED[base["kind"]]:
                problems.append((f"spec.vary.{key}", f"a {base['kind']} base cannot vary {cls}"))
            elif cls == "version":
                try:
                    parse_version(v.settings[key], f"spec.vary.{key}")
                except InputError as err:
                    problems += err.problems
    mixed = spec.get("allowMixedClasses", False)
    if len(classes) > 1 and mixed is not True:
        detail = ", ".join(sorted(classes))
        problems.append(
            ("spec.vary", f"varies several classes of variable ({detail}): change one class "
             "at a time, or set allowMixedClasses: true")
        )  # fmt: skip
    if problems:
        raise InputError(problems)
    baseline = _baseline(spec.get("baseline"), variants)
    tol = spec.get("tolerance") or {}
    if not isinstance(tol, dict) or not all(isinstance(x, int | float) for x in tol.values()):
        raise InputError([("spec.tolerance", "must be a map of measure -> number")])
    meta = doc.get("metadata") or {}
    if not isinstance(meta, dict):
        raise InputError([("metadata", f"must be a map, got {excerpt(meta)}")])
    return SweepSpec(
        name=str(meta.get("name", "sweep")),
        base=base,
        seeds=[int(s) for s in seeds],
        variants=variants,
        baseline=baseline,
        var_class=classes.pop() if len(classes) == 1 else "mixed",
        tolerance={str(k): float(x) for k, x in tol.items()},
    )


def _baseline(raw: Any, variants: list[Variant]) -> str:
    if raw is None:
        return variants[0].name
    if isinstance(raw, str):
        if raw not in {v.name for v in variants}:
            raise InputError([("spec.baseline", f"no variant named {raw!r}")])
        return raw
    if isinstance(raw, dict):
        for v in variants:
            if all(v.settings.get(k) == x for k, x in raw.items()):
                return v.name
    raise InputError([("spec.baseline", f"matches no variant: {raw!r}")])
