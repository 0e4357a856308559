"""Differential run: kubesched.explain against upstream kube-scheduler (kube-oracle).

    bash oracle/build.sh
    .venv/bin/python oracle/diff.py --cases 10000 --seed 1
    .venv/bin/python oracle/diff.py --verb schedule --cases 200 --seed 1
    .venv/bin/python oracle/diff.py --verb hints --cases 2000 --seed 1
    .venv/bin/python oracle/diff.py --verb hints --family storage --cases 1000 --seed 1
    .venv/bin/python oracle/diff.py --verb hints --family dra --cases 1000 --seed 1
    .venv/bin/python oracle/diff.py --family storage --cases 1000 --seed 1
    .venv/bin/python oracle/diff.py --kubernetes-version 1.37 --cases 300 --seed 7
    bash oracle/build.sh --cover && .venv/bin/python oracle/diff.py --coverage --cases 2000

Generates N cases (``oracle/cases.py``), answers each with both (``explain``: kubesched.explain
against kube-oracle explain; ``schedule``: kubesched.schedule against upstream's whole
scheduler; ``hints``: kubesched's queueing hints against upstream's for one Node or Pod
change, ``oracle/hint_cases.py``, or with ``--family storage`` one change of a storage
object, ``oracle/storage_hint_cases.py``, or with ``--family dra`` one change of a DRA
object or of the Pod's generated claims, ``oracle/dra_hint_cases.py``), and prints every
mismatch (explain's shrunk: objects and fields removed while it still differs).
``--save DIR`` writes each shrunk mismatch as a regression case (request, upstream's answer and its
``kubernetesVersion``), the form ``tests/oracle/regressions/`` keeps (a case without
``kubernetesVersion`` is v1.34's); ``--no-shrink`` prints and saves them as drawn, which
is fast when most cases differ.  The last line is ``oracle: N cases, M mismatches``;
the exit code is 0 only when M is 0.  ``--family`` picks the generator: ``default`` (the
cases above), ``storage`` (``oracle/storage_cases.py``: volumes, claims, classes, CSI nodes
and drivers, storage capacity), ``dra`` (``oracle/dra_cases.py``) or ``podgroup``
(``oracle/podgroup_cases.py``: scheduling.k8s.io Workloads and PodGroups, gangs; needs
``--kubernetes-version`` 1.35 or newer) or ``batching`` (``oracle/batching_cases.py``:
schedules of equal Pods in a row, OpportunisticBatching's node hints, v1.35+; ``--verb
schedule`` only).  A schedule mismatch is shrunk (Pods and objects
removed while it still differs) when ``--save`` is given.  Upstream's whole scheduler is
not always deterministic (Go map order, goroutines racing for a freed node), so a schedule
that differs is asked again up to ``--reask N`` times (default 3) and counts as a match when
one of upstream's answers is kubesched's, or kubesched's with the Pods one event releases
from the unschedulable pool requeued in another order (``one_release_order``: Go's map walk
upstream), with its random draws from another seed (``one_scheduler_seed``: a preemption dry
run's offset, which picks among candidate nodes tied on every criterion) or with each node's
device pools searched in another order (``one_pool_order``: which devices an allocation
takes); those are counted on a line of their own, by way (``varied_schedule``), and each
such case is named with its way.  So is
an explain case with ResourceSlices that differs (upstream's allocator walks a node's
device pools in Go map order, and v1.34 and v1.35 keep a device's counters reserved after
a constraint passes it over, so the order can decide whether a node fits): upstream is
asked again up to ``--reask`` times and kubesched answers with the pools in other orders
(``compare.one_of_pool_orders``); one answer alike on both sides is a match.  An explain
case with CSIDrivers that differs is asked again likewise (under VolumeLimitScaling
NodeVolumeLimits names the first missing driver of a Go map of the Pod's volumes).

``--kubernetes-version V`` (1.34 to 1.37) asks upstream V: ``oracle/bin/vV/kube-oracle``
(``oracle/build.sh`` builds one per version); without it, ``oracle/bin/kube-oracle``, the
default build (v1.34).  Given, V is passed on to kubesched too (``compare.kubesched_options``),
and the default family's cases draw what V adds (``cases.version_draws``: Node declared
features and the Pods that need them, random ``featureGates`` V accepts, passed to kubesched
and as ``--feature-gates`` to kube-oracle).

``--coverage`` runs against ``oracle/bin/cover/kube-oracle`` (``oracle/build.sh --cover``:
upstream's ``pkg/scheduler/...`` instrumented): the explain cases, ``--dra-cases`` DRA cases
(``oracle/dra_cases.py``), ``--schedule-cases`` schedules (which run the queue and the
binder), ``--dra-schedule-cases`` DRA schedules, ``--storage-cases`` storage cases and
``--storage-schedule-cases`` storage schedules (``oracle/storage_cases.py``) and
``--hint-cases`` queueing-hint cases (``oracle/hint_cases.py``), ``--storage-hint-cases``
storage queueing-hint cases (``oracle/storage_hint_cases.py``) and ``--dra-hint-cases`` DRA
queueing-hint cases (``oracle/dra_hint_cases.py``, as many as ``--dra-cases`` unless
given), then prints
the statement coverage per upstream default-profile plugin, the uncovered lines
(``oracle/upstream_coverage.py``) and last
``coverage: A % of default-profile plugin statements, lowest B % (PLUGIN)``; the exit code
is also 1 when a plugin is below ``--min-all`` (or, for a Filter or Score plugin, its
scheduling paths below ``--min-paths``), or with ``--floors FILE`` below its own minimums
(``oracle/coverage_floors.json``, what CI holds; ``--write-floors`` writes them from a run).
``--uncovered FILE`` writes every uncovered range with why (Markdown); ``--counters DIR``
keeps the counters (a later run into DIR adds to them).  With ``--kubernetes-version V``
(1.35 to 1.37) ``--coverage`` runs against ``oracle/bin/cover/vV/kube-oracle``
(``ORACLE_VERSIONS="V" bash oracle/build.sh --cover``), the cases drawn for V, and adds
``--podgroup-cases`` and ``--podgroup-schedule-cases`` of the podgroup family
(``oracle/podgroup_cases.py``: the gang and topology plugins); the table then lists V's
feature-gated plugins apart (``upstream_coverage.GATED``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import upstream_coverage as coverage
from batching_cases import batching_schedule_case
from cases import (
    case,
    dra_case,
    dra_schedule_case,
    schedule_case,
    storage_case,
    storage_schedule_case,
)
from compare import (
    DEFAULT_VERSION,
    POOL_ORDERS,
    VERSIONS,
    Oracle,
    OracleMissing,
    binary,
    compare,
    differences,
    one_of_pool_orders,
    ours,
    ours_schedule,
    schedule_differences,
    searches_pools,
    shrink,
)
from dra_hint_cases import dra_hint_case
from hint_cases import hint_case, hint_differences, ours_hints
from podgroup_cases import podgroup_case, podgroup_schedule_case
from storage_hint_cases import storage_hint_case
from tqdm import tqdm

# family -> verb -> generator (None: the verb's default one), called (seed, index, version).
FAMILIES: dict[str, dict[str, Any]] = {
    "default": {
        "explain": None,
        "schedule": None,
        "hints": hint_case,
    },
    "storage": {
        "explain": storage_case,
        "schedule": storage_schedule_case,
        "hints": lambda seed, i, version: storage_hint_case(seed, i),
    },
    "dra": {"explain": dra_case, "schedule": dra_schedule_case, "hints": dra_hint_case},
    "podgroup": {"explain": podgroup_case, "schedule": podgroup_schedule_case},
    "batching": {"schedule": batching_schedule_case},
}


def save(
    directory: Path, request: dict[str, Any], answer: dict[str, Any], origin: str, version: str
) -> Path:
    """One regression case: the request and upstream ``version``'s answer, named by content."""
    body = {"origin": origin, "request": request, "upstream": answer, "kubernetesVersion": version}
    text = json.dumps(body, indent=1, sort_keys=True)
    path = directory / f"case-{hashlib.sha256(text.encode()).hexdigest()[:12]}.json"
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")
    return path


