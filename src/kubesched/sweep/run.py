"""Run a sweep: every (variant, seed) task on a local process pool or a Ray cluster, then
compare (:mod:`kubesched.sweep.aggregate`).

The local pool is :class:`concurrent.futures.ProcessPoolExecutor` with ``spawn``ed workers
(fresh interpreters, as Ray's workers are), ``workers`` of them (default: the CPU count);
``workers=0`` runs the tasks in this process, one after another.  With a Ray address the same
tasks run as Ray tasks (:mod:`kubesched.sweep.ray_backend`).  Either way each task is a pure
function of its inputs and seed, so the deterministic measures of every row are identical
across backends (``fingerprints`` in the result lets anyone check).
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from kubesched.sweep import aggregate, ray_backend
from kubesched.sweep.spec import SweepSpec, Task
from kubesched.sweep.tasks import run_task

Progress = Callable[[int, int], None]
"""``progress(done, total)`` in tasks."""
LOCAL = "local"
RAY = "ray"


def run_local(
    tasks: Sequence[Task], workers: int | None = None, progress: Progress | None = None
) -> list[dict[str, Any]]:
    """Run ``tasks`` on a local process pool (``workers`` 0: in this process); rows in order."""
    n = (os.cpu_count() or 1) if workers is None else workers
    if n <= 0 or len(tasks) <= 1:
        rows = []
        for i, t in enumerate(tasks, 1):
            rows.append(run_task(t))
            if progress is not None:
                progress(i, len(tasks))
        return rows
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(n, len(tasks)), mp_context=ctx) as pool:
        futures = [pool.submit(run_task, t) for t in tasks]
        rows = []
        for i, f in enumerate(futures, 1):
            rows.append(f.result())
            if progress is not None:
                progress(i, len(tasks))
    return rows


def run_sweep(
    spec: SweepSpec,
    *,
    workers: int | None = None,
    ray_address: str | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run every task of ``spec`` and return the results document (JSON-ready)::

    {"sweep": name, "base": {...}, "class": ..., "seeds": [...], "baseline": ...,
     "backend": "local"|"ray", "wallSeconds": ..., "rows": [one per task],
     "variants": {name: {measure: {mean, sd, n}, flags, rank, ...}}, "ranking": [...],
     "denominators": {...}, "fingerprints": {task index: digest}}
    """
    tasks = spec.tasks()
    t0 = time.perf_counter()
    if ray_address:
        rows = ray_backend.run_tasks(tasks, ray_address, progress)
        backend = RAY
    else:
        rows = run_local(tasks, workers, progress)
        backend = LOCAL
    wall = time.perf_counter() - t0
    cmp = aggregate.compare(rows, [v.name for v in spec.variants], spec.baseline, spec.tolerance)
    return {
        "sweep": spec.name,
        "base": spec.base,
        "class": spec.var_class,
        "seeds": spec.seeds,
        "baseline": spec.baseline,
        "settings": {v.name: v.settings for v in spec.variants},
        "backend": backend,
        "wallSeconds": round(wall, 3),
        "rows": rows,
        **cmp,
    }
