"""Validation rules of KubeSchedulerConfiguration (upstream ``validation/validation.go``).

Each function returns (or appends) ``(field_path, message)`` problems; nothing raises, so the
loader can report every mistake at once.  Messages are upstream's ``field.Error`` bodies.

Beyond upstream (kubesched deviations, all reported as problems):

- a plugin named in any ``enabled`` list must be registered in kubesched (upstream fails the
  same config later, when building the framework: ``... "Foo" does not exist``);
- a name in a ``disabled`` list must be ``*``, registered, or an upstream plugin name
  (upstream silently ignores unknown names there, which hides typos);
- a negative score weight is rejected (upstream would use it as is).
"""

from __future__ import annotations

import ssl
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from kubesched.api import fielderr as fe
from kubesched.config import defaults as d
from kubesched.config import types as t
from kubesched.config.decode import Decoder, RawProfile
from kubesched.config.extenders import parse_tls, tls_context

NOT_REGISTERED = "no plugin of that name is registered"
NOT_IMPLEMENTED = "is an upstream plugin that kubesched does not implement yet"


def removed_message() -> str:
    """Upstream's detail for a plugin removed from the v1 API."""
    v = t.API_VERSION
    return f'was invalid in version "{v}" (KubeSchedulerConfiguration is version "{v}")'


def later_message(name: str, version: str) -> str:
    """Why an in-tree plugin of a later release is refused at ``version``."""
    return (
        f"is not an in-tree plugin of Kubernetes {version} "
        f"(upstream registers it from {d.LATER_PLUGIN_NAMES[name]} on)"
    )


def _check_name(
    name: str, path: str, known: Collection[str], *, enabled: bool, version: str = ""
) -> list[fe.Problem]:
    if version and name in d.unregistered_in(version):
        return [] if not enabled else [fe.invalid(path, name, later_message(name, version))]
    if name in d.REMOVED_PLUGIN_NAMES:
        return [] if not enabled else [fe.invalid(path, name, removed_message())]
    if name in known:
        return []
    if not enabled and (name == "*" or name in d.UPSTREAM_PLUGIN_NAMES):
        return []
    detail = NOT_IMPLEMENTED if name in d.UPSTREAM_PLUGIN_NAMES else NOT_REGISTERED
    return [fe.invalid(path, name, detail)]


def validate_plugin_names(
    plugins: t.Plugins, path: str, known: Collection[str], version: str = ""
) -> list[fe.Problem]:
    """Names and weights of a profile's ``plugins`` as the user wrote them (``version``: the
    Kubernetes release, whose later in-tree plugins are refused when enabled)."""
    problems: list[fe.Problem] = []
    for point in t.PLUGIN_SET_FIELDS:
        pset = plugins.get(point)
        point_path = fe.join(path, t.CAMEL[point])
        for i, ref in enumerate(pset.enabled):
            p = fe.index(fe.join(point_path, "enabled"), i)
            problems += _check_name(ref.name, p, known, enabled=True, version=version)
            if ref.weight is not None and ref.weight < 0:
                problems.append(
                    fe.invalid(
                        fe.join(p, "weight"),
                        ref.weight,
                        "must be positive (0 or unset means the default, 1)",
                    )
                )
        for i, ref in enumerate(pset.disabled):
            p = fe.index(fe.join(point_path, "disabled"), i)
            problems += _check_name(ref.name, p, known, enabled=False)
    return problems


def validate_plugin_config_names(prof: RawProfile, known: Collection[str]) -> list[fe.Problem]:
    """Duplicate and removed ``pluginConfig`` names.  An unknown name is accepted, as
    upstream does (its args are kept and never read: no profile can enable the plugin)."""
    problems: list[fe.Problem] = []
    seen: set[str] = set()
    for entry in prof.plugin_config:
        if entry.name in seen:
            problems.append(fe.duplicate(entry.path, entry.name))
        seen.add(entry.name)
        if entry.name in d.REMOVED_PLUGIN_NAMES:
            problems.append(fe.invalid(entry.path, entry.name, removed_message()))
    return problems


def _set_value(pset: t.PluginSet) -> dict[str, Any]:
    def refs(rs: tuple[t.PluginRef, ...]) -> list[dict[str, Any]]:
        return [
            {"name": r.name} | ({"weight": r.weight} if r.weight is not None else {}) for r in rs
        ]

    return {"enabled": refs(pset.enabled), "disabled": refs(pset.disabled)}


def validate_common_queue_sort(profiles: Sequence[RawProfile]) -> list[fe.Problem]:
    """Upstream ``validateCommonQueueSort``: one queueSort plugin, the same (with the same
    args) in every profile."""
    problems: list[fe.Problem] = []
    empty = t.PluginSet()

    def queue_sort(prof: RawProfile) -> t.PluginSet:
        # compared after merging with the (empty) default set, as upstream does
        return d.merge_plugin_set(empty, prof.plugins.queue_sort if prof.plugins else empty)

    canon = queue_sort(profiles[0])
    name = canon.enabled[0].name if canon.enabled else ""
    if len(canon.enabled) > 1:
        path = f"{profiles[0].path}.plugins.queueSort.enabled"
        problems.append(
            fe.invalid(path, len(canon.enabled), "only one queue sort plugin can be enabled")
        )
    canon_args = next((c.args for c in profiles[0].plugin_config if name and c.name == name), None)
    for prof in profiles[1:]:
        current = queue_sort(prof)
        if current != canon:
            path = f"{prof.path}.plugins.queueSort"
            problems.append(
                fe.invalid(path, _set_value(current), "must be the same for all profiles")
            )
        for cfg in prof.plugin_config:
            if cfg.name == name and cfg.args != canon_args:
                path = f"{prof.path}.pluginConfig.args"
                problems.append(
                    fe.invalid(path, cfg.args, "queueSort must be the same for all profiles")
                )
    return problems


