"""``kubesched bench`` with its measured phase profiled: CPU, Python opcodes, or a py-spy marker.

The phase is what ``Loop.pump`` runs while a :class:`~kubesched.bench.loop.Phase` is on (from
``_WorkloadRun._start`` to ``_stop``).  ``PHASE_PROFILE`` picks what is taken:

- ``cpu`` (default): the phase's thread CPU, process CPU and wall time, one line
  ``PHASE cpu=… proc=… wall=…`` on stderr (interleave two trees' runs and read medians);
- ``ops``: ``sys.settrace`` with opcode events, on only inside the phase's pumps: the Python
  opcodes and calls it executes, then the code objects with the most opcodes of their own.
  A load-free measure of interpreted work (a numpy call is one C call, however many rows):
  repeatable to ~0.3 % at load ~10, ~1 % at load 20+ (the bench's timers take more turns
  in a slowed run);
- ``tree``: ``ops`` plus each code object's inclusive count (its callees' opcodes too);
- ``lines``: ``ops`` plus the source lines with the most opcodes;
- ``spy``: no tracing; the phase's pumps run under a frame named ``MEASURED_PHASE``, so a
  ``py-spy record -f raw`` of the process can be cut to the phase (keep the stacks that
  contain it, drop the frames above it).

``TOP`` (default 60) rows are printed.  Usage (the tree under test on ``PYTHONPATH``)::

    PYTHONHASHSEED=0 PHASE_PROFILE=ops PYTHONPATH=src .venv/bin/python \\
        benchmarks/phase_profile.py bench benchmarks/upstream/performance-config.yaml \\
        --case PreemptionBasic --workload 500Nodes --kubernetes-version 1.34 --no-progress
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from types import CodeType, FrameType
from typing import Any

from kubesched.bench import loop, runner
from kubesched.cli import main

MODE = os.environ.get("PHASE_PROFILE", "cpu")
TOP = int(os.environ.get("TOP", "60"))
Key = tuple[str, int, str]

clock: dict[str, float] = {}
own: Counter[Key] = Counter()
inclusive: Counter[Key] = Counter()
lines: Counter[tuple[Key, int]] = Counter()
calls: Counter[Key] = Counter()
stack: list[Key] = []
totals = [0, 0]  # opcodes, Python calls


def _key(code: CodeType) -> Key:
    return (code.co_filename.rsplit("/src/", 1)[-1], code.co_firstlineno, code.co_name)


def _trace(frame: FrameType, event: str, arg: Any) -> Any:
    if event == "opcode":
        totals[0] += 1
        key = _key(frame.f_code)
        own[key] += 1
        if MODE == "lines":
            lines[(key, frame.f_lineno)] += 1
        elif MODE == "tree":
            for k in set(stack):
                inclusive[k] += 1
    elif event == "call":
        frame.f_trace_opcodes = True
        totals[1] += 1
        key = _key(frame.f_code)
        calls[key] += 1
        stack.append(key)
    elif event == "return" and stack:
        stack.pop()
    return _trace


_pump = loop.Loop.pump


def MEASURED_PHASE(self: loop.Loop) -> bool:
    """The phase's pump under a frame py-spy's stacks name."""
    return _pump(self)


def _profiled_pump(self: loop.Loop) -> bool:
    if self.phase is None:
        return _pump(self)
    if MODE == "spy":
        return MEASURED_PHASE(self)
    if MODE == "cpu":
        return _pump(self)
    sys.settrace(_trace)
    try:
        return _pump(self)
    finally:
        sys.settrace(None)
        stack.clear()


_start, _stop = runner._WorkloadRun._start, runner._WorkloadRun._stop


def _timed_start(self: Any, *args: Any, **kwargs: Any) -> None:
    _start(self, *args, **kwargs)
    clock.update(t=time.thread_time(), p=time.process_time(), w=time.perf_counter())


def _timed_stop(self: Any) -> None:
    clock.update(
        cpu=time.thread_time() - clock["t"],
        proc=time.process_time() - clock["p"],
        wall=time.perf_counter() - clock["w"],
    )
    _stop(self)


def _table(title: str, counts: Counter[Any], show: Any) -> None:
    print(f"--- {title}", file=sys.stderr)
    for key, n in counts.most_common(TOP):
        print(f"{n:10d} {100 * n / max(totals[0], 1):5.1f}% {show(key)}", file=sys.stderr)


if __name__ == "__main__":
    loop.Loop.pump = _profiled_pump  # type: ignore[method-assign]
    runner._WorkloadRun._start = _timed_start  # type: ignore[method-assign]
    runner._WorkloadRun._stop = _timed_stop  # type: ignore[method-assign]
    rc = main(sys.argv[1:])
    ms = {k: 1e3 * clock.get(k, 0.0) for k in ("cpu", "proc", "wall")}
    print(" ".join(["PHASE"] + [f"{k}={v:.1f}ms" for k, v in ms.items()]), file=sys.stderr)
    if MODE in ("ops", "tree", "lines"):
        print(f"OPCODES {totals[0]} PYCALLS {totals[1]}", file=sys.stderr)
        _table("own", own, lambda k: f"{calls[k]:8d} calls {k[0]}:{k[1]} {k[2]}")
        if MODE == "tree":
            _table("inclusive", inclusive, lambda k: f"{calls[k]:8d} calls {k[0]}:{k[1]} {k[2]}")
        if MODE == "lines":
            _table("lines", lines, lambda k: f"{k[0][0]}:{k[1]} {k[0][2]}")
    sys.exit(rc)