class _Kept(logging.Handler):
    """Counts the records it is given instead of printing them."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def quiet_missing_references() -> _Kept:
    """Keep kubesched's missing-reference warnings (``PersistentVolumeClaim ... not found``,
    one per case that names a claim it lacks: the storage family makes such cases on
    purpose) off stderr; other warnings still print."""
    logger = logging.getLogger("kubesched.admission.references")
    kept = next((h for h in logger.handlers if isinstance(h, _Kept)), None)
    if kept is None:
        kept = _Kept()
        logger.addHandler(kept)
        logger.propagate = False
    return kept


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--verb", choices=["explain", "schedule", "hints"], default="explain")
    ap.add_argument(
        "--kubernetes-version",
        type=kubernetes_version,
        metavar="V",
        help=f"upstream's minor release, one of {', '.join(VERSIONS)} "
        f"(default: oracle/bin/kube-oracle, v{DEFAULT_VERSION})",
    )
    ap.add_argument("--cases", type=int, default=300, help="number of generated cases")
    ap.add_argument("--seed", type=int, default=1, help="generator seed (case i of seed S)")
    ap.add_argument("--start", type=int, default=0, help="first case index")
    ap.add_argument("--family", choices=sorted(FAMILIES), default="default", help="generator")
    ap.add_argument("--save", type=Path, help="write each shrunk mismatch into this folder")
    ap.add_argument("--show", type=int, default=20, help="mismatches printed in full")
    ap.add_argument(
        "--no-shrink",
        action="store_true",
        help="print (and --save) each mismatch as drawn: fast when most cases differ",
    )
    ap.add_argument(
        "--reask",
        type=int,
        default=3,
        metavar="N",
        help="schedule, and explain with ResourceSlices: on a difference, ask upstream up to "
        "N more times and accept any of its answers (0: upstream's first answer is the only "
        "one)",
    )
    ap.add_argument("--coverage", action="store_true", help="measure upstream's coverage")
    ap.add_argument("--dra-cases", type=int, help="with --coverage (default: cases / 10)")
    ap.add_argument("--schedule-cases", type=int, default=30, help="with --coverage")
    ap.add_argument("--dra-schedule-cases", type=int, default=30, help="with --coverage")
    ap.add_argument("--hint-cases", type=int, help="with --coverage (default: cases / 3)")
    ap.add_argument("--storage-hint-cases", type=int, help="with --coverage (default: cases / 3)")
    ap.add_argument("--dra-hint-cases", type=int, help="with --coverage (default: --dra-cases)")
    ap.add_argument("--storage-cases", type=int, help="with --coverage (default: cases / 3)")
    ap.add_argument("--storage-schedule-cases", type=int, default=30, help="with --coverage")
    ap.add_argument(
        "--podgroup-cases",
        type=int,
        help="with --coverage at 1.35 or newer (default: cases / 10)",
    )
    ap.add_argument(
        "--podgroup-schedule-cases",
        type=int,
        default=30,
        help="with --coverage at 1.35 or newer",
    )
    ap.add_argument("--min-all", type=float, default=90.0, help="%% of a plugin's statements")
    ap.add_argument("--min-paths", type=float, default=95.0, help="%% of its Filter/Score paths")
    ap.add_argument("--floors", type=Path, help="per-plugin minimums (JSON) instead of --min-*")
    ap.add_argument("--write-floors", type=Path, help="write this run's floors (JSON)")
    ap.add_argument("--uncovered", type=Path, help="write the uncovered ranges as Markdown")
    ap.add_argument(
        "--counters",
        type=Path,
        help="with --coverage: keep the counters in this folder (added to what it holds, so "
        "runs of one family at a time can be reported together)",
    )
    ap.add_argument(
        "--cover-oracle",
        type=Path,
        help="the instrumented kube-oracle (default: oracle/bin/cover/kube-oracle, with "
        "--kubernetes-version V oracle/bin/cover/vV/kube-oracle)",
    )
    args = ap.parse_args(argv)
    if args.cases < 0:
        ap.error("--cases must be >= 0")
    quiet_missing_references()
    if args.verb == "hints" and args.family not in ("default", "storage", "dra"):
        ap.error(
            "--verb hints draws the default family's objects (oracle/hint_cases.py) or, with "
            "--family storage, storage objects' changes (oracle/storage_hint_cases.py), or "
            "with --family dra, DRA objects' changes (oracle/dra_hint_cases.py)"
        )
    if args.family == "batching" and args.verb != "schedule":
        ap.error("--family batching has schedule cases only (--verb schedule)")
    if args.family == "podgroup" and (args.kubernetes_version or DEFAULT_VERSION) < "1.35":
        ap.error("--family podgroup needs --kubernetes-version 1.35 or newer (the Workload API)")
    if args.coverage:
        return with_coverage(args)
    try:
        oracle = Oracle(binary(args.kubernetes_version), args.verb)
    except OracleMissing as e:
        print(f"oracle: {e}", file=sys.stderr)
        return 2
    gen = FAMILIES[args.family][args.verb]
    mismatches = run(oracle, args, gen)
    print(f"oracle: {args.cases} cases, {mismatches} mismatches")
    return 0 if mismatches == 0 else 1


def with_coverage(args: argparse.Namespace) -> int:
    """The explain, DRA and schedule cases against the instrumented oracle, then the
    coverage report."""
    dra = args.cases // 10 if args.dra_cases is None else args.dra_cases
    hints = args.cases // 3 if args.hint_cases is None else args.hint_cases
    storage = args.cases // 3 if args.storage_cases is None else args.storage_cases
    storage_hints = args.cases // 3 if args.storage_hint_cases is None else args.storage_hint_cases
    dra_hints = dra if args.dra_hint_cases is None else args.dra_hint_cases
    version = args.kubernetes_version
    workloads = version is not None and version >= "1.35"
    podgroups = args.cases // 10 if args.podgroup_cases is None else args.podgroup_cases
    podgroup_schedules = args.podgroup_schedule_cases
    if not workloads:
        podgroups = podgroup_schedules = 0
    binary = args.cover_oracle or coverage.cover_binary(version)
    with tempfile.TemporaryDirectory(prefix="kube-oracle-cover-") as scratch:
        tmp = str(args.counters) if args.counters else scratch
        Path(tmp).mkdir(parents=True, exist_ok=True)
        env = coverage.cover_env(Path(tmp))
        # (verb, cases, generator, family: what a mismatch's origin line names)
        runs: list[tuple[str, int, Any, str]] = [
            ("explain", args.cases, case, "default"),
            ("explain", dra, dra_case, "dra"),
            ("schedule", args.schedule_cases, schedule_case, "default"),
            ("schedule", args.dra_schedule_cases, dra_schedule_case, "dra"),
            ("explain", storage, FAMILIES["storage"]["explain"], "storage"),
            ("schedule", args.storage_schedule_cases, FAMILIES["storage"]["schedule"], "storage"),
            ("hints", hints, FAMILIES["default"]["hints"], "default"),
            ("hints", storage_hints, FAMILIES["storage"]["hints"], "storage"),
            ("hints", dra_hints, dra_hint_case, "dra"),
            ("explain", podgroups, podgroup_case, "podgroup"),
            ("schedule", podgroup_schedules, podgroup_schedule_case, "podgroup"),
        ]
        total = 0
        for verb, n, gen, family in runs:
            try:
                oracle = Oracle(binary, verb, env, coverage.cover_hint(version))
            except OracleMissing as e:
                print(f"oracle: {e}", file=sys.stderr)
                return 2
            sub = argparse.Namespace(**{**vars(args), "verb": verb, "cases": n, "family": family})
            total += run(oracle, sub, gen)
        floors = json.loads(args.floors.read_text()) if args.floors else None
        rep = coverage.report([Path(tmp)], args.min_all, args.min_paths, floors, version)
        if args.uncovered:
            args.uncovered.write_text(coverage.markdown([Path(tmp)], version))
        if args.write_floors:
            rows = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(rep.floors().items())]
            args.write_floors.write_text("{\n" + ",\n".join(rows) + "\n}\n")
    n = args.cases + dra + args.schedule_cases + args.dra_schedule_cases + hints
    n += storage + args.storage_schedule_cases + storage_hints + dra_hints
    n += podgroups + podgroup_schedules
    groups = f", {podgroups} podgroup, {podgroup_schedules} podgroup schedule" if workloads else ""
    print(
        f"oracle: {n} cases ({args.cases} explain, {dra} DRA, {args.schedule_cases} schedule, "
        f"{args.dra_schedule_cases} DRA schedule, {storage} storage, "
        f"{args.storage_schedule_cases} storage schedule, {hints} hints, "
        f"{storage_hints} storage hints, {dra_hints} DRA hints{groups}), {total} mismatches"
        + (f" (Kubernetes {version})" if version else "")
    )
    print("\n".join(rep.lines[:-1]))
    if rep.below:
        what = (
            f"the floors of {args.floors}"
            if floors
            else (f"{args.min_all:g} % (paths {args.min_paths:g} %)")
        )
        print(f"below {what}: {', '.join(rep.below)}")
    print(rep.lines[-1])
    return 0 if total == 0 and not rep.below else 1


def save_schedule(
    oracle: Oracle, args: argparse.Namespace, request: dict[str, Any], i: int, version: str | None
) -> None:
    """A schedule mismatch as a regression case: shrunk (unless ``--no-shrink``), with both
    answers' differences printed."""

    def differs(r: dict[str, Any]) -> bool:
        # Upstream answering with an error (a run that never settles, as with no node at all)
        # is a smaller case about something else: only the original may have one.
        theirs = oracle.ask(r)
        if "error" in theirs and "error" not in first:
            return False
        return bool(schedule_differences(ours_schedule(r, version), theirs))

    first = oracle.ask(request)

    small = request if args.no_shrink else shrink(request, differs)
    answer = oracle.ask(small)
    for line in schedule_differences(ours_schedule(small, version), answer)[:8]:
        tqdm.write(f"  {line}")
    flag = f" --kubernetes-version {version}" if version else ""
    if args.family != "default":
        flag += f" --family {args.family}"
    origin = f"oracle/diff.py --verb schedule{flag} --seed {args.seed} --start {i} --cases 1"
    path = save(args.save, small, answer, origin, version or DEFAULT_VERSION)
    tqdm.write(f"  saved {path}")


