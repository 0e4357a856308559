"""Queueing hints: may this cluster event make this rejected Pod schedulable?

Mirrors upstream v1.34 ``isEventOfInterest`` / ``isPodWorthRequeuing`` (scheduling_queue.go)
with ``SchedulerQueueingHints`` enabled (the default since v1.32):

- the hint map is ``profile -> plugin -> [ClusterEventWithHint]`` (each plugin's
  ``events_to_register()``), a None hint function meaning Queue;
- only plugins that rejected the Pod (``unschedulable_plugins | pending_plugins``) are asked;
  a Pod with no rejector is always worth requeuing (it failed with an error);
- a wildcard event (``*`` / ``All``) requeues every Pod, unless it carries a Pod in ``new``
  (``ForceActivate`` of one in-flight Pod), in which case only that Pod;
- a hint that raises counts as Queue (upstream: an error must not strand the Pod);
- Queue from a *pending* plugin means "skip backoff" (:attr:`Strategy.IMMEDIATELY`), from an
  unschedulable plugin "after backoff" (:attr:`Strategy.AFTER_BACKOFF`).

Per ``(profile, event)`` the list of matching ``(plugin, hint)`` pairs is computed once and
cached, so requeueing 50,000 Pods on one event costs one set lookup per matching plugin.

With a recorder set (:attr:`HintTable.observe`), every hint call is timed for
``scheduler_queueing_hint_execution_duration_seconds{plugin, event, hint}`` as upstream does
(``hint``: ``Queue``, ``QueueSkip`` or ``Error``; a plugin registered without a hint function
counts as a ``Queue`` call, upstream's ``defaultQueueingHintFn``).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubesched.api import objects as api
from kubesched.framework.interface import (
    ClusterEvent,
    ClusterEventWithHint,
    HintFn,
    QueuedPodInfo,
    QueueingHint,
)
from kubesched.queue import events

HintObserver = Callable[..., None]
"""``observe(seconds, plugin, event_label, hint_label)``."""

HintMap = Mapping[str, Mapping[str, Sequence[ClusterEventWithHint]]]
"""``profile (schedulerName) -> plugin name -> registered events with hints``."""


class Strategy(enum.IntEnum):
    """Upstream ``queueingStrategy``: where a Pod leaving the unschedulable pool goes."""

    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATELY = 2


def pod_uid(pod: api.Pod) -> str:
    """The identity used for in-flight tracking: ``uid``, or ``namespace/name`` without one."""
    return pod.uid or pod.key


class HintTable:
    """The registered events of every profile, with cached matching per incoming event."""

    def __init__(self, hints: HintMap) -> None:
        self._by_profile: dict[str, list[tuple[ClusterEvent, str, HintFn | None]]] = {}
        self._plugin_events: dict[str, list[ClusterEvent]] = {}
        for profile, per_plugin in hints.items():
            rows = self._by_profile.setdefault(profile, [])
            for plugin, registered in per_plugin.items():
                for reg in registered:
                    rows.append((reg.event, plugin, reg.hint))
                    self._plugin_events.setdefault(plugin, []).append(reg.event)
        self._interest: dict[ClusterEvent, bool] = {}
        self._matching: dict[tuple[str, ClusterEvent], list[tuple[str, HintFn | None]]] = {}
        self._plugin_match: dict[tuple[str, ClusterEvent], bool] = {}
        self._labels: dict[ClusterEvent, str] = {}
        self.observe: HintObserver | None = None
        """Where hint durations go (None: hint calls are not timed)."""

    def is_event_of_interest(self, event: ClusterEvent) -> bool:
        """Whether some plugin of some profile registered an event covering ``event``."""
        hit = self._interest.get(event)
        if hit is None:
            hit = events.is_wildcard(event) or any(
                events.matches(reg, event)
                for rows in self._by_profile.values()
                for reg, _, _ in rows
            )
            self._interest[event] = hit
        return hit

    def plugin_interested(self, plugin: str, event: ClusterEvent) -> bool:
        """Upstream ``MatchAnyClusterEvent(event, pluginToEventsMap[plugin])``."""
        key = (plugin, event)
        hit = self._plugin_match.get(key)
        if hit is None:
            hit = any(events.matches(reg, event) for reg in self._plugin_events.get(plugin, ()))
            self._plugin_match[key] = hit
        return hit

    def _matching_hints(
        self, profile: str, event: ClusterEvent
    ) -> list[tuple[str, HintFn | None]] | None:
        key = (profile, event)
        found = self._matching.get(key)
        if found is None:
            rows = self._by_profile.get(profile)
            if rows is None:
                return None
            found = [(plugin, fn) for reg, plugin, fn in rows if events.matches(reg, event)]
            self._matching[key] = found
        return found

    def worth_requeuing(
        self, qp: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any
    ) -> Strategy:
        """Upstream ``isPodWorthRequeuing`` for one Pod and one event."""
        unschedulable, pending = qp.unschedulable_plugins, qp.pending_plugins
        if not unschedulable and not pending:
            return Strategy.AFTER_BACKOFF
        if events.is_wildcard(event):
            if new is not None and (
                not isinstance(new, api.Pod) or pod_uid(new) != pod_uid(qp.pod)
            ):
                return Strategy.SKIP
            return Strategy.AFTER_BACKOFF
        candidates = self._matching_hints(qp.pod.scheduler_name, event)
        if candidates is None:
            # No hint map for this profile: upstream logs a bug and requeues.
            return Strategy.AFTER_BACKOFF
        strategy = Strategy.SKIP
        for plugin, fn in candidates:
            if plugin not in unschedulable and plugin not in pending:
                continue
            if self.observe is None:
                hint = _call_hint(fn, qp.pod, old, new)
            else:
                hint = self._timed_hint(plugin, fn, event, qp.pod, old, new)
            if hint == QueueingHint.QUEUE_SKIP:
                continue
            if plugin in pending:
                return Strategy.IMMEDIATELY
            if not pending:
                return Strategy.AFTER_BACKOFF
            strategy = Strategy.AFTER_BACKOFF
        return strategy

    def replay(
        self, qp: QueuedPodInfo, recorded: Sequence[tuple[ClusterEvent, Any, Any]]
    ) -> Strategy:
        """The strongest strategy over events seen while ``qp`` was in flight (upstream
        ``determineSchedulingHintForInFlightPod``, for a Pod with rejectors)."""
        strategy = Strategy.SKIP
        for ev, old, new in recorded:
            s = self.worth_requeuing(qp, ev, old, new)
            if s == Strategy.IMMEDIATELY:
                return s
            if s == Strategy.AFTER_BACKOFF:
                strategy = s
                if not qp.pending_plugins:
                    return s
        return strategy

    def _timed_hint(
        self, plugin: str, fn: HintFn | None, event: ClusterEvent, pod: api.Pod, old: Any, new: Any
    ) -> QueueingHint:
        """:func:`_call_hint`, timed into :attr:`observe` with upstream's labels."""
        label = self._labels.get(event)
        if label is None:
            label = self._labels[event] = events.event_label(event)
        start = time.perf_counter()
        try:
            hint = QueueingHint.QUEUE if fn is None else fn(pod, old, new)
            result = "QueueSkip" if hint == QueueingHint.QUEUE_SKIP else "Queue"
        except Exception:  # upstream: a failing hint must not strand the Pod
            hint, result = QueueingHint.QUEUE, "Error"
        assert self.observe is not None
        self.observe(time.perf_counter() - start, plugin, label, result)
        return hint


def _call_hint(fn: HintFn | None, pod: api.Pod, old: Any, new: Any) -> QueueingHint:
    if fn is None:
        return QueueingHint.QUEUE
    try:
        return fn(pod, old, new)
    except Exception:  # upstream: a failing hint must not strand the Pod
        return QueueingHint.QUEUE
