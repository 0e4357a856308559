"""KubeSchedulerConfiguration ``kubescheduler.config.k8s.io/v1`` as frozen dataclasses.

These are the *defaulted* values: :func:`kubesched.config.load.load_config` fills every field
upstream defaults (``pkg/scheduler/apis/config/v1/defaults.go``), merges each profile's
plugins with the default plugin set, and validates, so code holding one of these can trust it.

The plugin sets themselves live in :mod:`kubesched.config.pluginsets` (below the defaults,
which build the default set from them) and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.api import objects as api
from kubesched.config import defaults
from kubesched.config.featuregates import FeatureGates
from kubesched.config.pluginsets import CAMEL as CAMEL
from kubesched.config.pluginsets import EXTENSION_POINTS as EXTENSION_POINTS
from kubesched.config.pluginsets import PLUGIN_SET_FIELDS as PLUGIN_SET_FIELDS
from kubesched.config.pluginsets import PluginRef as PluginRef
from kubesched.config.pluginsets import Plugins as Plugins
from kubesched.config.pluginsets import PluginSet as PluginSet
from kubesched.config.pluginsets import frozen_mapping as frozen_mapping

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"


def _default_plugins() -> Plugins:
    return defaults.DEFAULT_PLUGINS


def _default_plugin_config() -> Mapping[str, object]:
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
    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    """The Kubernetes version modelled and its feature gates (not a field of the v1 file:
    ``--kubernetes-version``, ``--feature-gates``, a scenario's ``spec.kubernetesVersion``);
    the default profile is that version's."""

    def profile(self, scheduler_name: str) -> Profile | None:
        """The profile for ``spec.schedulerName``, or None when no profile has that name."""
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        return None