def kubernetes_version(value: str) -> str:
    """``--kubernetes-version``: ``1.37``, ``v1.37`` or ``v1.37.N``, as the minor release."""
    minor = ".".join(value.removeprefix("v").split(".")[:2])
    if minor not in VERSIONS:
        raise argparse.ArgumentTypeError(f"{value!r}: not one of {', '.join(VERSIONS)}")
    return minor


def run(oracle: Oracle, args: argparse.Namespace, gen: Any = None) -> int:
    """The mismatches of ``args.cases`` cases (``gen``, else the verb's generator)."""
    version = getattr(args, "kubernetes_version", None)
    mismatches = varied = 0
    ways: dict[str, int] = {}  # schedules: why upstream's answer counted as varied -> count
    with oracle:
        indices = range(args.start, args.start + args.cases)
        for i in tqdm(indices, desc="oracle", unit="case", file=sys.stderr, mininterval=2):
            if args.verb == "hints":
                request = (gen or FAMILIES["default"]["hints"])(args.seed, i, version)
                lines = hint_differences(ours_hints(request, version), oracle.ask(request))
                if lines:
                    mismatches += 1
                    if mismatches <= args.show:
                        tqdm.write(f"case {i} (seed {args.seed}): " + "; ".join(lines[:6]))
                        tqdm.write("  request: " + json.dumps(request)[:2000])
                    if args.save:
                        flag = f" --kubernetes-version {version}" if version else ""
                        if args.family != "default":
                            flag += f" --family {args.family}"
                        origin = (
                            f"oracle/diff.py --verb hints{flag} --seed {args.seed} "
                            f"--start {i} --cases 1"
                        )
                        answer = oracle.ask(request)
                        path = save(args.save, request, answer, origin, version or DEFAULT_VERSION)
                        tqdm.write(f"  saved {path}")
                continue
            if args.verb == "schedule":
                request = (
                    gen(args.seed, i, version) if gen else schedule_case(args.seed, i, version)
                )
                mine = ours_schedule(request, version)
                theirs = oracle.ask(request)
                lines = schedule_differences(mine, theirs)
                why = (
                    varied_schedule(oracle, request, version, mine, theirs, args.reask)
                    if lines and args.reask
                    else None
                )
                if why is not None:
                    varied += 1
                    ways[why] = ways.get(why, 0) + 1
                    tqdm.write(f"case {i} (seed {args.seed}): {VARIED[why]}")
                    continue
                if lines:
                    mismatches += 1
                    tqdm.write(f"case {i} (seed {args.seed}): " + "; ".join(lines[:6]))
                    if args.save:
                        save_schedule(oracle, args, request, i, version)
                continue
            request = gen(args.seed, i, version) if gen else case(args.seed, i, version)
            mine = ours(request, version)
            theirs = oracle.ask(request)
            lines = differences(mine, theirs)
            if (
                lines
                and args.reask
                and one_of_pool_orders(oracle, request, version, mine, theirs, args.reask)
            ):
                varied += 1
                tqdm.write(
                    f"case {i} (seed {args.seed}): upstream answered otherwise when asked "
                    "again, or kubesched did with the device pools in another order, and "
                    "once as the other does"
                )
                continue
            if not lines:
                continue
            mismatches += 1
            small, label = request, "request"
            if not getattr(args, "no_shrink", False):
                label = "shrunk"
                small = shrink(request, lambda r: bool(compare(oracle, r, version)))
                lines = compare(oracle, small, version)
            flag = f" --kubernetes-version {version}" if version else ""
            if args.family != "default":
                flag += f" --family {args.family}"
            origin = f"oracle/diff.py{flag} --seed {args.seed} --start {i} --cases 1"
            if mismatches <= args.show:
                tqdm.write(f"case {i} (seed {args.seed}): {len(lines)} difference(s)")
                for line in lines[:8]:
                    tqdm.write(f"  {line}")
                if mismatches == 1 or args.save:
                    tqdm.write(f"  {label}: " + json.dumps(small)[:2000])
            if args.save:
                answer = oracle.ask(small)
                path = save(args.save, small, answer, origin, version or DEFAULT_VERSION)
                tqdm.write(f"  saved {path}")
    if varied:
        what = "schedules" if args.verb == "schedule" else "cases"
        how = ", ".join(f"{n} {why}" for why, n in sorted(ways.items()))
        print(
            f"oracle: {varied} {what} where upstream's answer varied, kubesched's among them"
            + (f" ({how})" if how else "")
        )
    return mismatches


