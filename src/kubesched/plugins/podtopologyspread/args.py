"""PodTopologySpread args: the raw ``PodTopologySpreadArgs`` mapping, read once.

``profile.plugin_config["PodTopologySpread"]`` arrives as a read-only mapping already validated
by :mod:`kubesched.config.rawargs` (keys as in the YAML: ``defaultingType``,
``defaultConstraints``).  ``defaultingType: System`` (the default) uses upstream's system
default constraints; ``List`` uses ``defaultConstraints`` (possibly none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.api import objects as api

SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_ZONE = "topology.kubernetes.io/zone"

SYSTEM_DEFAULT_CONSTRAINTS = (
    api.TopologySpreadConstraint(
        max_skew=3, topology_key=LABEL_HOSTNAME, when_unsatisfiable=SCHEDULE_ANYWAY
    ),
    api.TopologySpreadConstraint(
        max_skew=5, topology_key=LABEL_ZONE, when_unsatisfiable=SCHEDULE_ANYWAY
    ),
)
"""Upstream ``systemDefaultConstraints`` (hostname maxSkew 3, zone maxSkew 5, soft)."""


@dataclass(frozen=True, slots=True)
class SpreadArgs:
    """The plugin's resolved args.

    ``default_constraints``: what a Pod without its own constraints gets (before the
    selector is deduced from its Services); ``system_defaulted``: they are the system ones.
    """

    default_constraints: tuple[api.TopologySpreadConstraint, ...] = SYSTEM_DEFAULT_CONSTRAINTS
    system_defaulted: bool = True


def _constraint(raw: Mapping[str, Any]) -> api.TopologySpreadConstraint:
    min_domains = raw.get("minDomains")
    return api.TopologySpreadConstraint(
        max_skew=int(raw.get("maxSkew", 0)),
        topology_key=str(raw.get("topologyKey", "")),
        when_unsatisfiable=str(raw.get("whenUnsatisfiable", "")),
        label_selector=None,  # forbidden in default constraints (deduced per Pod)
        min_domains=None if min_domains is None else int(min_domains),
        node_affinity_policy=raw.get("nodeAffinityPolicy"),
        node_taints_policy=raw.get("nodeTaintsPolicy"),
        match_label_keys=tuple(str(k) for k in raw.get("matchLabelKeys") or ()),
    )


def parse_args(args: object | None) -> SpreadArgs:
    """Resolve the raw args mapping (None means upstream defaults: System defaulting)."""
    if args is None:
        return SpreadArgs()
    if isinstance(args, SpreadArgs):
        return args
    if not isinstance(args, Mapping):
        raise TypeError(f"want args to be of type PodTopologySpreadArgs, got {type(args).__name__}")
    defaulting = args.get("defaultingType") or SYSTEM_DEFAULTING
    if defaulting == SYSTEM_DEFAULTING:
        return SpreadArgs()
    raw: Sequence[Mapping[str, Any]] = args.get("defaultConstraints") or ()
    return SpreadArgs(tuple(_constraint(c) for c in raw), system_defaulted=False)
