"""Upstream's OpportunisticBatching (v1.35+, gate on): the next node of the last cycle's list.

Upstream (``pkg/scheduler/framework/runtime/batch.go``) keeps, per profile, the sorted
scores of the last full cycle minus the node it chose, and gives the next Pod a *node hint*
instead of a search when all of these hold (``batchStateCompatible``):

- the list is not empty, and this cycle directly follows the last successful search
  (``cycleCount == last + 1``; a failed search stores nothing, so the next cycle never
  follows it), or, v1.37 with GenericWorkload, is that search's own cycle: the members of a
  PodGroup cycle share its count, so each may take the list a sibling (or, across the
  group's placements, a sibling in an earlier placement) left; v1.36 takes a group's other
  members out of the queue one pop each (``PopSpecificPod``), so only a group of one
  follows the cycle before it, and its members never hint one another;
- the Pod's upstream signature (:func:`upstream_signature`: every Filter and Score plugin's
  ``SignPod``) is not nil and equals the list's (nil for every Pod when the scheduler has
  extenders configured; under DRAExtendedResource NodeResourcesFit and BalancedAllocation
  sign no Pod in v1.35, and from v1.36 none asking for an extended resource a DeviceClass
  backs);
- the list is at most :data:`MAX_BATCH_AGE` old (wall clock upstream; kubesched's scheduler
  clock here, virtual in a simulation, see docs/fidelity.md);
- v1.37: the Pod has no ``status.nominatedNodeName``.

A miss leaves the list as it is (upstream's ``logUnusableState`` only counts it): only a
search that succeeds replaces it.

Then the node chosen last time is looked at again (after PreFilter, with this Pod's cycle
state, without nominated Pods):

- v1.35 and v1.36: if the Pod still fits there, the list is dropped and a full cycle runs;
  if it is rejected there, the hint is the list's best node, *without* a new Filter pass
  over the window of ``percentageOfNodesToScore`` and without scores normalized again;
- v1.37: if the Pod still fits there, that node is scored again (PreScore over the list and
  it, its raw scores, then every node's cached raw scores normalized again) and put back
  into the list; if it is rejected there, it simply stays out; the hint is the best node.

The hint passes Filter (with nominated Pods) and the filter extenders, as a nominated node
does (in a PodGroup placement, a hint outside it is passed over, popped all the same:
``evaluateNominatedNode``'s ``GetNodeInPlacement``): then it is the Pod's node, nothing is
scored and the round-robin start index does not move (upstream returns before
``nextStartNodeIndex`` is advanced); the list keeps its age.
Otherwise the full cycle runs and its scores become the new list.  Cluster events do not
invalidate the list upstream, so they do not here either: the hint is filtered anew, only
its scores may be stale.

Ties in a list are broken at random, as upstream's heap does by each node's ``Randomizer``.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.devices import extended
from kubesched.framework.interface import Code, CycleState, IntArray
from kubesched.kernels.draw import BoundedDraw
from kubesched.kernels.resources import counted_requests
from kubesched.plugins.imagelocality import normalized_image_name
from kubesched.plugins.interpodaffinity.plugin import InterPodAffinity
from kubesched.plugins.podtopologyspread.plugin import PodTopologySpread

if TYPE_CHECKING:
    from kubesched.api import objects as api
    from kubesched.framework.runtime import Framework

MAX_BATCH_AGE = 0.5
"""Seconds a list serves (upstream ``maxBatchAge``, 500 ms)."""

GATE = "OpportunisticBatching"

SIGNING = frozenset(
    {
        "NodeResourcesFit",
        "NodeResourcesBalancedAllocation",
        "NodeVolumeLimits",
        "DynamicResources",
        "VolumeBinding",
        "VolumeZone",
        "NodeDeclaredFeatures",
        "TaintToleration",
        "InterPodAffinity",
        "VolumeRestrictions",
        "NodePorts",
        "PodTopologySpread",
        "NodeAffinity",
        "NodeName",
        "ImageLocality",
        "NodeUnschedulable",
    }
)
"""The plugins with ``SignPod`` (v1.35 to v1.37): a profile with any other PreFilter,
Filter, PreScore or Score plugin signs no Pod (``enableSignatures`` off)."""

SignatureT = tuple[Any, ...]


def active(fwk: Framework) -> bool:
    """Whether ``fwk``'s release batches: v1.35 or newer with the gate on."""
    gates = fwk.handle.feature_gates
    return gates.at_least("1.35") and gates.enabled(GATE)