VARIED = {
    "asked again": "upstream answered otherwise when asked again, once as kubesched does",
    "release order": "kubesched, with the Pods one event releases requeued in another order "
    "(upstream: a Go map's walk), answers as upstream did",
    "scheduler seed": "kubesched, with its random draws from another seed (a preemption dry "
    "run's offset, which decides among candidates tied on every criterion; ties among "
    "top-scored nodes), answers as upstream did",
    "pool order": "kubesched, with each node's device pools searched in another order "
    "(upstream: a Go map's walk), answers as upstream did",
}
"""Why a schedule that differed counts as one of upstream's answers (``varied_schedule``),
as the campaign prints it: each a way upstream's own answer varies run to run."""


def varied_schedule(
    oracle: Oracle,
    request: dict[str, Any],
    version: str | None,
    mine: dict[str, Any],
    theirs: dict[str, Any],
    tries: int,
) -> str | None:
    """Why kubesched's schedule, which differs from upstream's answer ``theirs``, is one of
    upstream's answers all the same (a key of :data:`VARIED`), or None: upstream, asked again
    up to ``tries`` times, answered as kubesched does; or kubesched, with one of upstream's
    random choices drawn otherwise, answers as upstream did in one of its answers."""
    answers = [theirs]
    if one_of_upstreams(oracle, request, mine, tries, answers):
        return "asked again"
    if one_release_order(request, version, answers, RELEASE_ORDERS):
        return "release order"
    if one_scheduler_seed(request, version, answers, SCHEDULER_SEEDS):
        return "scheduler seed"
    if searches_pools(request) and one_pool_order(request, version, answers, POOL_ORDERS):
        return "pool order"
    return None


