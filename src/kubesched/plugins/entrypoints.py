"""Out-of-tree plugins: installed Python packages register plugins by name.

A package declares, in its ``pyproject.toml``::

    [project.entry-points."kubesched.plugins"]
    PreferNodeLabel = "kubesched_example_plugin.prefer_label:new"

The entry point's *name* is the plugin name a configuration enables (like an in-tree name,
byte-identical); its *object* is the plugin factory ``new(args, handle) -> plugin`` (or a
module with such a ``new``).  Out-of-tree plugins follow the same contract as in-tree ones
(``docs/plugins.md``): vectorised Filter/Score over node rows, CycleState, queueing hints,
``sign`` for result reuse.  The runtime range-checks their scores, and sampled cycles time
them like any plugin.

Upstream compiles out-of-tree plugins into the binary (``app.WithPlugin``); installing a
package is kubesched's equivalent.  A name registered twice (by two packages, or clashing
with an in-tree plugin) is an error, as upstream's ``Registry.Merge`` refuses duplicates.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from importlib import metadata
from types import ModuleType
from typing import Any

from kubesched.framework.interface import PluginFactory

ENTRY_POINT_GROUP = "kubesched.plugins"
"""The entry-point group an installed package registers its plugins in."""


class PluginRegistryError(Exception):
    """An out-of-tree plugin cannot be registered (duplicate name, failed import, not a
    factory)."""


def _factory(ep: metadata.EntryPoint) -> PluginFactory:
    dist = ep.dist.name if ep.dist is not None else "?"
    try:
        obj: Any = ep.load()
    except Exception as e:
        raise PluginRegistryError(
            f"plugin {ep.name!r} of package {dist!r}: cannot load {ep.value!r}: {e}"
        ) from e
    if isinstance(obj, ModuleType):
        obj = getattr(obj, "new", None)
    if not callable(obj):
        raise PluginRegistryError(
            f"plugin {ep.name!r} of package {dist!r}: {ep.value!r} is not a plugin factory"
        )
    factory: Callable[..., Any] = obj
    return factory


@functools.cache
def _load() -> tuple[tuple[str, PluginFactory], ...]:
    seen: dict[str, str] = {}
    out: list[tuple[str, PluginFactory]] = []
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist.name if ep.dist is not None else "?"
        if ep.name in seen:
            if seen[ep.name] == dist:
                continue  # the same distribution seen twice on sys.path
            raise PluginRegistryError(
                f"plugin {ep.name!r} is registered by both {seen[ep.name]!r} and {dist!r}"
            )
        seen[ep.name] = dist
        out.append((ep.name, _factory(ep)))
    return tuple(sorted(out, key=lambda kv: kv[0]))


def entry_point_registry() -> dict[str, PluginFactory]:
    """Every installed out-of-tree plugin by name (loaded once per process)."""
    return dict(_load())


def merge(
    in_tree: Mapping[str, PluginFactory], extra: Mapping[str, PluginFactory]
) -> dict[str, PluginFactory]:
    """``in_tree`` plus ``extra``; a name in both is a :class:`PluginRegistryError`."""
    clash = sorted(set(in_tree) & set(extra))
    if clash:
        raise PluginRegistryError(f"out-of-tree plugin(s) {clash} clash with in-tree plugin names")
    return {**in_tree, **extra}


def refresh() -> None:
    """Forget the loaded entry points (after installing a package in a running process)."""
    _load.cache_clear()
