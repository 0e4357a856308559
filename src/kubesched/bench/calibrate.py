"""``kubesched calibrate``: measure upstream's scheduler on the calibration grid
(:mod:`kubesched.bench.calibgrid`) with ``kube-oracle bench``, and with ``binding`` through a
real API server (:mod:`kubesched.bench.calibbind`), and fit the cost model
(:mod:`kubesched.sim.costmodel`) into a calibration file.

What a point measures, per ``result`` (``scheduled``; for preemption also ``unschedulable``,
the attempt that ran the dry runs, its ``scheduled`` one the nominated node's): the median
(or tenth percentile, ``quantile``) of the exact per-attempt times of
``SchedulingAttemptDurationByResult`` (the scheduling cycle alone; upstream's histogram runs
to the end of the binding cycle), and the nodes upstream evaluated and found feasible, which
the fit uses as ``F`` and ``S``. Points marked held out are measured and predicted but not
fitted: their error is the validation. With ``repeat`` above 1 every point runs that many
times (the noisy mixes twice as many), rounds apart, and keeps the fastest: on a shared
machine the slower runs measure the neighbours. Every run's JSON can be kept (``keep``) and
fitted again (``refit``).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kubesched import __version__
from kubesched.api.errors import InputError
from kubesched.bench import calibbind
from kubesched.bench.calibgrid import Point, grid, write_point
from kubesched.sim import costmodel
from kubesched.sim.costmodel import (
    API_VERSION,
    BINDING_DEFAULTS,
    KIND,
    SERIAL,
    Attempt,
    dump_calibration,
    features,
    load_calibration,
)

BUILD_HINT = "build it with: bash oracle/build.sh (needs Go), or pass --oracle PATH"
BURSTS = {"full": 5000, "small": 500}
"""Nodes, and Pods per backlog and burst, through the real API server, by grid."""
NOISY_MIXES = ("spread",)
NOISY = 2
"""Mixes whose runs vary most (PodTopologySpread: how many nodes the skew rejects depends
on the placements so far) run ``NOISY`` times the rounds."""
REGENERATE = (
    "kubesched calibrate --grid full --binding --repeat 3 "
    "-o src/kubesched/sim/calibration/default.yaml"
)


def find_oracle(path: str | None) -> Path:
    """``--oracle``, else ``$KUBE_ORACLE``, else ``oracle/bin/kube-oracle`` here."""
    candidate = Path(path or os.environ.get("KUBE_ORACLE") or "oracle/bin/kube-oracle")
    if not candidate.is_file() or not os.access(candidate, os.X_OK):
        raise InputError(f"{candidate}: kube-oracle not found; {BUILD_HINT}")
    return candidate


@dataclass(frozen=True, slots=True)
class Measured:
    """One result of one point in one run: the attempt time's quantile and the mean work."""

    seconds: float
    filtered: float
    """Nodes upstream's search evaluated (EvaluatedNodes, mean)."""
    scored: float
    """Nodes it scored: the mean feasible count when more than one node was feasible."""


def measure(
    oracle: Path, p: Point, folder: Path, timeout: float, run: int = 1, quantile: int = 50
) -> dict[str, Measured]:
    """Point ``p`` measured once by ``kube-oracle bench`` (its JSON kept in ``folder`` as
    ``NAME-rRUN.json``), by result (see the module docstring)."""
    config = write_point(p, folder)
    out = folder / f"{p.name}-r{run}.json"
    proc = subprocess.run(
        [str(oracle), "bench", str(config), "-o", str(out), "--timeout", str(timeout)],
        capture_output=True,
        text=True,
        timeout=timeout * 3,
        check=False,
    )
    if proc.returncode != 0 or not out.exists():
        raise RuntimeError(f"kube-oracle bench {p.name} failed: {proc.stderr.strip()[-400:]}")
    got = parse(out, quantile)
    if not got:
        raise RuntimeError(f"{out}: no SchedulingAttemptDurationByResult; {BUILD_HINT}")
    return got


def parse(path: Path, quantile: int = 50) -> dict[str, Measured]:
    """What one ``kube-oracle bench`` JSON says per result: the exact attempt time's
    ``quantile`` (SchedulingAttemptDurationByResult PercQ, 10 or 50) and the mean
    EvaluatedNodes/FeasibleNodes."""
    by: dict[str, dict[str, dict[str, float]]] = {}
    for it in json.loads(path.read_text())["dataItems"]:
        result = it["labels"].get("result")
        by.setdefault(result, {})[it["labels"]["Metric"]] = it["data"]
    got = {}
    for result, items in by.items():
        if result is None or "SchedulingAttemptDurationByResult" not in items:
            continue
        feasible = items["FeasibleNodes"]["Average"]
        got[result] = Measured(
            items["SchedulingAttemptDurationByResult"][f"Perc{quantile}"] / 1000,
            items["EvaluatedNodes"]["Average"],
            feasible if feasible > 1 else 0.0,
        )
    return got


