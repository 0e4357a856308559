"""The runtime that runs one profile's plugins over whole arrays of nodes.

Upstream ``frameworkImpl`` runs ``Filter(pod, nodeInfo)`` per node on many goroutines; here
each Filter plugin answers for every still-feasible node at once (see
:mod:`kubesched.framework.interface`).  The order of plugins, the first-failure rule, weights,
``Skip`` handling and ``NormalizeScore`` follow upstream ``framework.go``.

Plugins are wired by capability: a plugin takes part in an extension point when it implements
that point's Protocol (:mod:`kubesched.framework.contract`), and offers a kubesched capability
by implementing its Protocol; both are asked once, when the profile is built.
:func:`kubesched.config.load.resolve_plugins` decides the order.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from kubesched.api import objects as api
from kubesched.config.load import resolve_plugins
from kubesched.config.pluginsets import EXTENSION_POINTS
from kubesched.config.types import Profile
from kubesched.framework import contract, nominated
from kubesched.framework.filterphase import FilterPhase
from kubesched.framework.interface import (
    MAX_NODE_SCORE,
    MAX_PERMIT_WAIT_SECONDS,
    SUCCESS,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    IntArray,
    Plugin,
    PluginFactory,
    Status,
    error,
)
from kubesched.framework.outcomes import (  # re-exported: callers import them from here
    FilterOutcome as FilterOutcome,
)
from kubesched.framework.outcomes import (
    PluginError as PluginError,
)
from kubesched.framework.outcomes import (
    ScoreOutcome as ScoreOutcome,
)

POINTS = EXTENSION_POINTS
"""Extension points by the name of the plugin method that implements each: the
configuration's own list (:data:`kubesched.config.pluginsets.EXTENSION_POINTS`)."""

Observer = Callable[[str, str, float], None]
"""``observe(extension_point, status, seconds)``: where extension-point durations go."""
_CODE_LABEL = {code: code.name.title() for code in Code}
"""The status label an :data:`Observer` gets per code (``Success``, ...), made once."""
_max, _min = np.maximum.reduce, np.minimum.reduce
"""A score array's largest and smallest value (``a.max()`` without its Python wrapper)."""


