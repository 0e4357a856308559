"""Upstream's statement coverage of a differential run (``oracle/diff.py --coverage``).

``oracle/build.sh --cover`` builds ``oracle/bin/cover/kube-oracle`` with Go's coverage
instrumentation over ``k8s.io/kubernetes/pkg/scheduler/...``; run with ``GOCOVERDIR`` it
writes counters when it exits.  ``report(dirs)`` merges them (``go tool covdata textfmt``
and ``func``) and measures, per upstream default-profile plugin of v1.34 and for the
framework runtime and preemption, the share of statements executed:

- ``all``: every statement of the plugin's files;
- ``paths``: its scheduling paths, every function but the queueing hints
  (``EventsToRegister``, ``isSchedulableAfter*`` and the helpers only they call), which run
  when a cluster event requeues a Pod: in ``kube-oracle hints`` (``oracle/hint_cases.py``)
  and ``kube-oracle schedule``.

The volume plugins (the storage family's, ``oracle/storage_cases.py``) are listed apart:
they count in neither the summary line's total nor its lowest, and only ``--floors`` holds
them (to their own minimums).  The last line is exactly
``coverage: A % of default-profile plugin statements, lowest B % (PLUGIN)``.

Every release v1.34 to v1.37 has its instrumented build (``ORACLE_VERSIONS="1.37" bash
oracle/build.sh --cover``: ``oracle/bin/cover/vV/kube-oracle``, ``cover_binary``).  At a
later release the table adds the plugins a feature gate puts into the default profile
(``GATED``: NodeDeclaredFeatures, GangScheduling, TopologyPlacementGenerator,
PodGroupPodsCount, DeferredPodScheduling), listed apart like the volume plugins, and the
upstream source the reasons read is that release's; the line-numbered reasons
(``BLOCK_REASONS``, ``BLOCK_SPANS``) are v1.34.4's and apply at v1.34 only, so a later
release's uncovered blocks take the name and guard rules alone (``open`` where those say
nothing).
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
DEFAULT_VERSION = "1.34"  # the release of COVER_BINARY and of BLOCK_REASONS' lines


def cover_binary(version: str | None) -> Path:
    """The instrumented kube-oracle of minor release ``version`` (None: the default's)."""
    if version is None or version == DEFAULT_VERSION:
        return COVER_BINARY
    return ROOT / "bin" / "cover" / f"v{version}" / "kube-oracle"


def cover_hint(version: str | None) -> str:
    """How to build ``cover_binary(version)``."""
    if version is None or version == DEFAULT_VERSION:
        return COVER_HINT
    return (
        f'ORACLE_VERSIONS="{version}" bash oracle/build.sh --cover '
        f"(builds oracle/bin/cover/v{version}/kube-oracle)"
    )


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
STORAGE: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "VolumeRestrictions": ("framework/plugins/volumerestrictions", None),
    "NodeVolumeLimits": ("framework/plugins/nodevolumelimits", None),
    "VolumeBinding": ("framework/plugins/volumebinding", None),
    "VolumeZone": ("framework/plugins/volumezone", None),
}
STORAGE_PACKAGES = {package for package, _ in STORAGE.values()}
# Plugins a feature gate adds to the default profile after v1.34: name -> (package, files,
# the first minor release that has it).  NodeDeclaredFeatures (NodeDeclaredFeatures gate),
# GangScheduling (GangScheduling at v1.35 and v1.36, GenericWorkload at v1.37),
# TopologyPlacementGenerator and PodGroupPodsCount (TopologyAwareWorkloadScheduling),
# DeferredPodScheduling (InPlacePodVerticalScalingSchedulerPreemption).
GATED: dict[str, tuple[str, tuple[str, ...] | None, str]] = {
    "NodeDeclaredFeatures": ("framework/plugins/nodedeclaredfeatures", None, "1.35"),
    "GangScheduling": ("framework/plugins/gangscheduling", None, "1.35"),
    "TopologyPlacementGenerator": ("framework/plugins/topologyaware", None, "1.36"),
    "PodGroupPodsCount": ("framework/plugins/podgrouppodscount", None, "1.36"),
    "DeferredPodScheduling": ("framework/plugins/deferredpodscheduling", None, "1.37"),
}