def one_of_upstreams(
    oracle: Oracle,
    request: dict[str, Any],
    mine: dict[str, Any],
    tries: int,
    answers: list[dict[str, Any]] | None = None,
) -> bool:
    """Whether upstream, asked ``request`` up to ``tries`` more times, ever answers as
    ``mine`` does (each answer appended to ``answers``).  Upstream's schedule is not always
    deterministic (Pods released by one event leave its queue in Go map order; goroutines
    race for a freed node), so a schedule kubesched answers as one of upstream's runs does
    is no mismatch."""
    for _ in range(tries):
        theirs = oracle.ask(request)
        if answers is not None:
            answers.append(theirs)
        if not schedule_differences(mine, theirs):
            return True
    return False


RELEASE_ORDERS = 12
"""How many release orders ``one_release_order`` draws."""


def one_release_order(
    request: dict[str, Any], version: str | None, answers: list[dict[str, Any]], orders: int
) -> bool:
    """Whether kubesched, with the Pods one event releases from the unschedulable pool
    requeued in an order drawn from seed 1..``orders`` (``kubesched.schedule``'s
    ``release_seed``: upstream walks a Go map there, a different order each run), answers
    as upstream did in one of ``answers``."""
    for seed in range(1, orders + 1):
        mine = ours_schedule(request, version, release_seed=seed)
        if any(not schedule_differences(mine, theirs) for theirs in answers):
            return True
    return False


