"""``kubesched calibrate``: measure upstream's scheduler on the calibration grid
(:mod:`kubesched.bench.calibgrid`) with ``kube-oracle bench`` and fit the cost model
(:mod:`kubesched.sim.costmodel`) into a calibration file.

What a point measures: for the plugin mixes without preemption, the median of the exact
per-attempt times (``SchedulingAttemptDuration`` Perc50; the median, not the mean, so that
another process's burst on a shared machine moves it less); for preemption, the mean of
upstream's ``scheduler_scheduling_attempt_duration_seconds`` per ``result`` (``unschedulable``:
the attempt that ran the dry runs; ``scheduled``: the nominated node's). Points marked held out
are measured and predicted but not fitted: their error is the validation. With ``repeat``
above 1 every point runs that many times, rounds apart, and keeps the fastest: on a shared
machine the slower runs measure the neighbours.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubesched import __version__
from kubesched.api.errors import InputError
from kubesched.bench.calibgrid import Point, grid, write_point
from kubesched.sim import costmodel
from kubesched.sim.costmodel import (
    API_VERSION,
    BINDING_DEFAULTS,
    KIND,
    Attempt,
    dump_calibration,
    features,
    load_calibration,
)

BUILD_HINT = "build it with: bash oracle/build.sh (needs Go), or pass --oracle PATH"
REGENERATE = (
    "kubesched calibrate --grid full --repeat 2 -o src/kubesched/sim/calibration/default.yaml"
)


def find_oracle(path: str | None) -> Path:
    """``--oracle``, else ``$KUBE_ORACLE``, else ``oracle/bin/kube-oracle`` here."""
    candidate = Path(path or os.environ.get("KUBE_ORACLE") or "oracle/bin/kube-oracle")
    if not candidate.is_file() or not os.access(candidate, os.X_OK):
        raise InputError(f"{candidate}: kube-oracle not found; {BUILD_HINT}")
    return candidate


def measure(oracle: Path, p: Point, folder: Path, timeout: float) -> dict[str, float]:
    """Seconds of one attempt of point ``p`` by result (see the module docstring)."""
    config = write_point(p, folder)
    out = folder / f"{p.name}.json"
    run = subprocess.run(
        [str(oracle), "bench", str(config), "-o", str(out), "--timeout", str(timeout)],
        capture_output=True,
        text=True,
        timeout=timeout * 3,
        check=False,
    )
    if run.returncode != 0 or not out.exists():
        raise RuntimeError(f"kube-oracle bench {p.name} failed: {run.stderr.strip()[-400:]}")
    items = json.loads(out.read_text())["dataItems"]
    got: dict[str, float] = {}
    for it in items:
        metric, result = it["labels"]["Metric"], it["labels"].get("result")
        if p.mix != "preemption" and metric == "SchedulingAttemptDuration":
            got["scheduled"] = it["data"]["Perc50"] / 1000
        elif p.mix == "preemption" and result in ("scheduled", "unschedulable"):
            got[result] = it["data"]["Average"] / 1000
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
    log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True),
) -> dict[str, Any]:
    """Runs grid ``size`` (or ``points``) and returns the calibration document."""
    points = points if points is not None else grid(size)
    load_start = os.getloadavg()
    began = time.monotonic()
    best: dict[Point, dict[str, float]] = {p: {} for p in points}
    folder = keep or Path(tempfile.mkdtemp(prefix="kubesched-calibrate-"))
    try:
        for r in range(1, repeat + 1):
            for i, p in enumerate(points, 1):
                got = measure(oracle, p, folder, timeout)
                for result, seconds in got.items():
                    best[p][result] = min(seconds, best[p].get(result, seconds))
                shown = ", ".join(f"{k} {s * 1000:.3f} ms" for k, s in sorted(got.items()))
                log(f"calibrate: round {r}/{repeat}, {i}/{len(points)} {p.name}: {shown}")
    finally:
        if keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    rows = [
        (p, result, p.attempts()[result], seconds)
        for p in points
        for result, seconds in sorted(best[p].items())
        if result in p.attempts() and seconds > 0
    ]
    mach = machine()
    doc = fit_rows(rows, mach["cores"])
    mach["loadAverage"] = {
        "start": [round(x, 2) for x in load_start],
        "end": [round(x, 2) for x in os.getloadavg()],
    }
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
        "command": f"kubesched calibrate --grid {size} --repeat {repeat}",
        "seconds": round(time.monotonic() - began, 1),
        **doc,
    }


def fit_rows(rows: list[tuple[Point, str, Attempt, float]], cores: int) -> dict[str, Any]:
    """The attempt coefficients, binding parameters, fit error and per-point table."""
    import numpy as np

    x = features([r[2] for r in rows], [r[0].parallelism for r in rows], cores)
    y = np.array([r[3] for r in rows])
    held = np.array([r[0].held_out for r in rows], dtype=bool)
    shipped = load_calibration(None).coefficients
    fitted = costmodel.fit(x[~held], y[~held], fallback=shipped)
    pred = costmodel.predict(x, fitted.coefficients)
    err = costmodel.errors_percent(pred, y)
    return {
        "attempt": {k: float(f"{v:.4g}") for k, v in fitted.coefficients.items()},
        "fitted": list(fitted.fitted),
        "binding": {
            **BINDING_DEFAULTS,
            "source": "defaults (kube-scheduler's client; latency unmeasured)",
        },
        "fit": {
            "fitted": {"points": int((~held).sum()), **costmodel.summary(err[~held])},
            "heldOut": {"points": int(held.sum()), **costmodel.summary(err[held])},
        },
        "points": [
            {
                **p.label(),
                "result": result,
                "heldOut": p.held_out,
                "measuredMs": round(m * 1000, 4),
                "predictedMs": round(float(q) * 1000, 4),
                "errorPercent": round(float(e), 1),
            }
            for (p, result, _, m), q, e in zip(rows, pred, err, strict=True)
        ],
    }


def _upstream(oracle: Path) -> str:
    run = subprocess.run([str(oracle), "version"], capture_output=True, text=True, check=False)
    return (
        run.stdout.strip().split()[-1] if run.returncode == 0 and run.stdout.strip() else "unknown"
    )


def write(doc: dict[str, Any], path: str) -> None:
    """Writes the calibration YAML, with a header saying how it was made."""
    header = f"# Upstream kube-scheduler cost calibration; regenerate: {doc['command']}\n"
    Path(path).write_text(header + dump_calibration(doc))