def machine() -> dict[str, Any]:
    """Cores, memory, CPU model and load average of this machine."""
    model = platform.processor() or platform.machine()
    mem_gib = 0.0
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return {
        "cores": os.cpu_count() or 1,
        "memoryGiB": mem_gib,
        "cpuModel": model,
        "os": f"{platform.system()} {platform.release()}",
    }


def go_version(oracle: Path) -> str:
    """The Go release that built ``oracle`` (``go version BINARY``), or ``unknown``."""
    go = shutil.which("go") or (
        "/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None
    )
    if go is None:
        return "unknown"
    run = subprocess.run([go, "version", str(oracle)], capture_output=True, text=True, check=False)
    return run.stdout.split()[-1] if run.returncode == 0 and run.stdout.split() else "unknown"


def calibrate(
    size: str,
    oracle: Path,
    *,
    timeout: float = 600.0,
    repeat: int = 1,
    keep: Path | None = None,
    points: list[Point] | None = None,
    refit: Path | None = None,
    quantile: int = 50,
    binding: bool = False,
    log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True),
) -> dict[str, Any]:
    """Runs grid ``size`` (or ``points``) and, with ``binding``, the bursts through a real
    API server (:mod:`kubesched.bench.calibbind`), and returns the calibration document;
    with ``refit``, fits the runs a ``keep`` folder holds instead of running anything.
    Without ``binding`` the binding parameters are the shipped calibration's."""
    points = points if points is not None else grid(size)
    missing = [b for b in calibbind.BINARIES if not (oracle.parent / b).exists()]
    if binding and refit is None and missing:
        raise InputError(f"--binding: {', '.join(missing)} missing beside {oracle}; {BUILD_HINT}")
    load_start = os.getloadavg()
    began = time.monotonic()
    runs: dict[Point, list[dict[str, Measured]]] = {p: [] for p in points}
    if refit is not None:
        for p in points:
            runs[p] = [parse(f, quantile) for f in sorted(refit.glob(f"{p.name}-r*.json"))]
            if not runs[p]:
                raise InputError(f"{refit}: no {p.name}-r*.json (--refit wants a --keep folder)")
        repeat = min(len(v) for v in runs.values())
    folder = keep or Path(tempfile.mkdtemp(prefix="kubesched-calibrate-"))
    try:
        for r in range(1, 0 if refit else max(repeat * NOISY, 1) + 1):
            todo = [p for p in points if r <= repeat * (NOISY if p.mix in NOISY_MIXES else 1)]
            for i, p in enumerate(todo, 1):
                got = measure(oracle, p, folder, timeout, r, quantile)
                runs[p].append(got)
                shown = ", ".join(f"{k} {m.seconds * 1000:.3f} ms" for k, m in sorted(got.items()))
                log(f"calibrate: round {r}, {i}/{len(todo)} {p.name}: {shown}")
    finally:
        if keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    mach = machine()
    doc = fit_rows(fastest(runs), mach["cores"])
    measured = binding_runs(oracle, size, refit, keep, repeat, timeout, log) if binding else None
    if measured is not None:
        doc["binding"] = calibbind.section({"kind": KIND, "machine": mach, **doc}, measured)
    mach["loadAverage"] = {
        "start": [round(x, 2) for x in load_start],
        "end": [round(x, 2) for x in os.getloadavg()],
    }
    if refit is not None and (refit / "load.json").exists():
        mach["loadAverage"] = json.loads((refit / "load.json").read_text())
    elif keep is not None:
        (keep / "load.json").write_text(json.dumps(mach["loadAverage"]))
    mach["note"] = (
        "measured with other work on the machine when the load average exceeds the cores: "
        f"regenerate on a quiet machine ({REGENERATE})"
    )
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "machine": mach,
        "versions": {
            "upstream": _upstream(oracle),
            "go": go_version(oracle),
            "kubesched": __version__,
        },
        "grid": size,
        "repeat": repeat,
        "quantile": quantile,
        "command": f"kubesched calibrate --grid {size} --repeat {repeat}"
        + (" --binding" if binding else "")
        + (f" --quantile {quantile}" if quantile != 50 else ""),
        "seconds": round(time.monotonic() - began, 1),
        **({"refitFrom": str(refit)} if refit is not None else {}),
        **doc,
    }


