"""KubeSchedulerConfiguration ``kubescheduler.config.k8s.io/v1`` as frozen dataclasses.

These are the *defaulted* values: :func:`kubesched.config.load.load_config` fills every field
upstream v1.34 defaults (``pkg/scheduler/apis/config/v1/defaults.go``), merges each profile's
plugins with the default plugin set, and validates, so code holding one of these can trust it.

Extension-point attribute names are upstream's in snake_case (``pre_filter``, ``multi_point``);
:data:`CAMEL` maps them to the YAML keys (``preFilter``, ``multiPoint``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from kubesched.api import objects as api

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"

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


def _default_plugins() -> Plugins:
    from kubesched.config import defaults  # defaults imports this module

    return defaults.DEFAULT_PLUGINS


def _default_plugin_config() -> Mapping[str, object]:
    from kubesched.config import defaults

    return defaults.default_plugin_config(defaults.DEFAULT_PLUGINS, {})


@dataclass(frozen=True, slots=True)
class Profile:
    """A scheduling profile (upstream ``KubeSchedulerProfile``), already defaulted."""

    scheduler_name: str = api.DEFAULT_SCHEDULER_NAME
    """Pods whose ``spec.schedulerName`` equals this use the profile."""
    plugins: Plugins = field(default_factory=_default_plugins)
    """Merged plugin sets (upstream default plugins unless the config changes them)."""
    plugin_config: Mapping[str, object] = field(default_factory=_default_plugin_config)
    """Plugin name -> args: a typed class of :mod:`kubesched.config.args` for the plugins we
    type, otherwise the (defaulted) raw mapping.  Every enabled plugin that upstream gives an
    args type has an entry, as upstream's defaulting appends one."""
    percentage_of_nodes_to_score: int | None = None
    """Percent 0..100 overriding the global value; None means use the global one."""


@dataclass(frozen=True, slots=True)
class ClientConnection:
    """``clientConnection``: how the live adapter talks to the API server."""

    kubeconfig: str = ""
    """Path of a kubeconfig file; empty means in-cluster or the default loading rules."""
    accept_content_types: str = ""
    """``Accept`` header sent to the API server."""
    content_type: str = "application/vnd.kubernetes.protobuf"
    """Content type of requests (upstream scheduler default: protobuf)."""
    qps: float = 50.0
    """Requests per second allowed to the API server (scheduler default 50)."""
    burst: int = 100
    """Extra requests allowed in a burst (scheduler default 100)."""


@dataclass(frozen=True, slots=True)
class LeaderElection:
    """``leaderElection`` (component-base v1alpha1), durations in seconds."""

    leader_elect: bool = True
    """Whether to run leader election at all (default true)."""
    lease_duration_seconds: float = 15.0
    """How long a non-leader waits before trying to take over (default 15s)."""
    renew_deadline_seconds: float = 10.0
    """How long the leader keeps retrying to renew before stepping down (default 10s)."""
    retry_period_seconds: float = 2.0
    """Wait between acquire/renew attempts (default 2s)."""
    resource_lock: str = "leases"
    """Lock object type; only ``leases`` is accepted."""
    resource_name: str = "kube-scheduler"
    """Name of the lock object (default ``kube-scheduler``)."""
    resource_namespace: str = "kube-system"
    """Namespace of the lock object (default ``kube-system``)."""


@dataclass(frozen=True, slots=True)
class KubeSchedulerConfiguration:
    """The whole configuration, defaulted and validated."""

    parallelism: int = 16
    """Workers for filter/score fan-out (int32 > 0, default 16)."""
    percentage_of_nodes_to_score: int | None = None
    """Percent 0..100 of nodes to find feasible before scoring; None or 0 means adaptive
    (``max(5, 50 - nodes/125)``%, at least 100 nodes)."""
    pod_initial_backoff_seconds: int = 1
    """First backoff of an unschedulable Pod, seconds (> 0, default 1)."""
    pod_max_backoff_seconds: int = 10
    """Backoff cap, seconds (>= initial, default 10)."""
    profiles: tuple[Profile, ...] = field(default_factory=lambda: (Profile(),))
    """Profiles, unique ``scheduler_name`` each; default: one ``default-scheduler``."""
    client_connection: ClientConnection = ClientConnection()
    """API-server client settings (used only by the live adapter)."""
    leader_election: LeaderElection = LeaderElection()
    """Leader-election settings (used only by the live adapter)."""
    extenders: tuple[Mapping[str, Any], ...] = ()
    """``extenders`` as given (validated like upstream); typed by
    :func:`kubesched.config.extenders.parse_extenders`."""
    enable_profiling: bool = True
    """Upstream ``enableProfiling`` (pprof handlers); kept for round trips."""
    enable_contention_profiling: bool = True
    """Upstream ``enableContentionProfiling``; kept for round trips."""
    delay_cache_until_active: bool = False
    """Upstream ``delayCacheUntilActive``: fill informer caches only once leader."""

    def profile(self, scheduler_name: str) -> Profile | None:
        """The profile for ``spec.schedulerName``, or None when no profile has that name."""
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        return None


def frozen_mapping(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only view of a shallow copy of ``data`` (for mapping fields of frozen values)."""
    return MappingProxyType(dict(data))