class Framework(FilterPhase):
    """One profile: its plugins per extension point, weights and percentage of nodes to score."""

    def __init__(
        self,
        profile: Profile,
        registry: Mapping[str, PluginFactory],
        handle: Handle,
        *,
        percentage_of_nodes_to_score: int | None = None,
        observe: Observer | None = None,
    ) -> None:
        self.profile = profile
        self.profile_name = profile.scheduler_name
        self.handle = handle
        self.percentage_of_nodes_to_score = (
            profile.percentage_of_nodes_to_score
            if profile.percentage_of_nodes_to_score is not None
            else percentage_of_nodes_to_score
        )
        self._observe = observe
        instances: dict[str, Plugin] = {}

        def instance(name: str) -> Any:
            if name not in instances:
                instances[name] = registry[name](profile.plugin_config.get(name), handle)
            return instances[name]

        resolved = resolve_plugins(
            profile, lambda name, point: contract.implements(instance(name), point)
        )
        self.plugins: dict[str, list[Any]] = {
            point: [instance(name) for name, _ in resolved.get(point, [])] for point in POINTS
        }
        self.score_weights = [w for _, w in resolved.get("score", [])]
        pre_scored = {p.name for p in self.plugins["pre_score"]}
        self._unprepared_scores: dict[str, str] = {}
        """Score plugins whose PreScore the profile leaves out and whose Score cannot do
        without it (:class:`contract.ScoreNeedsPreScore`): name -> upstream's error."""
        for p in self.plugins["score"]:
            missing = contract.pre_score_missing(p)
            if missing is not None and p.name not in pre_scored:
                self._unprepared_scores[p.name] = missing
        self._check_scores = [
            not type(p).__module__.startswith("kubesched.plugins.") for p in self.plugins["score"]
        ]
        """Out-of-tree plugins get their scores range-checked; in-tree ones are tested."""
        used = {name for point in POINTS for name, _ in resolved.get(point, [])}
        self.instances = {n: p for n, p in instances.items() if n in used}
        weights = {r.name: r.weight for r in profile.plugins.multi_point.enabled}
        self.placement_generators: list[contract.PlacementGeneratePlugin] = [
            p for p in instances.values() if isinstance(p, contract.PlacementGeneratePlugin)
        ]
        """PlacementGenerate plugins (v1.37; upstream runs the first), from the profile's
        multiPoint: kubesched's configuration has no placement extension points of their
        own (``docs/fidelity.md``)."""
        self.placement_scorers: list[tuple[contract.PlacementScorePlugin, int]] = [
            (p, weights.get(n) or 1)
            for n, p in instances.items()
            if isinstance(p, contract.PlacementScorePlugin)
        ]
        """PlacementScore plugins with their multiPoint weights (1 when unset)."""
        self.placement_feasible: list[contract.PlacementFeasiblePlugin] = [
            p for p in self.instances.values() if isinstance(p, contract.PlacementFeasiblePlugin)
        ]
        """Plugins a PodGroup cycle asks whether ``minCount`` is still reachable (v1.37
        GangScheduling), found once: a Protocol ``isinstance`` per plugin per group cost
        the gang suites 12 % of their measured phase."""
        self.nominator: nominated.PodNominator | None = None
        """Set by the scheduler: nominated Pods count in Filter (upstream
        ``RunFilterPluginsWithNominatedPods``)."""
        self._usage = nominated.UsageCache()
        self._row_key = None
        self._row_local_skips = {}
        self.evaluations = {}
        for p in self.instances.values():
            if isinstance(p, contract.FrameworkAware):  # plugins that run other plugins
                p.set_framework(self)
        self.filter_plugins: list[Any] = self.plugins["filter"]
        self.pre_filter_extensions = [
            p for p in self.plugins["pre_filter"] if isinstance(p, contract.PreFilterExtensions)
        ]
        """PreFilter plugins with PreFilterExtensions (``pre_filter_add_pod`` /
        ``pre_filter_remove_pod``)."""
        signers: dict[str, Any] = {}
        for point in ("pre_filter", "filter", "pre_score", "score"):
            for p in self.plugins[point]:
                signers.setdefault(p.name, p)
        self._signers: list[Callable[[api.Pod], object] | None] = [
            p.sign if isinstance(p, contract.Signer) else None for p in signers.values()
        ]
        """Each PreFilter / Filter / PreScore / Score plugin's ``sign`` (None: it has none)."""
        self.capabilities = contract.ProfileCapabilities.of(self.instances)
        """Which of the profile's plugins offer which kubesched capability."""
        claims = self.capabilities.claims
        self._signers_unclaimed = [
            sign
            for p, sign in zip(signers.values(), self._signers, strict=True)
            if p.name not in claims
        ]
        """:attr:`_signers` without the ``Locality.CLAIMS`` plugins: what signs a Pod without
        claims (those plugins sign it ``()``, the same for every such Pod)."""
        self._searching: api.Pod | None = None
        """The Pod whose search is under way (:meth:`begin_search`)."""
        self._signed: tuple[api.Pod, tuple[object, ...] | None] | None = None
        """That Pod and its signature, once signed."""
        self._reserve_unclaimed = [p for p in self.plugins["reserve"] if p.name not in claims]
        self._pre_bind_unclaimed = [p for p in self.plugins["pre_bind"] if p.name not in claims]
        """Reserve and PreBind plugins with work for a Pod without claims (a
        ``Locality.CLAIMS`` plugin has none)."""
        self._normalizes = [p.name in self.capabilities.normalizing for p in self.plugins["score"]]
        """Per Score plugin (in order), whether it has ``normalize_score``."""
        self.unreserving = [
            isinstance(p, contract.UnreservePlugin) for p in self.plugins["reserve"]
        ]
        """Per Reserve plugin (in order), whether it has ``unreserve``."""
        self.enqueue_extensions = {
            name: p
            for name, p in self.instances.items()
            if isinstance(p, contract.EnqueueExtensions)
        }
        """The plugins with ``events_to_register``, by name."""
        self.metrics_syncers = [
            p for p in self.instances.values() if isinstance(p, contract.MetricsSyncer)
        ]
        """The plugins with gauges of their own (``sync_metrics``)."""
        self.candidate_filters = [
            isinstance(p, contract.CandidateRows) for p in self.plugins["filter"]
        ]
        """Per Filter plugin (in order), whether it has ``candidate_rows``."""
        self.candidate_at = [i for i, has in enumerate(self.candidate_filters) if has]

    # ------------------------------------------------------------------ helpers
    def _timed(self, point: str, start: float, status: Status) -> None:
        if self._observe is not None:
            self._observe(point, _CODE_LABEL[status.code], time.perf_counter() - start)

    def _evaluated(self, plugin: str, nodes: int) -> None:
        """A Score plugin answered for ``nodes`` nodes (one evaluation each, as upstream)."""
        key = (plugin, "Score")
        self.evaluations[key] = self.evaluations.get(key, 0) + nodes

    def queue_sort_key(self) -> Callable[[Any], tuple[Any, ...]]:
        """The QueueSort plugin's key function."""
        plugin = self.plugins["queue_sort"][0]
        key: Callable[[Any], tuple[Any, ...]] = plugin.sort_key
        return key

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Plugin name to the cluster events (with hints) that may requeue its rejections."""
        return {name: list(p.events_to_register()) for name, p in self.enqueue_extensions.items()}

    def has_filter_plugins(self) -> bool:
        """Whether any Filter plugin is configured."""
        return bool(self.filter_plugins)

    def has_score_plugins(self) -> bool:
        """Whether any Score plugin is configured."""
        return bool(self.plugins["score"])

    # ------------------------------------------------------------------ PreEnqueue
    def run_pre_enqueue(self, pod: api.Pod) -> Status:
        """First non-success PreEnqueue status (attributed), else Success."""
        for p in self.plugins["pre_enqueue"]:
            s: Status = p.pre_enqueue(pod)
            if not s.is_success():
                return s.with_plugin(p.name)
        return SUCCESS

    # ------------------------------------------------------------------ PostFilter
    def run_post_filter(
        self, state: CycleState, pod: api.Pod, diagnosis: Any
    ) -> tuple[Any, Status]:
        """Run PostFilter plugins until one succeeds (upstream ``RunPostFilterPlugins``): an
        UnschedulableAndUnresolvable or Error status stops at once; otherwise the answer is
        Unschedulable with every plugin's reasons in order, attributed to the first plugin,
        with the last result a plugin gave."""
        result = None
        reasons: list[str] = []
        rejector = ""
        for p in self.plugins["post_filter"]:
            r, s = p.post_filter(state, pod, self.handle.cluster, diagnosis)
            if s.is_success() or s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return r, s.with_plugin(p.name)
            if not s.is_rejected():
                return None, s.with_plugin(p.name)
            if r is not None:
                result = r
            reasons.extend(s.reasons)
            rejector = rejector or p.name
        return result, Status(Code.UNSCHEDULABLE, tuple(reasons), rejector)

    # ------------------------------------------------------------------ PreScore / Score
    def run_pre_score(self, state: CycleState, pod: api.Pod, rows: IntArray) -> Status:
        """Run PreScore plugins; Skip marks the plugin's Score as skipped."""
        start = time.perf_counter()
        cluster = self.handle.cluster
        ev = self.evaluations
        for p in self.plugins["pre_score"]:
            s: Status = p.pre_score(state, pod, cluster, rows)
            if s.code == Code.SKIP:
                state.skip_score.add(p.name)
                continue
            key = (p.name, "PreScore")
            ev[key] = ev.get(key, 0) + 1
            if not s.is_success():
                s = error(f'running PreScore plugin "{p.name}": {s.message()}').with_plugin(p.name)
                self._timed("PreScore", start, s)
                return s
        self._timed("PreScore", start, SUCCESS)
        return SUCCESS

    def run_score(
        self, state: CycleState, pod: api.Pod, rows: IntArray, *, keep_raw: bool = True
    ) -> ScoreOutcome:
        """Score, normalize, weight and sum; raises :class:`PluginError` on a bad score.
        Without ``keep_raw`` the outcome's ``raw`` stays empty (no copy of a normalized
        plugin's scores before NormalizeScore: a search whose results no later Pod reuses
        reads none)."""
        start = time.perf_counter()
        cluster = self.handle.cluster
        n = rows.shape[0]
        total = np.zeros(n, dtype=np.int64)
        out = ScoreOutcome(total)
        raw = out.raw if keep_raw else None
        by_plugin = out.by_plugin
        skip, unprepared, ev = state.skip_score, self._unprepared_scores, self.evaluations
        for p, weight, check, normalizes in zip(
            self.plugins["score"],
            self.score_weights,
            self._check_scores,
            self._normalizes,
            strict=True,
        ):
            name = p.name
            if name in skip:
                continue
            if name in unprepared and n:
                raise PluginError(name, unprepared[name], point="score")
            scores = np.asarray(p.score(state, pod, cluster, rows), dtype=np.int64)
            key = (name, "Score")  # one evaluation per node, as upstream (:meth:`_evaluated`)
            ev[key] = ev.get(key, 0) + n
            if normalizes:
                if raw is not None:
                    raw[name] = scores.copy()
                p.normalize_score(state, pod, scores)
            elif raw is not None:
                raw[name] = scores
            if check and scores.size and (_max(scores) > MAX_NODE_SCORE or _min(scores) < 0):
                raise PluginError(
                    name, f"plugin {name!r} returns an invalid score, it should be in [0, 100]"
                )
            by_plugin[name] = scores
            if weight == 1:
                total += scores
            else:
                total += scores * weight
        self._timed("Score", start, SUCCESS)
        return out

    def totals_from_raw(
        self, state: CycleState, pod: api.Pod, raw: dict[str, IntArray]
    ) -> IntArray:
        """Normalize cached raw scores again and weight them: the totals :meth:`run_score`
        would return for the same raw scores (used by result reuse)."""
        total: IntArray | None = None
        for p, weight, normalizes in zip(
            self.plugins["score"], self.score_weights, self._normalizes, strict=True
        ):
            scores = raw.get(p.name)
            if scores is None:
                continue
            if normalizes:
                scores = scores.copy()
                p.normalize_score(state, pod, scores)
            total = scores * weight if total is None else total + scores * weight
        if total is None:
            return np.zeros(next(iter(raw.values())).shape[0] if raw else 0, dtype=np.int64)
        return total

    def raw_scores(
        self, state: CycleState, pod: api.Pod, rows: IntArray, names: set[str]
    ) -> dict[str, IntArray]:
        """Raw (unnormalized) scores of the plugins in ``names`` for ``rows``."""
        cluster = self.handle.cluster
        out = {
            p.name: np.asarray(p.score(state, pod, cluster, rows), dtype=np.int64)
            for p in self.plugins["score"]
            if p.name in names
        }
        for name in out:
            self._evaluated(name, int(rows.size))
        return out

    def sign(self, pod: api.Pod) -> tuple[object, ...] | None:
        """The Pod's signature for result reuse, or None when some plugin cannot sign it;
        signed once per search of ``pod`` (:meth:`begin_search`)."""
        signed = self._signed
        if signed is not None and signed[0] is pod:
            return signed[1]
        out = self._sign(pod)
        if pod is self._searching:
            self._signed = (pod, out)
        return out

    def begin_search(self, pod: api.Pod) -> None:
        """A search of ``pod`` starts: until :meth:`end_search`, :meth:`sign` signs it once
        (result reuse, kept static failures and kept Filter verdicts each ask)."""
        self._searching, self._signed = pod, None
        self._row_key = None

    def end_search(self) -> None:
        """The search :meth:`begin_search` started is over."""
        self._searching = self._signed = None

    def _sign(self, pod: api.Pod) -> tuple[object, ...] | None:
        if pod.resize_deferred:  # the plugins it Skips under the gate sign it as any Pod
            return None
        parts: list[object] = [pod.scheduler_name]
        for sign in self._signers if pod.has_claims else self._signers_unclaimed:
            if sign is None:
                return None
            part = sign(pod)
            if part is None:
                return None
            parts.append(part)
        return tuple(parts)

    # ------------------------------------------------------------------ Reserve / Permit
    def run_reserve(self, state: CycleState, pod: api.Pod, node: str) -> Status:
        """Reserve in order; the first failure is returned (caller runs Unreserve)."""
        for p in self.plugins["reserve"] if pod.has_claims else self._reserve_unclaimed:
            s: Status = p.reserve(state, pod, node)
            if not s.is_success():
                return s.with_plugin(p.name)
        return SUCCESS

    def run_unreserve(self, state: CycleState, pod: api.Pod, node: str) -> None:
        """Unreserve in reverse order (upstream)."""
        plugins = self.plugins["reserve"]
        for p, unreserves in zip(reversed(plugins), reversed(self.unreserving), strict=True):
            if unreserves:
                p.unreserve(state, pod, node)

    def run_permit(self, state: CycleState, pod: api.Pod, node: str) -> Status:
        """Permit: a rejection wins; otherwise Wait if any plugin waits."""
        return self.run_permit_plugins(state, pod, node)[0]

    def run_permit_plugins(
        self, state: CycleState, pod: api.Pod, node: str
    ) -> tuple[Status, dict[str, float]]:
        """Permit with each waiting plugin's timeout in seconds (capped at 15 minutes, as
        upstream ``RunPermitPlugins``); the dict is empty unless the status is Wait."""
        waits: dict[str, float] = {}
        wait = SUCCESS
        for p in self.plugins["permit"]:
            s, timeout = p.permit(state, pod, node)
            if s.code == Code.WAIT:
                waits[p.name] = min(float(timeout or 0.0), MAX_PERMIT_WAIT_SECONDS)
                wait = s
            elif s.is_rejected():
                return s.with_plugin(p.name), {}
            elif not s.is_success():
                msg = f'running Permit plugin "{p.name}": {s.message()}'
                return Status(Code.ERROR, (msg,), p.name), {}
        if waits:
            if self.handle.feature_gates.at_least("1.36"):  # the last waiter's, one reason more
                reason = "one or more plugins asked to wait and no plugin rejected pod"
                return Status(Code.WAIT, (*wait.reasons, reason), wait.plugin), waits
            msg = f'one or more plugins asked to wait and no plugin rejected pod "{pod.name}"'
            return Status(Code.WAIT, (msg,)), waits
        return SUCCESS, {}

    # ------------------------------------------------------------------ binding cycle
    def run_pre_bind(self, state: CycleState, pod: api.Pod, node: str) -> Status:
        """PreBind; the first non-success ends the binding cycle."""
        for p in self.plugins["pre_bind"] if pod.has_claims else self._pre_bind_unclaimed:
            s: Status = p.pre_bind(state, pod, node)
            if not s.is_success():
                return s.with_plugin(p.name)
        return SUCCESS

    def pre_bind_timing(self, state: CycleState, pod: api.Pod, node: str) -> contract.PreBindTiming:
        """How :meth:`run_pre_bind` will go, told before it runs: the first PreBind plugin that
        does not pass at once decides (one without :class:`~.contract.PreBindPreview` waits)."""
        for p in self.plugins["pre_bind"] if pod.has_claims else self._pre_bind_unclaimed:
            inner = contract.unwrap(p)
            if not isinstance(inner, contract.PreBindPreview):
                return contract.PreBindTiming.WAITS
            timing = inner.pre_bind_timing(state, pod, node)
            if timing is not contract.PreBindTiming.PASSES:
                return timing
        return contract.PreBindTiming.PASSES

    def run_bind(self, state: CycleState, pod: api.Pod, node: str) -> Status:
        """Bind with the first plugin that does not Skip."""
        start = time.perf_counter()
        for p in self.plugins["bind"]:
            s: Status = p.bind(state, pod, node)
            if s.code == Code.SKIP:
                continue
            self._timed("Bind", start, s)
            return s.with_plugin(p.name)
        return error("no bind plugin handled the pod")

    def bound(self, start: float, failure: str | None) -> Status:
        """A bind made outside :meth:`run_bind` by the profile's only Bind plugin (live
        mode's asynchronous bind) answered: its status as :meth:`run_bind` would return it
        (``failure``: the error's text) and the Bind extension point timed from ``start``."""
        s = SUCCESS if failure is None else error(failure)
        self._timed("Bind", start, s)
        return s.with_plugin(self.plugins["bind"][0].name)

    def run_post_bind(self, state: CycleState, pod: api.Pod, node: str) -> None:
        """PostBind (informational)."""
        for p in self.plugins["post_bind"]:
            p.post_bind(state, pod, node)
