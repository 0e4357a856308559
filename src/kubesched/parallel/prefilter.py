"""The binder's PreFilter results per Pod signature, kept current from its commits.

A proposal that needs the full check (a Pod with topology spread or inter-pod affinity,
``local`` false) used to run the profile's PreFilter plugins on the authoritative state for
every proposal: PodTopologySpread and InterPodAffinity count matching Pods over the whole
cluster each time, the binder's largest cost where such Pods stream in.  Pods of one
signature (``Framework.sign``: every plugin treats them alike, the same promise result
reuse builds on) get the same PreFilter result, so :class:`PreFilterCache` keeps one
:class:`~kubesched.framework.interface.CycleState` per signature and updates it as the
authoritative cache changes -- the binder's commits, binds and deletions -- through the
plugins' PreFilterExtensions (upstream ``AddPod`` / ``RemovePod``, the mechanism that
counts nominated Pods), instead of recounting:

- it observes the authoritative cache: every Pod accounted or no longer accounted on a node
  is added to or removed from every kept state;
- any other change (a node added, updated or removed; a Namespace or another object, seen as
  the cache's version moving without a Pod event) drops every kept state;
- a Pod with required anti-affinity added drops the states where InterPodAffinity skipped
  (:data:`SKIPS_UNDONE_BY_ANTI_AFFINITY`);
- only profiles whose PreFilter plugins are in :data:`KEPT_PLUGINS` (their state is
  either the Pod's own or maintained by the extensions) or skipped for the Pod
  (DynamicResources without claims) are served, and only successful PreFilter results
  are kept; at most :data:`MAX_KEPT` signatures (the oldest dropped first).

Each proposal gets a clone (entries are replaced, never mutated, by the plugins), so Filter,
Reserve and Permit see a state of their own.  The verdicts are those of a full PreFilter:
``tests/parallel/test_prefilter.py`` compares them under random commits and deletions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubesched.api import objects as api
from kubesched.config import names
from kubesched.framework.interface import SUCCESS, CycleState, PreFilterResult, Status
from kubesched.framework.runtime import Framework
from kubesched.state.cache import PodRecord

if TYPE_CHECKING:
    from kubesched.state.cache import ClusterState

KEPT_PLUGINS = frozenset(
    {
        names.NODE_AFFINITY,
        names.NODE_PORTS,
        names.NODE_RESOURCES_FIT,
        names.POD_TOPOLOGY_SPREAD,
        names.INTER_POD_AFFINITY,
        names.NODE_DECLARED_FEATURES,
    }
)
"""PreFilter plugins whose state depends on the Pod alone or is kept current by their
PreFilterExtensions."""
MAX_KEPT = 16
SKIPS_UNDONE_BY_ANTI_AFFINITY = frozenset({names.INTER_POD_AFFINITY})
"""PreFilter plugins whose Skip depends on the cluster's Pods, not the Pod alone:
InterPodAffinity skips a Pod without terms while no existing Pod's required anti-affinity
selects it on a labelled node, so a kept state where it skipped is dropped when a Pod with
required anti-affinity is added (its extensions never hear of Pods once it skipped)."""

Kept = tuple[Framework, api.Pod, CycleState, PreFilterResult | None]
"""A kept signature: its profile, the Pod it was computed for, the state and the result."""


class PreFilterCache:
    """See the module docstring; ``cluster`` is the authoritative cache."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self.kept: dict[object, Kept] = {}
        self.tracked: set[object] = set()
        """Keys of kept states some PreFilterExtension must hear about (the others hold
        nothing that Pods elsewhere change)."""
        self.version = cluster.version
        self._ok: dict[str, bool] = {}
        self.hits = 0
        self.misses = 0
        cluster.observe(self)

    # ------------------------------------------------------------------ cache observer
    def pod_added(self, rec: PodRecord) -> None:
        if self.kept:
            self._changed(rec, add=True)
        else:  # nothing kept (e.g. auto routing's serial cycles): nothing to update
            self.version = self.cluster.version

    def pod_removed(self, rec: PodRecord) -> None:
        self._changed(rec, add=False)

    def node_changed(self, row: int, old: api.Node | None, new: api.Node | None) -> None:
        del row, old, new
        self._clear()

    def _changed(self, rec: PodRecord, *, add: bool) -> None:
        if self.kept and self.version + 1 != self.cluster.version:
            self._clear()  # something else changed in between
        self.version = self.cluster.version
        anti = rec.pod.pod_anti_affinity
        dead = []
        if add and anti is not None and anti.required:
            dead = [
                k for k, v in self.kept.items() if v[2].skip_filter & SKIPS_UNDONE_BY_ANTI_AFFINITY
            ]
        for key in self.tracked:
            if key in dead:
                continue
            fwk, pod, state, _ = self.kept[key]
            if not fwk.run_pre_filter_extension(state, pod, rec.pod, rec.row, add=add).is_success():
                dead.append(key)
        for key in dead:
            self._drop(key)

    def _drop(self, key: object) -> None:
        del self.kept[key]
        self.tracked.discard(key)

    def _clear(self) -> None:
        self.kept.clear()
        self.tracked.clear()

    def release(self) -> None:
        """Drop every kept result: the coordinator schedules Pods itself (auto routing), and
        keeping them current would cost a PreFilterExtension call per bind for nothing;
        the next full check runs PreFilter once per signature again."""
        if self.kept:
            self._clear()

    # ------------------------------------------------------------------ lookups
    def profile_ok(self, fwk: Framework) -> bool:
        """Whether every PreFilter plugin of the profile may be kept (or skipped)."""
        ok = self._ok.get(fwk.profile_name)
        if ok is None:
            names = {pl.name for pl in fwk.plugins["pre_filter"]}
            ok = names <= KEPT_PLUGINS | fwk.capabilities.claims
            self._ok[fwk.profile_name] = ok
        return ok

    def pre_filter(
        self, fwk: Framework, pod: api.Pod
    ) -> tuple[CycleState, PreFilterResult | None, Status]:
        """The PreFilter state, result and status for ``pod`` (a clone of the kept state of
        its signature, or a fresh run that is kept when it may be)."""
        if self.version != self.cluster.version:
            self._clear()
            self.version = self.cluster.version
        sig = fwk.sign(pod) if not pod.has_claims and self.profile_ok(fwk) else None
        key = (fwk.profile_name, sig)
        kept = self.kept.get(key) if sig is not None else None
        if kept is not None:
            self.hits += 1
            return kept[2].clone(), kept[3], SUCCESS
        self.misses += 1
        state = CycleState()
        pre, status, _ = fwk.run_pre_filter(state, pod)
        if sig is not None and status.is_success():
            if len(self.kept) >= MAX_KEPT:
                self._drop(next(iter(self.kept)))
            self.kept[key] = (fwk, pod, state.clone(), pre)
            if fwk.active_extensions(state):
                self.tracked.add(key)
        return state, pre, status
