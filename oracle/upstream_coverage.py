"""Upstream's statement coverage of a differential run (``oracle/diff.py --coverage``).

``oracle/build.sh --cover`` builds ``oracle/bin/cover/kube-oracle`` with Go's coverage
instrumentation over ``k8s.io/kubernetes/pkg/scheduler/...``; run with ``GOCOVERDIR`` it
writes counters when it exits.  ``report(dirs)`` merges them (``go tool covdata textfmt``
and ``func``) and measures, per upstream default-profile plugin of v1.34 and for the
framework runtime and preemption, the share of statements executed:

- ``all``: every statement of the plugin's files;
- ``paths``: its scheduling paths, every function but the queueing hints
  (``EventsToRegister``, ``isSchedulableAfter*`` and the helpers only they call), which run
  when a cluster event requeues a Pod and so only in ``kube-oracle schedule``.

The volume plugins are listed but out of scope (kubesched does not model storage yet) and
count in neither the total nor the thresholds.  The last line is exactly
``coverage: A % of default-profile plugin statements, lowest B % (PLUGIN)``.
"""

from __future__ import annotations

import bisect
import os
import subprocess
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent
COVER_BINARY = ROOT / "bin" / "cover" / "kube-oracle"
COVER_HINT = "bash oracle/build.sh --cover (builds oracle/bin/cover/kube-oracle)"
SCHED = "k8s.io/kubernetes/pkg/scheduler/"
PLUGINS = SCHED + "framework/plugins/"
_FIT_FILES = (
    "fit.go",
    "least_allocated.go",
    "most_allocated.go",
    "requested_to_capacity_ratio.go",
    "resource_allocation.go",
)

# name -> (package under pkg/scheduler/, the package's files it owns (None: every file)).
DEFAULT_PLUGINS: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "PrioritySort": ("framework/plugins/queuesort", None),
    "SchedulingGates": ("framework/plugins/schedulinggates", None),
    "NodeUnschedulable": ("framework/plugins/nodeunschedulable", None),
    "NodeName": ("framework/plugins/nodename", None),
    "TaintToleration": ("framework/plugins/tainttoleration", None),
    "NodeAffinity": ("framework/plugins/nodeaffinity", None),
    "NodePorts": ("framework/plugins/nodeports", None),
    "NodeResourcesFit": ("framework/plugins/noderesources", _FIT_FILES),
    "NodeResourcesBalancedAllocation": (
        "framework/plugins/noderesources",
        ("balanced_allocation.go", "resource_allocation.go"),
    ),
    "ImageLocality": ("framework/plugins/imagelocality", None),
    "PodTopologySpread": ("framework/plugins/podtopologyspread", None),
    "InterPodAffinity": ("framework/plugins/interpodaffinity", None),
    "DynamicResources": ("framework/plugins/dynamicresources", None),
    "DefaultPreemption": ("framework/plugins/defaultpreemption", None),
    "DefaultBinder": ("framework/plugins/defaultbinder", None),
}
# Filter and Score plugins: their paths must reach the higher threshold.
FILTER_SCORE = {
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
    "PodTopologySpread",
    "InterPodAffinity",
    "DynamicResources",
}
OUT_OF_SCOPE: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "VolumeRestrictions": ("framework/plugins/volumerestrictions", None),
    "NodeVolumeLimits": ("framework/plugins/nodevolumelimits", None),
    "VolumeBinding": ("framework/plugins/volumebinding", None),
    "VolumeZone": ("framework/plugins/volumezone", None),
}
FRAMEWORK: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "plugin helpers": ("framework/plugins/helper", None),
    "framework runtime": ("framework/runtime", None),
    "preemption": ("framework/preemption", None),
}
# Files compiled into a plugin package that are not the plugin (test helpers).
NOT_PLUGIN_FILES = {"test_util.go"}
# Helpers only queueing hints call (beyond EventsToRegister and isSchedulableAfter*).
HINT_HELPERS = {
    "noderesources": {"haveAnyRequestedResourcesIncreased", "isFit"},
}


def is_hint(package: str, function: str) -> bool:
    """Whether ``function`` of ``package`` (under plugins/) is queueing-hint code."""
    name = function.rsplit(".", 1)[-1]
    if name == "EventsToRegister" or "SchedulableAfter" in name:
        return True
    return name in HINT_HELPERS.get(package.rsplit("/", 1)[-1], set())


@dataclass
class Block:
    file: str  # import path of the package + "/" + file name
    start: int
    end: int
    statements: int
    covered: bool
    function: str = ""


@dataclass
class Row:
    name: str
    blocks: list[Block] = field(default_factory=list)

    def share(self, hints: bool = True) -> tuple[int, int]:
        """(covered, total) statements, queueing hints included or not."""
        chosen = [b for b in self.blocks if hints or not is_hint(_package(b.file), b.function)]
        return sum(b.statements for b in chosen if b.covered), sum(b.statements for b in chosen)

    def uncovered(self) -> list[str]:
        """The uncovered line ranges, ``file:start-end (function)``, merged when adjacent."""
        out: list[tuple[str, int, int, str]] = []
        for b in sorted(self.blocks, key=lambda b: (b.file, b.start)):
            if b.covered:
                continue
            last = out[-1] if out else None
            if last and last[0] == b.file and last[3] == b.function and b.start <= last[2] + 1:
                out[-1] = (b.file, last[1], max(last[2], b.end), b.function)
            else:
                out.append((b.file, b.start, b.end, b.function))
        return [f"{f.removeprefix(SCHED)}:{s}-{e} ({fn})" for f, s, e, fn in out]


