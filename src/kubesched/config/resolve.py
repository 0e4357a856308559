"""The effective plugin list of every extension point of a profile (multiPoint expanded).

This is the config half of upstream ``frameworkImpl`` construction
(``pkg/scheduler/framework/runtime/framework.go``: ``updatePluginList``,
``expandMultiPointPlugins``, ``getScoreWeights`` and the queue-sort / bind checks), kept pure:
the caller says which points a plugin implements, and gets names and weights back.

Order of a point, as upstream:

1. plugins enabled both at the point and through multiPoint (the point's setting overrides
   the multiPoint one), in the point's order;
2. the other multiPoint plugins that implement the point and are not disabled there, in
   multiPoint order (``disabled: [{name: "*"}]`` at the point skips this step);
3. the remaining plugins enabled at the point, in its order.

Score weights: the first entry naming the plugin in ``score.enabled``, then in
``multiPoint.enabled``, wins; an unset or 0 weight means 1.

A multiPoint plugin that ``implements`` says nothing about (for example an upstream default
plugin kubesched does not have) is simply left out; upstream would refuse to start.
"""

from __future__ import annotations

from collections.abc import Callable

from kubesched.api import fielderr as fe
from kubesched.api.errors import InputError
from kubesched.config import types as t

Implements = Callable[[str, str], bool]
"""``implements(plugin_name, point)``: whether the plugin joins extension point ``point``
(a name of :data:`kubesched.config.types.EXTENSION_POINTS`)."""

_GO_TYPE = {point: t.CAMEL[point][0].upper() + t.CAMEL[point][1:] + "Plugin" for point in t.CAMEL}


def _expand_point(
    plugins: t.Plugins, point: str, implements: Implements, problems: list[fe.Problem], path: str
) -> list[str]:
    pset = plugins.get(point)
    go_type = _GO_TYPE[point]
    specific: list[str] = []
    for ref in pset.enabled:
        if not implements(ref.name, point):
            problems.append((path, f'plugin "{ref.name}" does not extend {go_type} plugin'))
        elif ref.name in specific:
            problems.append((path, f'plugin "{ref.name}" already registered as "{go_type}"'))
        else:
            specific.append(ref.name)
    disabled = {ref.name for ref in pset.disabled}
    if "*" in disabled:
        return specific
    multi: list[str] = []
    overridden: set[str] = set()
    for ref in plugins.multi_point.enabled:
        if not implements(ref.name, point) or ref.name in disabled:
            continue
        if ref.name in specific:
            overridden.add(ref.name)
        elif ref.name in multi:
            problems.append((path, f'plugin "{ref.name}" already registered as "{go_type}"'))
        else:
            multi.append(ref.name)
    first = [name for name in specific if name in overridden]
    rest = [name for name in specific if name not in overridden]
    return first + multi + rest


def score_weights(plugins: t.Plugins, implements: Implements) -> dict[str, int]:
    """Weight of every score plugin named in ``score.enabled`` or ``multiPoint.enabled``."""
    weights: dict[str, int] = {}
    for ref in (*plugins.score.enabled, *plugins.multi_point.enabled):
        if ref.name in weights or not implements(ref.name, "score"):
            continue
        weights[ref.name] = ref.weight or 1
    return weights


def resolve_plugins(
    profile: t.Profile, implements: Implements, *, path: str = ""
) -> dict[str, list[tuple[str, int]]]:
    """Point name -> ordered ``(plugin, weight)`` list for every extension point.

    ``weight`` is the score weight for ``score`` and 0 elsewhere.  Raises
    :class:`InputError` (paths under ``path``, e.g. ``profiles[0]``) when a plugin is enabled
    at a point it does not implement, is registered twice at one point, or the profile does
    not end with exactly one queue-sort plugin and at least one bind plugin.
    """
    problems: list[fe.Problem] = []
    plugins = profile.plugins
    weights = score_weights(plugins, implements)
    result: dict[str, list[tuple[str, int]]] = {}
    for point in t.EXTENSION_POINTS:
        point_path = fe.join(path, f"plugins.{t.CAMEL[point]}")
        names = _expand_point(plugins, point, implements, problems, point_path)
        if point == "score":
            result[point] = [(name, weights.get(name, 1)) for name in names]
        else:
            result[point] = [(name, 0) for name in names]
    who = f'profile with scheduler name "{profile.scheduler_name}"'
    if len(result["queue_sort"]) != 1:
        problems.append(
            (
                fe.join(path, "plugins.queueSort"),
                f"only one queue sort plugin required for {who}, "
                f"but got {len(result['queue_sort'])}",
            )
        )
    if not result["bind"]:
        problems.append(
            (fe.join(path, "plugins.bind"), f"at least one bind plugin is needed for {who}")
        )
    if problems:
        raise InputError(problems)
    return result
