"""Cheap per-cycle recorders with cached label children (extension points, plugins)."""

from __future__ import annotations

from typing import Any

from kubesched.metrics.histogram import (
    BufferedHistogram,
)


class ExtensionPointObserver:
    """Records ``scheduler_framework_extension_point_duration_seconds`` for one profile.

    ``status`` may be upstream's code string or an enum name (``UNSCHEDULABLE_AND_UNRESOLVABLE``
    or ``Unschedulable_And_Unresolvable``); it is exported as upstream's
    ``UnschedulableAndUnresolvable``.
    """

    __slots__ = ("_children", "_metric", "_profile")

    def __init__(self, metric: BufferedHistogram, profile: str) -> None:
        self._metric = metric
        self._profile = profile
        self._children: dict[tuple[str, str], Any] = {}

    def __call__(self, point: str, status: str, seconds: float) -> None:
        child = self._children.get((point, status))
        if child is None:
            child = self._metric.labels(
                extension_point=point, status=code_label(status), profile=self._profile
            )
            self._children[(point, status)] = child
        child.observe(seconds)


class PluginRecorder:
    """Records ``scheduler_plugin_execution_duration_seconds`` (children cached)."""

    __slots__ = ("_children", "_metric")

    def __init__(self, metric: BufferedHistogram) -> None:
        self._metric = metric
        self._children: dict[tuple[str, str, str], Any] = {}

    def __call__(self, plugin: str, point: str, status: str, seconds: float) -> None:
        key = (plugin, point, status)
        child = self._children.get(key)
        if child is None:
            child = self._metric.labels(
                plugin=plugin, extension_point=point, status=code_label(status)
            )
            self._children[key] = child
        child.observe(seconds)


class LabelledObserver:
    """``observe(seconds, *label_values)`` on one histogram, children cached by label values
    (event handling, queueing hints: called per event or hint call, so kept cheap)."""

    __slots__ = ("_children", "_metric")

    def __init__(self, metric: BufferedHistogram) -> None:
        self._metric = metric
        self._children: dict[tuple[str, ...], Any] = {}

    def __call__(self, seconds: float, *values: str) -> None:
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = self._metric.labels(*values)
        child.observe(seconds)


def code_label(status: str) -> str:
    """Upstream ``Code.String()`` from an enum-style name (``UNSCHEDULABLE_AND_UNRESOLVABLE``)."""
    if "_" not in status and not status.isupper():
        return status
    return "".join(part.title() for part in status.split("_"))