def _package(file: str) -> str:
    return file.rsplit("/", 1)[0]


def _pct(covered: int, total: int) -> float:
    return 100.0 * covered / total if total else 100.0


def _go(*args: str) -> str:
    return subprocess.run(
        ["go", *args], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout


def load(dirs: list[Path]) -> list[Block]:
    """Every instrumented block of the merged counters, each with its function."""
    inputs = ",".join(str(d) for d in dirs)
    with tempfile.TemporaryDirectory() as tmp:
        profile = Path(tmp) / "profile.txt"
        _go("tool", "covdata", "textfmt", "-i", inputs, "-o", str(profile))
        text = profile.read_text()
    starts: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for line in _go("tool", "covdata", "func", "-i", inputs).splitlines():
        parts = line.split()
        if len(parts) < 3 or not parts[0].endswith(":"):
            continue
        file, _, lineno = parts[0].rstrip(":").rpartition(":")
        starts[file].append((int(lineno), parts[1]))
    for v in starts.values():
        v.sort()
    merged: dict[tuple[str, str], Block] = {}
    for line in text.splitlines()[1:]:
        where, stmts, count = line.rsplit(" ", 2)
        file, _, span = where.rpartition(":")
        a, b = span.split(",")
        block = Block(file, int(a.split(".")[0]), int(b.split(".")[0]), int(stmts), count != "0")
        prev = merged.get((file, span))
        if prev is not None:
            prev.covered = prev.covered or block.covered
            continue
        funcs = starts.get(file, [])
        i = bisect.bisect_right(funcs, (block.start, "\uffff")) - 1
        block.function = funcs[i][1] if i >= 0 else ""
        merged[(file, span)] = block
    return list(merged.values())


def rows(blocks: list[Block], table: dict[str, tuple[str, tuple[str, ...] | None]]) -> list[Row]:
    out = []
    for name, (package, files) in table.items():
        row = Row(name)
        for b in blocks:
            if _package(b.file) != SCHED + package:
                continue
            base = b.file.rsplit("/", 1)[1]
            if base in NOT_PLUGIN_FILES or (files is not None and base not in files):
                continue
            row.blocks.append(b)
        out.append(row)
    return out


@dataclass
class Report:
    lines: list[str]
    total: float
    lowest: tuple[float, str]
    below: list[str]


def report(dirs: list[Path], min_all: float = 90.0, min_paths: float = 95.0) -> Report:
    """The coverage table, the uncovered lines and the summary line of the counters in
    ``dirs``; ``below`` names each plugin under ``min_all`` (all statements) or, for a
    Filter or Score plugin, under ``min_paths`` (its scheduling paths)."""
    blocks = load(dirs)
    plugins = rows(blocks, DEFAULT_PLUGINS)
    lines = [f"{'':33} {'statements':>10} {'all':>7} {'paths':>7}  uncovered"]
    below = []

    def line(row: Row, note: str = "") -> None:
        c, t = row.share()
        pc, pt = row.share(hints=False)
        gaps = len(row.uncovered())
        text = f"{row.name:33} {t:>10} {_pct(c, t):>6.1f}% {_pct(pc, pt):>6.1f}%  {gaps:>4} ranges"
        lines.append(text + (f"  {note}" if note else ""))

    for row in plugins:
        c, t = row.share()
        pc, pt = row.share(hints=False)
        if _pct(c, t) < min_all or (row.name in FILTER_SCORE and _pct(pc, pt) < min_paths):
            below.append(row.name)
        line(row)
    for row in rows(blocks, FRAMEWORK):
        line(row, "(not a plugin)")
    for row in rows(blocks, OUT_OF_SCOPE):
        line(row, "(out of scope until kubesched models storage)")
    lines.append("")
    for row in [*plugins, *rows(blocks, FRAMEWORK)]:
        gaps = row.uncovered()
        if gaps:
            lines.append(f"uncovered in {row.name}:")
            lines.extend(f"  {g}" for g in gaps)
    seen = {id(b): b for row in plugins for b in row.blocks}
    covered = sum(b.statements for b in seen.values() if b.covered)
    total = _pct(covered, sum(b.statements for b in seen.values()))
    lowest = min((_pct(*r.share()), r.name) for r in plugins)
    lines.append(
        f"coverage: {total:.1f} % of default-profile plugin statements, "
        f"lowest {lowest[0]:.1f} % ({lowest[1]})"
    )
    return Report(lines, total, lowest, below)


def cover_env(directory: Path) -> dict[str, str]:
    """The environment of an instrumented kube-oracle writing into ``directory``."""
    return {**os.environ, "GOCOVERDIR": str(directory)}
