"""Per-plugin execution durations on sampled scheduling cycles, without touching the hot path.

Upstream records ``scheduler_plugin_execution_duration_seconds`` on a sample of cycles
(``pluginMetricsSamplePercent`` = 10).  Rather than asking "is this cycle sampled?" at every
plugin call, the scheduler keeps a *twin* of each profile's :class:`Framework` whose plugin
lists hold :class:`TimedPlugin` wrappers around the same plugin instances (so plugin state
is shared), and runs a sampled cycle — its scheduling cycle and its binding cycle — with the
twin.  Unsampled cycles pay nothing.

A wrapper has exactly the extension methods its plugin has (the runtime wires by the
Protocols of :mod:`kubesched.framework.contract`); everything else is delegated.  One
observation covers one call over a whole array of nodes (upstream: one Filter/Score call per
node).  PreEnqueue runs in the queue and is not sampled.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

from kubesched.framework import contract
from kubesched.framework.interface import Code, Status, Verdict
from kubesched.framework.runtime import Framework

Recorder = Callable[[str, str, str, float], None]
"""``record(plugin, extension_point, status, seconds)``."""

CODE_NAMES = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}
"""Upstream ``Code.String()``."""

TIMED_METHODS = {
    "pre_filter": "PreFilter",
    "filter": "Filter",
    "post_filter": "PostFilter",
    "pre_score": "PreScore",
    "score": "Score",
    "normalize_score": "ScoreExtensionNormalize",
    "reserve": "Reserve",
    "unreserve": "Unreserve",
    "permit": "Permit",
    "pre_bind": "PreBind",
    "bind": "Bind",
    "post_bind": "PostBind",
}
"""Plugin method -> upstream ``extension_point`` label."""
_PROTOCOL_OF: dict[str, type] = {
    **{m: contract.POINT_PROTOCOLS[m] for m in TIMED_METHODS if m in contract.POINT_PROTOCOLS},
    "normalize_score": contract.ScoreExtensions,
    "unreserve": contract.UnreservePlugin,
}
"""Timed method -> the Protocol a plugin implements to have it."""


def status_label(result: Any) -> str:
    """The ``status`` label of a plugin call's return value.

    A Status, or a tuple holding one (PreFilter, PostFilter, Permit), gives its code; a
    filter :class:`Verdict` gives Success when every node passed, else the first rejection's
    code; anything else (scores, None) is Success.
    """
    if isinstance(result, Status):
        return CODE_NAMES[result.code]
    if isinstance(result, tuple):
        for part in result:
            if isinstance(part, Status):
                return CODE_NAMES[part.code]
        return "Success"
    if isinstance(result, Verdict):
        if not result.table or not result.codes.any():  # no status to give: all passed
            return "Success"
        first = int(result.codes[result.codes != 0][0])
        status = result.table.get(first)
        return CODE_NAMES[status.code] if status is not None else "Unschedulable"
    return "Success"


class TimedPlugin:
    """A plugin whose extension methods record their duration."""

    def __init__(self, plugin: Any, record: Recorder) -> None:
        self._plugin = plugin
        self.name: str = plugin.name
        for method, point in TIMED_METHODS.items():
            if isinstance(plugin, _PROTOCOL_OF[method]):
                fn = getattr(plugin, method)
                setattr(self, method, _timed(fn, self.name, point, record))

    @property
    def wrapped(self) -> Any:
        """The plugin itself."""
        return self._plugin

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._plugin, attr)


def _timed(fn: Callable[..., Any], plugin: str, point: str, record: Recorder) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        result = fn(*args, **kwargs)
        record(plugin, point, status_label(result), time.perf_counter() - start)
        return result

    return call


def sampled_twin(fwk: Framework, record: Recorder) -> Framework:
    """A shallow copy of ``fwk`` whose plugin lists time every call into ``record``."""
    twin = copy.copy(fwk)
    wrappers: dict[int, TimedPlugin] = {}

    def wrap(p: Any) -> TimedPlugin:
        w = wrappers.get(id(p))
        if w is None:
            w = wrappers[id(p)] = TimedPlugin(p, record)
        return w

    twin.plugins = {point: [wrap(p) for p in ps] for point, ps in fwk.plugins.items()}
    twin.filter_plugins = twin.plugins["filter"]
    return twin
