"""The plugin sets of a profile (upstream ``v1.Plugins``, ``v1.PluginSet``, ``v1.Plugin``).

Below both :mod:`kubesched.config.defaults` (the default plugin set is built from these) and
:mod:`kubesched.config.types` (a profile holds them), so neither imports the other's users.
Extension-point attribute names are upstream's in snake_case (``pre_filter``, ``multi_point``);
:data:`CAMEL` maps them to the YAML keys (``preFilter``, ``multiPoint``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

EXTENSION_POINTS = (
    "pre_enqueue",
    "queue_sort",
    "pre_filter",
    "filter",
    "post_filter",
    "pre_score",
    "score",
    "reserve",
    "permit",
    "pre_bind",
    "bind",
    "post_bind",
)
"""Every extension point a plugin can join, in scheduling-cycle order (``multi_point`` excluded)."""

PLUGIN_SET_FIELDS = (*EXTENSION_POINTS, "multi_point")
"""The :class:`Plugins` attributes: every extension point plus ``multi_point``."""

CAMEL = {
    "pre_enqueue": "preEnqueue",
    "queue_sort": "queueSort",
    "pre_filter": "preFilter",
    "filter": "filter",
    "post_filter": "postFilter",
    "pre_score": "preScore",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "pre_bind": "preBind",
    "bind": "bind",
    "post_bind": "postBind",
    "multi_point": "multiPoint",
}
"""snake_case attribute name -> the YAML/JSON key of the ``plugins`` section."""


@dataclass(frozen=True, slots=True)
class PluginRef:
    """One ``{name, weight}`` entry of a plugin set (upstream ``v1.Plugin``)."""

    name: str
    """Plugin name, byte-identical to upstream (``NodeResourcesFit``); ``*`` in ``disabled``."""
    weight: int | None = None
    """Score weight (int32); only used for Score.  None or 0 means 1 when the plugin scores."""


@dataclass(frozen=True, slots=True)
class PluginSet:
    """Enabled and disabled plugins of one extension point (upstream ``v1.PluginSet``)."""

    enabled: tuple[PluginRef, ...] = ()
    """Plugins to run, in this order, after the (not disabled) defaults."""
    disabled: tuple[PluginRef, ...] = ()
    """Default plugins to switch off; ``PluginRef("*")`` switches off all of them."""


@dataclass(frozen=True, slots=True)
class Plugins:
    """A profile's plugins, one :class:`PluginSet` per extension point plus ``multi_point``.

    After loading, this is upstream's *merged* set (defaults combined with the user's sets by
    ``mergePlugins``); :func:`kubesched.config.resolve.resolve_plugins` expands ``multi_point``
    into the effective per-point lists.
    """

    pre_enqueue: PluginSet = PluginSet()
    """Checks before a Pod enters the active queue (``preEnqueue``)."""
    queue_sort: PluginSet = PluginSet()
    """Orders the active queue (``queueSort``); exactly one must end up enabled."""
    pre_filter: PluginSet = PluginSet()
    """Per-Pod precomputation and early rejection (``preFilter``)."""
    filter: PluginSet = PluginSet()
    """Per-node feasibility (``filter``)."""
    post_filter: PluginSet = PluginSet()
    """Runs when no node fits, e.g. preemption (``postFilter``)."""
    pre_score: PluginSet = PluginSet()
    """Per-Pod precomputation for scoring (``preScore``)."""
    score: PluginSet = PluginSet()
    """Ranks feasible nodes; weights apply here (``score``)."""
    reserve: PluginSet = PluginSet()
    """Reserve / Unreserve on the chosen node (``reserve``)."""
    permit: PluginSet = PluginSet()
    """Approve, deny or delay binding (``permit``)."""
    pre_bind: PluginSet = PluginSet()
    """Work before binding, e.g. volumes (``preBind``)."""
    bind: PluginSet = PluginSet()
    """Binds the Pod; the first plugin that does not skip wins (``bind``)."""
    post_bind: PluginSet = PluginSet()
    """Informational, after a successful bind (``postBind``)."""
    multi_point: PluginSet = PluginSet()
    """Plugins enabled at every point they implement (``multiPoint``)."""

    def get(self, point: str) -> PluginSet:
        """The set of ``point`` (a name of :data:`PLUGIN_SET_FIELDS`)."""
        value = getattr(self, point)
        assert isinstance(value, PluginSet)
        return value


def frozen_mapping(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only view of a shallow copy of ``data`` (for mapping fields of frozen values)."""
    return MappingProxyType(dict(data))