def binding_runs(
    oracle: Path,
    size: str,
    refit: Path | None,
    keep: Path | None,
    repeat: int,
    timeout: float,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """The binding measurements: run (kept as ``binding.json`` in ``keep``), or read back
    from ``refit``."""
    if refit is not None:
        path = refit / "binding.json"
        if not path.exists():
            raise InputError(f"{path}: missing (--refit --binding wants a --binding --keep folder)")
        return dict(json.loads(path.read_text()))
    folder = keep / "binding" if keep is not None else None
    got = calibbind.measure(
        oracle, nodes=BURSTS[size], pods=BURSTS[size], repeat=repeat, timeout=timeout,
        keep=folder, log=log,
    )  # fmt: skip
    if keep is not None:
        (keep / "binding.json").write_text(json.dumps(got, indent=1))
    return got


def fastest(runs: Mapping[Point, list[dict[str, Measured]]]) -> list[Row]:
    """One row per point and result: the run with the fastest attempt (on a shared machine
    the slower runs measure the neighbours), with that run's work."""
    rows = []
    for p, measured in runs.items():
        expected = p.attempts()
        for result in sorted({r for m in measured for r in m}):
            best = min((m[result] for m in measured if result in m), key=lambda m: m.seconds)
            if result not in expected or best.seconds <= 0:
                continue
            e = expected[result]
            work = replace(e, filtered=best.filtered, scored=best.scored)
            rows.append(Row(p, result, work, best.seconds))
    return rows


@dataclass(frozen=True, slots=True)
class Row:
    """A point's result as fitted: the attempt's work (upstream's own counts of nodes
    filtered and scored, the plugins and preemption of the grid's mix) and its seconds."""

    point: Point
    result: str
    work: Attempt
    seconds: float


def fit_rows(rows: list[Row], cores: int) -> dict[str, Any]:
    """The attempt coefficients, binding parameters, fit error and per-point table."""
    import numpy as np

    y = np.array([r.seconds for r in rows])
    held = np.array([r.point.held_out for r in rows], dtype=bool)
    shipped = load_calibration(None)
    kept = {
        k: v
        for k, v in shipped.document.get("binding", {}).items()
        if k not in ("source", "validation")
    }
    fitted_rows = [r for r in rows if not r.point.held_out]
    fitted = costmodel.fit(
        [r.work for r in fitted_rows],
        [r.point.parallelism for r in fitted_rows],
        cores,
        y[~held],
        fallback={**shipped.coefficients, SERIAL: shipped.serial},
    )
    x = features([r.work for r in rows], [r.point.parallelism for r in rows], cores, fitted.serial)
    pred = costmodel.predict(x, fitted.coefficients)
    err = costmodel.errors_percent(pred, y)
    return {
        "attempt": {
            **{k: float(f"{v:.4g}") for k, v in fitted.coefficients.items()},
            SERIAL: round(fitted.serial, 2),
        },
        "fitted": list(fitted.fitted),
        "binding": {
            **BINDING_DEFAULTS,
            **kept,
            "source": "the shipped calibration's (kubesched calibrate --binding measures them)",
        },
        "fit": {
            "fitted": {"points": int((~held).sum()), **costmodel.summary(err[~held])},
            "heldOut": {"points": int(held.sum()), **costmodel.summary(err[held])},
        },
        "points": [
            {
                **r.point.label(),
                "result": r.result,
                "heldOut": r.point.held_out,
                "filtered": round(r.work.filtered, 1),
                "scored": round(r.work.scored, 1),
                "measuredMs": round(r.seconds * 1000, 4),
                "predictedMs": round(float(q) * 1000, 4),
                "errorPercent": round(float(e), 1),
            }
            for r, q, e in zip(rows, pred, err, strict=True)
        ],
    }


def _upstream(oracle: Path) -> str:
    run = subprocess.run([str(oracle), "version"], capture_output=True, text=True, check=False)
    return (
        run.stdout.strip().split()[-1] if run.returncode == 0 and run.stdout.strip() else "unknown"
    )


def write(doc: dict[str, Any], path: str) -> None:
    """Writes the calibration YAML, with a header saying how it was made."""
    refit = f" (fitted again from {doc['refitFrom']})" if "refitFrom" in doc else ""
    header = (
        f"# Upstream kube-scheduler cost calibration made by: {doc['command']}{refit}\n"
        f"# The shipped one is regenerated on a quiet machine by: {REGENERATE}\n"
    )
    Path(path).write_text(header + dump_calibration(doc))