@dataclass(frozen=True, slots=True)
class _Profile:
    """What a profile's signing depends on, found once per framework."""

    signs: bool
    """Every PreFilter, Filter, PreScore and Score plugin has ``SignPod``."""
    names: frozenset[str]
    labels: bool
    """InterPodAffinity signs the Pod's labels (not ``ignorePreferredTermsOfExistingPods``)."""
    spread_defaults: bool
    """PodTopologySpread has default constraints (no Pod is signable)."""
    dra_extended: str = ""
    """NodeResourcesFit and BalancedAllocation under DRAExtendedResource: ``all`` (v1.35:
    they sign no Pod), ``backed`` (v1.36+: no Pod asking for an extended resource a
    DeviceClass backs), "" (the gate off, or neither plugin)."""


def _profile(fwk: Framework, extenders: bool = False) -> _Profile:
    names = frozenset(
        p.name
        for point in ("pre_filter", "filter", "pre_score", "score")
        for p in fwk.plugins.get(point, [])
    )
    ipa = fwk.instances.get("InterPodAffinity")
    pts = fwk.instances.get("PodTopologySpread")
    gates = fwk.handle.feature_gates
    dra_extended = ""
    if names & _RESOURCE_PLUGINS and gates.enabled("DRAExtendedResource"):
        dra_extended = "backed" if gates.at_least("1.36") else "all"
    return _Profile(
        # upstream computeBatchablePlugins: any configured extender disables signatures
        signs=names <= SIGNING and not extenders,
        names=names,
        labels=not (
            isinstance(ipa, InterPodAffinity) and ipa.ignore_preferred_terms_of_existing_pods
        ),
        spread_defaults=isinstance(pts, PodTopologySpread) and bool(pts.args.default_constraints),
        dra_extended=dra_extended,
    )


_RESOURCE_PLUGINS = frozenset({"NodeResourcesFit", "NodeResourcesBalancedAllocation"})


def _dra_backed(fwk: Framework, pod: api.Pod) -> bool:
    """Upstream Fit's and BalancedAllocation's ``SignPod`` (v1.36+, DRAExtendedResource):
    a scalar resource the Pod asks for (non-zero) that a DeviceClass backs
    (``shouldDelegateResourceToDRA`` without a node)."""
    resolve = fwk.handle.services.get(extended.RESOLVER)
    if resolve is None:
        return False
    return any(
        amount > 0 and name not in _NATIVE and resolve(name) is not None
        for name, amount in counted_requests(pod.requests).items()
    )


_NATIVE = frozenset({"cpu", "memory", "ephemeral-storage"})


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def upstream_signature(
    fwk: Framework, pod: api.Pod, prof: _Profile | None = None
) -> SignatureT | None:
    """The Pod's upstream ``SignPod`` as a comparable tuple, or None (unsignable): the
    fragments of the profile's signing plugins (each plugin's ``SignPod``), compared by
    equality as upstream compares their JSON; ``prof``: ``fwk``'s, when known."""
    prof = prof or _profile(fwk)
    if not prof.signs:
        return None
    names = prof.names
    parts: list[Any] = [pod.scheduler_name]
    if "InterPodAffinity" in names:
        if pod.pod_affinity is not None or pod.pod_anti_affinity is not None:
            return None
        parts.append(tuple(sorted(pod.labels.items())) if prof.labels else None)
    if "PodTopologySpread" in names and (pod.topology_spread_constraints or prof.spread_defaults):
        return None
    if "DynamicResources" in names and pod.resource_claims:
        return None
    if names & _RESOURCE_PLUGINS:
        if prof.dra_extended == "all" or (prof.dra_extended == "backed" and _dra_backed(fwk, pod)):
            return None
        parts.append(tuple(sorted(pod.requests.items())))
    if names & _VOLUME_PLUGINS:
        parts.append(_volumes(pod))
    if "TaintToleration" in names or "NodeUnschedulable" in names:
        parts.append(tuple(sorted(pod.tolerations, key=lambda t: (t.key, t.value))))
    if "NodePorts" in names:
        parts.append(pod.host_ports)
    if "NodeAffinity" in names:
        parts.append((pod.node_affinity, tuple(sorted(pod.node_selector.items()))))
    if "NodeName" in names:
        parts.append(pod.node_name)
    if "ImageLocality" in names:
        parts.append(tuple(sorted({normalized_image_name(i) for i in pod.images})))
    if "NodeDeclaredFeatures" in names:
        parts.append(pod.required_features)
    return tuple(parts)