SCHEDULER_SEEDS = 16
"""How many seeds of the scheduler's random draws ``one_scheduler_seed`` tries."""


def one_scheduler_seed(
    request: dict[str, Any], version: str | None, answers: list[dict[str, Any]], seeds: int
) -> bool:
    """Whether kubesched, with its random draws from seed 1..``seeds`` (``kubesched.schedule``'s
    ``seed``: which of equally scored nodes a Pod takes, the offset a preemption's dry run
    starts from), answers as upstream did in one of ``answers``.  Upstream draws them anew
    each run, and among preemption candidates tied on every criterion takes the first of a
    walk of a Go map filled in the dry run's order (v1.37 seed 1 case 108: a
    ``disruptionMode: all`` victim group on both candidate nodes)."""
    for seed in range(1, seeds + 1):
        mine = ours_schedule(request, version, seed=seed)
        if any(not schedule_differences(mine, theirs) for theirs in answers):
            return True
    return False


def one_pool_order(
    request: dict[str, Any], version: str | None, answers: list[dict[str, Any]], orders: int
) -> bool:
    """Whether kubesched, with each node's device pools searched in an order drawn from
    seed 1..``orders`` (``kubesched.schedule``'s ``pool_seed``: upstream's ``GatherPools``
    walks a Go map), answers as upstream did in one of ``answers``: which devices a Pod's
    allocation takes decides where another Pod sharing the claim may go."""
    for seed in range(1, orders + 1):
        mine = ours_schedule(request, version, pool_seed=seed)
        if any(not schedule_differences(mine, theirs) for theirs in answers):
            return True
    return False


if __name__ == "__main__":
    sys.exit(main())