def validate_percentage(value: int | None, path: str) -> list[fe.Problem]:
    """``percentageOfNodesToScore`` in [0, 100]."""
    if value is not None and not 0 <= value <= 100:
        return [fe.invalid(path, value, "not in valid range [0-100]")]
    return []


def validate_leader_election(
    le: t.LeaderElection, path: str = "leaderElection"
) -> list[fe.Problem]:
    """component-base ``ValidateLeaderElectionConfiguration`` plus the scheduler's lease rule."""
    problems: list[fe.Problem] = []
    if not le.leader_elect:
        return problems
    durations = (
        ("leaseDuration", le.lease_duration_seconds),
        ("renewDeadline", le.renew_deadline_seconds),
        ("retryPeriod", le.retry_period_seconds),
    )
    for key, seconds in durations:
        if seconds <= 0:
            problems.append(
                fe.invalid(fe.join(path, key), fe.go_duration(seconds), "must be greater than zero")
            )
    if le.lease_duration_seconds <= le.renew_deadline_seconds:
        problems.append(
            fe.invalid(
                fe.join(path, "leaseDuration"),
                fe.go_duration(le.renew_deadline_seconds),
                "LeaseDuration must be greater than RenewDeadline",
            )
        )
    if le.resource_lock != "leases":
        problems.append(
            fe.invalid(
                fe.join(path, "resourceLock"),
                le.resource_lock,
                'resourceLock value must be "leases"',
            )
        )
    return problems


_EXTENDER_FIELDS = (
    "urlPrefix",
    "filterVerb",
    "preemptVerb",
    "prioritizeVerb",
    "weight",
    "bindVerb",
    "enableHTTPS",
    "tlsConfig",
    "httpTimeout",
    "nodeCacheCapable",
    "managedResources",
    "ignorable",
)


def validate_extenders(
    dec: Decoder, value: Any, path: str = "extenders"
) -> list[Mapping[str, Any]]:
    """Decode ``extenders`` strictly and check upstream's rules; returns the raw entries."""
    entries: list[Mapping[str, Any]] = []
    binders = 0
    managed: set[str] = set()
    for i, item in enumerate(dec.lst(value, path)):
        p = fe.index(path, i)
        e = dec.obj(item, p, _EXTENDER_FIELDS)
        if e is None:
            continue
        entries.append(t.frozen_mapping(e))
        weight = dec.integer(e.get("weight"), fe.join(p, "weight"), fe.INT64_MIN, fe.INT64_MAX)
        if e.get("prioritizeVerb") and (weight or 0) <= 0:
            msg = "must have a positive weight applied to it"
            dec.problems.append(fe.invalid(fe.join(p, "weight"), weight or 0, msg))
        if e.get("bindVerb"):
            binders += 1
        tp = fe.join(p, "httpTimeout")
        timeout = dec.duration(e.get("httpTimeout"), tp)
        if timeout is not None and timeout < 0:  # Go would run such a client without any
            dec.problems.append(fe.invalid(tp, e.get("httpTimeout"), "must not be negative"))
        _check_transport(dec, e, p)
        mp = fe.join(p, "managedResources")
        for j, res in enumerate(dec.lst(e.get("managedResources"), mp)):
            rp = fe.join(fe.index(mp, j), "name")
            r = dec.obj(res, fe.index(mp, j), ("name", "ignoredByScheduler")) or {}
            name = dec.string(r.get("name"), rp) or ""
            errs = fe.qualified_name_errors(name)
            dec.problems.extend(fe.invalid(rp, name, m) for m in errs)
            if not errs and not fe.is_extended_resource_name(name):
                dec.problems.append(fe.invalid(rp, name, "is an invalid extended resource name"))
            if name in managed:
                dec.problems.append(
                    fe.invalid(rp, name, "duplicate extender managed resource name")
                )
            managed.add(name)
    if binders > 1:
        dec.problems.append(
            fe.invalid(
                path,
                f"found {binders} extenders implementing bind",
                "only one extender can implement bind",
            )
        )
    return entries


def _check_transport(dec: Decoder, e: Mapping[str, Any], path: str) -> None:
    """Upstream's ``NewHTTPExtender`` builds the extender's TLS transport when the scheduler
    starts, and kube-scheduler does not start if it cannot (a certificate file missing or
    unreadable, bytes that are no PEM certificate or key): the same refusal here, at load."""
    tls = e.get("tlsConfig")
    https = e.get("enableHTTPS") is True
    if not (https or isinstance(tls, Mapping)):
        return
    try:
        tls_context(https, parse_tls(tls) if isinstance(tls, Mapping) else None)
    except (OSError, ssl.SSLError, ValueError) as err:
        where = fe.join(path, "tlsConfig") if isinstance(tls, Mapping) else path
        dec.problems.append((where, f"couldn't create the extender's TLS transport: {err}"))