_VOLUME_PLUGINS = frozenset(
    {"NodeVolumeLimits", "VolumeBinding", "VolumeZone", "VolumeRestrictions"}
)


def _volumes(pod: api.Pod) -> tuple[str, ...]:
    """Upstream ``VolumesSigner``: each volume's source but configMap and secret ones, as
    written (without its name), sorted; from the parsed volumes for a Pod without its
    object."""
    spec = pod.raw.get("spec") if pod.raw else None
    if not isinstance(spec, dict):
        return tuple(sorted(repr(dataclasses.replace(v, name="")) for v in pod.volumes))
    volumes = spec.get("volumes")
    if not volumes:
        return ()
    return tuple(
        sorted(
            _canon({k: v for k, v in vol.items() if k != "name"})
            for vol in volumes
            if isinstance(vol, dict) and "configMap" not in vol and "secret" not in vol
        )
    )


@dataclass(slots=True)
class HintList:
    """One profile's list: the nodes not yet handed out, their totals and raw scores."""

    signature: SignatureT
    names: list[str]
    total: IntArray
    raw: dict[str, IntArray]
    created: float


@dataclass(slots=True)
class LastCycle:
    """The last successful search of a profile (upstream ``schedulingCycle``)."""

    cycle: int
    node: str


class NodeHints:
    """Upstream's ``OpportunisticBatch``, one list per profile (module docstring)."""

    def __init__(
        self, clock: Callable[[], float], draw: BoundedDraw, *, extenders: bool = False
    ) -> None:
        self.clock = clock
        self.draw = draw
        self.extenders = extenders
        """The scheduler has extenders configured: upstream signs no Pod then."""
        self.lists: dict[str, HintList] = {}
        self.last: dict[str, LastCycle] = {}
        self.flushes: Counter[str] = Counter()
        """Why no hint was given (upstream ``scheduler_batch_cache_flushed_total``)."""
        self.used = 0
        """Pods placed on their hint (upstream ``batchedPods``)."""
        self._profiles: dict[int, tuple[Framework, _Profile]] = {}

    def signature(self, fwk: Framework, pod: api.Pod) -> SignatureT | None:
        """:func:`upstream_signature`, with ``fwk``'s profile facts found once."""
        kept = self._profiles.get(id(fwk))
        if kept is None or kept[0] is not fwk:
            kept = self._profiles[id(fwk)] = (fwk, _profile(fwk, self.extenders))
        return upstream_signature(fwk, pod, kept[1])

    def _flush(self, reason: str) -> None:
        """Upstream ``logUnusableState``: why no hint was given.  The list stays (upstream
        keeps ``b.state``): only the next successful search replaces it, so a PodGroup
        member after a sibling that failed may still take it (v1.37, :meth:`compatible`)."""
        self.flushes[reason] += 1

    @staticmethod
    def same_cycle(fwk: Framework) -> bool:
        """v1.37 with GenericWorkload: a PodGroup cycle's members share one cycle count
        and each may use the list a sibling left (``genericWorkloadEnabled``)."""
        gates = fwk.handle.feature_gates
        return gates.at_least("1.37") and gates.enabled("GenericWorkload")

    def compatible(
        self, fwk: Framework, pod: api.Pod, signature: SignatureT | None, cycle: int
    ) -> bool:
        """Upstream ``batchStateCompatible``: this cycle directly follows the last
        successful search, or (:meth:`same_cycle`) is that search's own PodGroup cycle."""
        profile = fwk.profile_name
        hl = self.lists.get(profile)
        if hl is None or not hl.names:
            return False
        last = self.last.get(profile)
        if last is None or (
            cycle != last.cycle + 1 and not (cycle == last.cycle and self.same_cycle(fwk))
        ):
            self._flush("pod_skipped")
            return False
        if fwk.handle.feature_gates.at_least("1.37") and pod.nominated_node_name:
            self._flush("pod_nominated")
            return False
        if signature is None or signature != hl.signature:
            self._flush("pod_incompatible")
            return False
        if self.clock() > hl.created + MAX_BATCH_AGE:
            self._flush("expired")
            return False
        return True

    def hint(self, fwk: Framework, state: CycleState, pod: api.Pod) -> str:
        """After PreFilter, for a compatible list: look at the last chosen node again
        (``refreshHintCandidates``) and pop the best node ("" when the list is dropped)."""
        profile = fwk.profile_name
        hl = self.lists[profile]
        table = fwk.handle.cluster.nodes
        last = self.last[profile].node
        row = table.row_of.get(last)
        if row is None:
            self._flush("node_missing")
            return ""
        one = np.asarray([row], dtype=np.int64)
        outcome = fwk.run_filter(state, pod, one)
        if outcome.feasible.size:
            if not fwk.handle.feature_gates.at_least("1.37"):
                self._flush("node_not_full")
                return ""
            if not self._rescore(fwk, state, pod, hl, last, row):
                return ""
        elif any(st.code == Code.ERROR for st in outcome.statuses):
            self._flush("filter_error")
            return ""
        i = self._best(hl)
        name = hl.names.pop(i)
        keep = np.ones(hl.total.size, dtype=np.bool_)
        keep[i] = False
        hl.total = hl.total[keep]
        hl.raw = {k: v[keep] for k, v in hl.raw.items()}
        return name

    def _best(self, hl: HintList) -> int:
        top = hl.total.max()
        best = np.flatnonzero(hl.total == top)
        if best.size == 1:
            return int(best[0])
        return int(best[self.draw(int(best.size))])

    def _rescore(
        self, fwk: Framework, state: CycleState, pod: api.Pod, hl: HintList, last: str, row: int
    ) -> bool:
        """v1.37 ``rescoreHintedNode``: the last chosen node scored again and put back."""
        row_of = fwk.handle.cluster.nodes.row_of
        rows = [row_of.get(n) for n in hl.names]
        if any(r is None for r in rows):
            self._flush("node_missing")
            return False
        every = np.asarray([*rows, row], dtype=np.int64)
        st = state.clone()
        st.skip_score.clear()
        if not fwk.run_pre_score(st, pod, every).is_success():
            self._flush("prescore_error")
            return False
        names = {p.name for p in fwk.plugins["score"] if p.name not in st.skip_score}
        try:
            fresh = fwk.raw_scores(st, pod, every[-1:], names)
        except Exception:  # a failing Score: no hint
            self._flush("rescore_error")
            return False
        n = len(hl.names)
        raw = {
            k: np.concatenate([hl.raw.get(k, np.zeros(n, dtype=np.int64)), fresh[k]]) for k in fresh
        }
        hl.raw = raw
        hl.names.append(last)
        hl.total = fwk.totals_from_raw(st, pod, raw) if raw else np.zeros(n + 1, np.int64)
        return True

    def store(
        self,
        profile: str,
        signature: SignatureT | None,
        hinted: str,
        chosen: str,
        cycle: int,
        scored: tuple[list[str], IntArray, dict[str, IntArray], int] | None,
    ) -> None:
        """Upstream ``StoreScheduleResults`` after a search found ``chosen``: ``scored``
        is the full cycle's nodes, totals, raw scores and the index chosen (None: at most
        one node was feasible, nothing scored)."""
        self.last[profile] = LastCycle(cycle, chosen)
        if hinted and hinted == chosen:
            self.used += 1
            return
        if signature is not None and scored is not None and len(scored[0]) > 1:
            names, total, raw, pick = scored
            keep = np.ones(len(names), dtype=np.bool_)
            keep[pick] = False
            self.lists[profile] = HintList(
                signature,
                [n for i, n in enumerate(names) if i != pick],
                np.asarray(total, dtype=np.int64)[keep],
                {k: np.asarray(v, dtype=np.int64)[keep] for k, v in raw.items()},
                self.clock(),
            )
        else:
            self.lists.pop(profile, None)
            self._flush("pod_not_batchable" if signature is None else "empty_list")