def gated(version: str | None) -> dict[str, tuple[str, tuple[str, ...] | None]]:
    """``GATED``'s plugins that minor release ``version`` has (None: the default's)."""
    minor = int((version or DEFAULT_VERSION).split(".")[1])
    return {
        name: (package, files)
        for name, (package, files, since) in GATED.items()
        if minor >= int(since.split(".")[1])
    }


FRAMEWORK: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "plugin helpers": ("framework/plugins/helper", None),
    "framework runtime": ("framework/runtime", None),
    "preemption": ("framework/preemption", None),
}
# Files compiled into a plugin package that are not the plugin: test helpers (VolumeBinding's
# FakeVolumeBinder and its PV/PVC/Node builders), which no scheduler path calls.
NOT_PLUGIN_FILES = {"test_util.go", "fake_binder.go", "test_utils.go"}
# Helpers only queueing hints call (beyond EventsToRegister and isSchedulableAfter*).
HINT_HELPERS = {
    "noderesources": {"haveAnyRequestedResourcesIncreased", "isFit"},
    "volumezone": {"isPVCRequestedFromPod"},
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


_REASONS = {
    "hint": "queueing hint left by the hint cases (oracle/hint_cases.py, and "
    "oracle/dra_hint_cases.py for DRA objects): the type assertion of an object that is "
    "always of the registered kind, the registration without "
    "SchedulerQueueingHints (GA), another Pod's update no Pod can make (a scheduling gate "
    "removed from another Pod: the queue hands an unscheduled Pod's update to that Pod's "
    "hints only, and a bound Pod has no gates), a feature gate's branch",
    "gate": "a branch for a feature gate in a state the run never sets: one v1.34 locks "
    "(DynamicResourceAllocation and SidecarContainers are GA: the plugin is always enabled), "
    "or a default no generator changes",
    "unmodelled": "DRAConsumableCapacity (alpha at v1.34): shared devices and consumed "
    "capacity, drawn in about one v1.34 DRA case in ten (oracle/dra_features.py, "
    "one_device_each: v1.34's allocator checks the device at the request's device index), "
    "and a run drawing too few leaves some",
    "wait": "PreBind's wait for binding conditions not met yet: it polls every 5 s for up to "
    "10 minutes and ends in an error (a failure condition, the timeout); the schedule cases "
    "draw met conditions only (kubesched binds at once, docs/fidelity.md)",
    "error": "an error return of a read that cannot fail here (a CycleState key the plugin's "
    "own PreFilter/PreScore wrote, a snapshot lister, a Pod or args already validated)",
    "clone": "a state Clone nothing calls (preemption clones the CycleState's PreFilter "
    "states only)",
    "new": "constructor branches for args or feature gates upstream's validation or defaults "
    "rule out",
    "exported": "exported for other callers (the kubelet's admission), not the scheduler",
    "log": "verbose logging (klog V(10), off in kube-oracle)",
    "bind": "a binding refused: the schedule cases' bindFaults (oracle/cases.py, bind_faults: "
    "the binding subresource refuses a Pod) reach the clientset's and the API dispatcher's "
    "refusal when a run's faulted Pod fits (CI's 30 schedules of seed 1 reach the "
    "clientset's only: few Pods bind with SchedulerAsyncAPICalls on); BindPod's error is "
    "unreachable (the dispatcher's add fails unexpectedly only on a failed merge or a no-op, "
    "and a binding call always merges and is never a no-op)",
    "dead": "unreachable by construction: NodeName's Filter rejection (the scheduler only "
    "schedules Pods without spec.nodeName), NodeAffinity PreFilter's last return (the node "
    "name set is never nil after a term), least/mostRequestedScore of a zero capacity (their "
    "scorers skip such resources), a nil shared lister, NormalizeScore or Filter after a "
    "PreScore or PreFilter that skips, PreScore without nodes; the volume plugins' branches "
    "their own PreFilter or the API server rules out (a Filter for a Pod PreFilter skipped, "
    "a claim without a class to provision, an untranslatable inline kind, test-only sorting)",
    "fault": "the binding cycle's failure side no declared fault reaches: the DRA schedule "
    "cases' claimFaults (oracle/dra_faults.py: a status or finalizer write refused, a "
    "Conflict, a claim allocated elsewhere meanwhile; docs/fidelity.md) reach what a run "
    "draws; none declares a claim deleted between Reserve and PreBind, the extended-resource "
    "claim's creation or the Pod's status patch refused, deleteClaim's update or delete "
    "failing or conflicting, or AssumeClaimAfterAPICall refusing (an informer ahead of the "
    "write), and a run of few DRA schedule cases (CI's 80) draws only some of the declared "
    "ones",
    "race": "a concurrency window: another Pod's allocation in flight at the instant "
    "PreFilter lists the allocated devices, or the device set changing while it does "
    "(timing, not drawable)",
    "event": "a ResourceClaim deletion event (the resourceclaim controller deletes a "
    "finished Pod's claims; kube-oracle plays no such controller, and its hints verb asks "
    "the hint functions, not the informers' handlers)",
    "deviation": "DynamicResources' filterTimeout (10 s of allocator search per node): "
    "kubesched does not model it (docs/fidelity.md) and the DRA family keeps pools small",
    "storage-hint": "a volume plugin's queueing hint's error return for an object of another "
    "kind than it registered (util.As): the queue hands each hint its own resource's objects "
    "only (oracle/storage_hint_cases.py reaches the hints' other branches)",
    "volume-fault": "VolumeBinding's binding cycle waiting on or failing after the PV "
    "controller: the storage schedule cases' volumeFaults (a write refused, a claimRef reset, "
    "a provisioning given up, a binding after the first check: docs/fidelity.md), on the "
    "drawn PVs and on the static PVs storage_extras.static_volumes adds for a claim, reach "
    "those a run draws; no fault declares the rest (nil bindings AssumePodVolumes never "
    "leaves, the Node, Pod, PV or claim deleted between Reserve and PreBind, an informer "
    "behind the write, a translation failure, a provisioned PV missing or failing the node), "
    "and a run of few schedule cases (CI's 30) draws only some of the declared ones; "
    "Unreserve of a Pod without volumes on the node is reached by the default schedules' "
    "bindFaults when a run's refused Pod fits",
    "volume-score": "VolumeBinding's Score with StorageCapacityScoring on (grouping the "
    "Pod's volumes by class, or nothing to group): reachable, the storage family draws the "
    "gate (oracle/storage_extras.py), but not every such shape (not done)",
    "open": "reachable: not yet drawn by oracle/cases.py",
}


# Functions whose uncovered blocks share one reason whatever guards them.
FUNCTION_REASONS = {
    "PreEnqueue": "gate",  # DefaultPreemption: SchedulerAsyncPreemption, off in explain
    "Bind": "bind",  # DefaultBinder's error returns (schedule_case's bindFaults)
    "Fits": "exported",
    "hasRestartableInitContainer": "hint",
    "involvedInTopologySpreading": "hint",
    "hasConstraintWithNodeTaintsPolicyHonor": "hint",
    "checkTopologyKeyLabelsChanged": "hint",
    "podLabelsMatchSpreadConstraints": "hint",
    # DynamicResources (the DRA family turns v1.34's alpha gates on, oracle/dra_alpha.py):
    # what is left of DRAConsumableCapacity and the binding cycle's failure side.
    "Capacities": "unmodelled",
    # with the gate on: the revision checks and claims in flight at the instant it runs
    "GatherAllocatedState": "race",
    "getInitialExtendedResourceClaimUID": "fault",  # Unreserve's
    "Unreserve": "fault",
    "allUserClaims": "fault",  # Unreserve's
    "AssumedClaimRestore": "fault",  # Unreserve's
    "onDelete": "event",
}
# Blocks whose guard the name and source rules misread: (file under plugins/, first line)
# of upstream v1.34.4 -> reason.
BLOCK_REASONS = {
    ("nodename/node_name.go", 74): "dead",
    ("nodeaffinity/node_affinity.go", 195): "dead",
    ("noderesources/least_allocated.go", 53): "dead",
    ("noderesources/most_allocated.go", 55): "dead",
    ("interpodaffinity/scoring.go", 135): "dead",  # the shared lister is always set
    ("interpodaffinity/scoring.go", 263): "dead",  # PreScore skips without a topology score
    ("podtopologyspread/filtering.go", 320): "dead",  # PreFilter skips without constraints
    ("podtopologyspread/scoring.go", 129): "dead",  # a cycle without nodes ends before
    ("podtopologyspread/filtering.go", 191): "gate",  # NodeInclusionPolicy... (GA, on)
    ("podtopologyspread/filtering.go", 262): "gate",
    ("noderesources/resource_allocation.go", 57): "error",  # resources validated non-empty
    ("nodeaffinity/node_affinity.go", 275): "error",  # the Pod's affinity already parsed
}


# DynamicResources' and the volume plugins' uncovered spans by why: (file under plugins/,
# first line, last line) of upstream v1.34.4 -> reason; a block starting inside a span takes
# its reason.
F_ALLOC, F_CLAIMS = "dynamicresources/allocateddevices.go", "dynamicresources/claims.go"
F_MANAGER, F_DRA = "dynamicresources/dra_manager.go", "dynamicresources/dynamicresources.go"
F_VR, F_NVL = "volumerestrictions/volume_restrictions.go", "nodevolumelimits/csi.go"
F_LIMITS, F_CACHE = "nodevolumelimits/utils.go", "volumebinding/assume_cache.go"
F_BINDER, F_BINDING = "volumebinding/binder.go", "volumebinding/volume_binding.go"
F_SCORER, F_ZONE = "volumebinding/scorer.go", "volumezone/volume_zone.go"
BLOCK_SPANS: list[tuple[str, int, int, str]] = [
    (F_ALLOC, 46, 48, "dead"),  # callers pass allocated claims only
    (F_ALLOC, 66, 76, "unmodelled"),  # shared devices
    (F_ALLOC, 189, 191, "dead"),  # callers check the allocation first
    (F_ALLOC, 197, 215, "unmodelled"),  # shared-device and consumed-capacity callbacks
    (F_ALLOC, 227, 232, "unmodelled"),  # share IDs and capacities: empty without the gate
    (F_ALLOC, 236, 238, "event"),  # a deleted claim that was never allocated
    (F_ALLOC, 245, 248, "unmodelled"),
    (F_ALLOC, 250, 263, "unmodelled"),
    (F_ALLOC, 274, 279, "unmodelled"),
    (F_CLAIMS, 99, 101, "dead"),  # no caller stops the iteration early
    (F_CLAIMS, 135, 137, "dead"),  # PreFilter put the special claim last
    (F_MANAGER, 232, 246, "race"),
    (F_DRA, 568, 570, "error"),  # preFilterExtendedResources' listers
    (F_DRA, 584, 587, "dead"),  # resourceclaim.CanBeReserved is always true (v1.34)
    (F_DRA, 640, 641, "error"),  # API validation: exactly or firstAvailable
    # GatherAllocatedState's retry after a concurrent modification, and a nil state it
    # never returns
    (F_DRA, 672, 686, "race"),
    (F_DRA, 694, 694, "error"),
    (F_DRA, 733, 735, "error"),  # API validation: a request names a class
    (F_DRA, 830, 836, "dead"),  # an allocated special claim has requests: stale, above
    (F_DRA, 875, 876, "dead"),  # only resources the mapping names get here
    (F_DRA, 926, 928, "dead"),  # PreFilter skips a Pod without claims
    (F_DRA, 1000, 1001, "deviation"),
    (F_DRA, 1002, 1003, "race"),  # the scheduler's context cancelled mid-search
    # the special claim is in the unavailable set only when allocated, and then it is
    # stale: Filter rejected it before any node check
    (F_DRA, 1085, 1090, "dead"),
    (F_DRA, 1111, 1113, "fault"),  # deleting the stale claim fails
    (F_DRA, 1166, 1171, "error"),  # Filter stored the node's allocation
    (F_DRA, 1175, 1175, "error"),
    (F_DRA, 1180, 1182, "error"),
    (F_DRA, 1283, 1288, "fault"),  # deleteClaim's retry after a conflict
    (F_DRA, 1299, 1312, "fault"),  # deleteClaim's update or delete failing
    (F_DRA, 1369, 1376, "wait"),
    (F_DRA, 1480, 1491, "race"),  # the created claim not in the assume cache yet
    (F_DRA, 1493, 1495, "fault"),  # AssumeClaimAfterAPICall failing
    (F_DRA, 1511, 1513, "dead"),  # Filter stored the node's special claim
    (F_DRA, 1521, 1523, "fault"),  # creating the special claim fails
    (F_DRA, 1528, 1530, "dead"),  # the special claim is in the store
    (F_DRA, 1541, 1561, "fault"),  # retry after a conflict, deleted or allocated meanwhile
    (F_DRA, 1568, 1570, "fault"),  # the finalizer update failing
    (F_DRA, 1584, 1588, "fault"),  # UpdateStatus failing
    (F_DRA, 1610, 1612, "fault"),  # patching the Pod's status fails
    (F_DRA, 1625, 1627, "dead"),  # Filter and PreBind ask about allocated claims only
    (F_DRA, 1659, 1661, "dead"),  # callers check both gates first
    (F_DRA, 1685, 1687, "error"),  # the claim PreBind just wrote
    (F_DRA, 1690, 1697, "wait"),
    # The volume plugins (upstream v1.34.4's lines as for DynamicResources above).
    (F_VR, 180, 180, "error"),  # a claim lister error other than NotFound
    (F_VR, 285, 287, "dead"),  # Filter returned on a missing state before
    (F_NVL, 257, 259, "dead"),  # PreFilter skips a Pod without volumes
    (F_NVL, 374, 376, "error"),  # API validation: a claim volume names its claim
    (F_NVL, 444, 446, "dead"),  # every inline-migratable kind translates to a CSI source
    (F_NVL, 496, 499, "error"),  # the plugin name of a PV IsPVMigratable accepted
    (F_NVL, 596, 598, "error"),  # API validation: a VolumeAttachment names its attacher
    (F_LIMITS, 41, 43, "gate"),  # CSIMigrationPortworx: GA, locked on since v1.33
    (F_CACHE, 38, 38, "dead"),  # the PV index only ever sees PVs
    (F_BINDER, 59, 61, "dead"),  # nothing in the scheduler sorts ConflictReasons
    (F_BINDER, 84, 103, "volume-score"),  # StorageClassName, StorageResource: Score's
    (F_BINDER, 515, 566, "volume-fault"),  # bindAPIUpdate's failures
    (F_BINDER, 590, 711, "volume-fault"),  # checkBindings
    (F_BINDER, 915, 917, "dead"),  # a claim without a class is immediate: PreFilter rejects
    (F_BINDER, 985, 985, "error"),  # a CSIDriver lister error other than NotFound
    (F_BINDING, 460, 460, "dead"),  # a scorer exists only with StorageCapacityScoring on
    (F_BINDING, 465, 467, "dead"),  # PreScore skips without a scorer
    (F_BINDING, 479, 511, "volume-score"),
    (F_BINDING, 561, 561, "gate"),  # PreBindPreFlight: NominatedNodeNameForExpectation off
    (F_BINDING, 596, 606, "volume-fault"),  # Unreserve after a failed PreBind
    (F_SCORER, 30, 54, "volume-score"),
    (F_ZONE, 131, 133, "error"),  # API validation: a claim volume names its claim
    (F_ZONE, 150, 152, "error"),  # the API server defaults volumeBindingMode
    (F_ZONE, 258, 258, "error"),  # a lister error other than NotFound
]


def reason(block: Block, source: list[str] | None, version: str | None = None) -> str:
    """Why ``block`` is uncovered, one of ``_REASONS``' keys, from its function's name and
    the lines that guard it (``source``: the file's lines, when the module cache has it);
    the line-numbered tables only at the release they were read at (``version`` None or
    ``DEFAULT_VERSION``)."""
    numbered = version is None or version == DEFAULT_VERSION
    name = block.function.rsplit(".", 1)[-1]
    if is_hint(_package(block.file), block.function):
        if _package(block.file).removeprefix(SCHED) in STORAGE_PACKAGES:
            return "storage-hint"
        return "hint"
    if name == "Clone":
        return "clone"
    if numbered and (block.file.removeprefix(PLUGINS), block.start) in BLOCK_REASONS:
        return BLOCK_REASONS[(block.file.removeprefix(PLUGINS), block.start)]
    for file, first, last, why in BLOCK_SPANS if numbered else ():
        if block.file.removeprefix(PLUGINS) == file and first <= block.start <= last:
            return why
    guard = ""
    if source:
        guard = " ".join(source[max(0, block.start - 3) : block.start]).lower()
    if name in FUNCTION_REASONS:
        return FUNCTION_REASONS[name]
    if "loggerv" in guard:
        return "log"
    if any(w in guard for w in ("err != nil", "!ok", "!status.issuccess()", "s == nil")):
        return "error"
    if "enable" in guard or "feature" in guard:
        return "gate"
    if name.startswith("New") or name == "getArgs":
        return "new"
    return "open"


def _sources(version: str | None = None) -> dict[str, list[str]]:
    """The upstream files under pkg/scheduler/ of minor release ``version`` (None: the
    default's) by import path, read from the module cache (empty when Go or the module is
    missing)."""
    modfile = []
    if version is not None and version != DEFAULT_VERSION:
        modfile = [f"-modfile=versions/v{version}/go.mod"]
    try:
        top = _go("list", *modfile, "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").strip()
    except (OSError, subprocess.CalledProcessError):
        return {}
    out: dict[str, list[str]] = {}
    base = Path(top) / "pkg" / "scheduler"
    for path in base.rglob("*.go"):
        rel = path.relative_to(base).as_posix()
        out[SCHED + rel] = path.read_text().splitlines()
    return out


def markdown(dirs: list[Path], version: str | None = None) -> str:
    """Every uncovered range of the default-profile plugins (and of the volume plugins and
    ``version``'s gated ones), with why (``reason``), as a Markdown list grouped by plugin
    and reason."""
    blocks = load(dirs)
    sources = _sources(version)
    out = []
    tables = [*rows(blocks, DEFAULT_PLUGINS), *rows(blocks, STORAGE)]
    for row in [*tables, *rows(blocks, gated(version))]:
        by_reason: dict[str, list[str]] = defaultdict(list)
        counts: dict[str, int] = defaultdict(int)
        spans: list[tuple[str, str, str, int, int]] = []  # why, file, function, start, end
        for b in sorted(row.blocks, key=lambda b: (b.file, b.start)):
            if b.covered:
                continue
            why = reason(b, sources.get(b.file), version)
            counts[why] += b.statements
            last = spans[-1] if spans else None
            if last and last[:3] == (why, b.file, b.function) and b.start <= last[4] + 1:
                spans[-1] = (*last[:3], last[3], max(last[4], b.end))
            else:
                spans.append((why, b.file, b.function, b.start, b.end))
        for why, file, function, start, end in spans:
            by_reason[why].append(f"`{file.removeprefix(PLUGINS)}:{start}-{end}` {function}")
        if not by_reason:
            continue
        c, t = row.share()
        out.append(f"- **{row.name}** ({_pct(c, t):.1f} %)")
        for why in _REASONS:
            if by_reason.get(why):
                head = f"  - {_REASONS[why]} ({counts[why]} statements): "
                out.append(head + ", ".join(by_reason[why]))
    return "\n".join(out) + "\n"


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
    shares: dict[str, tuple[float, float]]  # plugin: (all, paths) in %

    def floors(self, margin: float = 3.0) -> dict[str, list[float]]:
        """Per-plugin minimums ``margin`` points under this run's, whole percents (for
        ``--floors``: the schedule cases run in wall-clock time, so what they reach varies
        between runs; DynamicResources by up to 2 points)."""
        return {
            name: [max(0.0, float(int(a) - margin)), max(0.0, float(int(p) - margin))]
            for name, (a, p) in self.shares.items()
        }


def report(
    dirs: list[Path],
    min_all: float = 90.0,
    min_paths: float = 95.0,
    floors: dict[str, list[float]] | None = None,
    version: str | None = None,
) -> Report:
    """The coverage table, the uncovered lines and the summary line of the counters in
    ``dirs`` (of minor release ``version``'s build; None: the default's); ``below`` names
    each plugin under ``min_all`` (all statements) or, for a Filter or Score plugin, under
    ``min_paths`` (its scheduling paths); with ``floors`` (plugin: [all, paths]) each
    plugin under its own instead.  ``version``'s gated plugins (``gated``) are listed apart,
    held only by ``floors``."""
    blocks = load(dirs)
    plugins = rows(blocks, DEFAULT_PLUGINS)
    lines = [f"{'':33} {'statements':>10} {'all':>7} {'paths':>7}  uncovered"]
    below = []
    shares: dict[str, tuple[float, float]] = {}

    def line(row: Row, note: str = "") -> None:
        c, t = row.share()
        pc, pt = row.share(hints=False)
        gaps = len(row.uncovered())
        text = f"{row.name:33} {t:>10} {_pct(c, t):>6.1f}% {_pct(pc, pt):>6.1f}%  {gaps:>4} ranges"
        lines.append(text + (f"  {note}" if note else ""))

    for row in plugins:
        c, t = row.share()
        pc, pt = row.share(hints=False)
        low_all, low_paths = min_all, min_paths if row.name in FILTER_SCORE else 0.0
        if floors is not None:
            low_all, low_paths = floors.get(row.name, [0.0, 0.0])
        if _pct(c, t) < low_all or _pct(pc, pt) < low_paths:
            below.append(row.name)
        shares[row.name] = (_pct(c, t), _pct(pc, pt))
        line(row)
    for row in rows(blocks, FRAMEWORK):
        line(row, "(not a plugin)")
    apart = [
        (rows(blocks, STORAGE), "(storage family: not in the summary line)"),
        (rows(blocks, gated(version)), "(feature-gated: not in the summary line)"),
    ]
    for table, note in apart:
        for row in table:
            c, t = row.share()
            pc, pt = row.share(hints=False)
            if floors is not None and row.name in floors:
                low_all, low_paths = floors[row.name]
                if _pct(c, t) < low_all or _pct(pc, pt) < low_paths:
                    below.append(row.name)
            shares[row.name] = (_pct(c, t), _pct(pc, pt))
            line(row, note)
    lines.append("")
    extra = [row for table, _ in apart for row in table]
    for row in [*plugins, *rows(blocks, FRAMEWORK), *extra]:
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
    return Report(lines, total, lowest, below, shares)


def cover_env(directory: Path) -> dict[str, str]:
    """The environment of an instrumented kube-oracle writing into ``directory``."""
    return {**os.environ, "GOCOVERDIR": str(directory)}
