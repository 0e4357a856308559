"""Load a KubeSchedulerConfiguration: read, decode strictly, default, validate.

:func:`load_config` is the one entry point.  Every problem (unknown field, wrong type,
invalid value) is collected with its field path and raised together as one
:class:`~kubesched.api.errors.InputError`; a clean result is fully defaulted (upstream
``SetDefaults_KubeSchedulerConfiguration`` of the Kubernetes version given), so callers never
look at raw input again.

Like upstream's strict decoder, a key repeated in one YAML mapping is an error; files are
read by :mod:`kubesched.api.source`, the reader every command shares.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from typing import Any

from kubesched.api import fielderr as fe
from kubesched.api import objects as api
from kubesched.api import source
from kubesched.api.errors import InputError, name_or_shape
from kubesched.config import decode, pluginargs
from kubesched.config import defaults as d
from kubesched.config import types as t
from kubesched.config import validate as v
from kubesched.config.decode import Decoder, RawProfile
from kubesched.config.featuregates import FeatureGates
from kubesched.config.resolve import resolve_plugins

__all__ = ["build_config", "load_config", "load_config_file", "read_file", "resolve_plugins"]

_TOP_FIELDS = (
    "apiVersion",
    "kind",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
    "extenders",
    "delayCacheUntilActive",
)


def read_file(path: str) -> Any:
    """The single YAML or JSON document in ``path``, read by :mod:`kubesched.api.source` (the
    one reader of every command: a repeated key is an error everywhere)."""
    docs = source.load_text(source.read_text(path), path)
    if len(docs) != 1:
        raise InputError(f"expected one document, found {len(docs)}", file=path)
    return docs[0]


def load_config_file(path: str | None) -> dict[str, Any] | None:
    """The raw KubeSchedulerConfiguration document of ``path`` (None: upstream's defaults),
    for a caller that hands it on to :func:`load_config`: every command reads its
    ``--config`` through here, so offline and live judge a file alike."""
    if path is None:
        return None
    raw = read_file(path)
    if not isinstance(raw, dict):
        raise InputError([("", "a KubeSchedulerConfiguration must be a mapping")], file=path)
    return raw


def load_config(
    source: str | os.PathLike[str] | Mapping[str, Any] | None,
    *,
    known_plugins: Collection[str],
    gates: FeatureGates | None = None,
) -> t.KubeSchedulerConfiguration:
    """The defaulted, validated configuration from a file path, a mapping, or None (defaults).

    ``known_plugins`` are the plugin names kubesched can run (the registry's keys); a name
    enabled anywhere must be one of them.  ``gates`` is the Kubernetes version and feature
    gates modelled (None: the default version's defaults); the default profile is theirs.
    Raises :class:`InputError` with every problem.
    """
    if source is None:
        return build_config({"apiVersion": t.API_VERSION, "kind": t.KIND}, known_plugins, gates)
    if isinstance(source, Mapping):
        return build_config(source, known_plugins, gates)
    path = os.fspath(source)
    raw = read_file(path)
    try:
        return build_config(raw, known_plugins, gates)
    except InputError as err:
        raise err.with_file(path) from None


def build_config(
    raw: Any, known_plugins: Collection[str], gates: FeatureGates | None = None
) -> t.KubeSchedulerConfiguration:
    """Decode, default and validate one configuration mapping (see :func:`load_config`)."""
    known = frozenset(known_plugins)
    gates = FeatureGates() if gates is None else gates
    dec = Decoder()
    top = dec.obj(raw, "", _TOP_FIELDS)
    if top is None:
        raise InputError([("", "a KubeSchedulerConfiguration must be a mapping")])
    for key, want in (("apiVersion", t.API_VERSION), ("kind", t.KIND)):
        got = top.get(key)
        if got is None:
            dec.problems.append(fe.required(key))
        elif got != want:
            shown = name_or_shape(got)  # a file of another kind: its content is not quoted
            if shown == repr(got):
                dec.problems.append(fe.not_supported(key, got, (want,)))
            else:
                dec.problems.append(
                    (key, f'Unsupported value: {shown}: supported values: "{want}"')
                )
    parallelism = dec.integer(top.get("parallelism"), "parallelism")
    percentage = dec.integer(top.get("percentageOfNodesToScore"), "percentageOfNodesToScore")
    initial = dec.integer(
        top.get("podInitialBackoffSeconds"), "podInitialBackoffSeconds", fe.INT64_MIN, fe.INT64_MAX
    )
    maximum = dec.integer(
        top.get("podMaxBackoffSeconds"), "podMaxBackoffSeconds", fe.INT64_MIN, fe.INT64_MAX
    )
    client = decode.client_connection(dec, top.get("clientConnection"), "clientConnection")
    before = len(dec.problems)
    leader = decode.leader_election(dec, top.get("leaderElection"), "leaderElection")
    leader_decoded = len(dec.problems) == before  # else its checks would only cascade
    profiling = dec.boolean(top.get("enableProfiling"), "enableProfiling")
    contention = dec.boolean(top.get("enableContentionProfiling"), "enableContentionProfiling")
    delay = dec.boolean(top.get("delayCacheUntilActive"), "delayCacheUntilActive")
    raw_profiles = [
        decode.profile(dec, item, fe.index("profiles", i))
        for i, item in enumerate(dec.lst(top.get("profiles"), "profiles"))
    ]
    extenders = v.validate_extenders(dec, top.get("extenders"))

    # Defaulting (upstream SetDefaults_KubeSchedulerConfiguration).
    parallelism = 16 if parallelism is None else parallelism
    initial = 1 if initial is None else initial
    maximum = 10 if maximum is None else maximum
    if not raw_profiles:
        raw_profiles = [RawProfile(path="profiles[0]")]
    if len(raw_profiles) == 1 and raw_profiles[0].scheduler_name is None:
        raw_profiles[0].scheduler_name = api.DEFAULT_SCHEDULER_NAME
    profiling = True if profiling is None else profiling
    contention = profiling if contention is None else contention

    # Validation (upstream ValidateKubeSchedulerConfiguration order).
    problems = dec.problems
    if client.burst < 0:
        problems.append(fe.invalid("clientConnection.burst", client.burst, "must be non-negative"))
    if leader_decoded:
        problems += v.validate_leader_election(leader)
    if parallelism <= 0:
        problems.append(
            fe.invalid("parallelism", parallelism, "should be an integer value greater than zero")
        )
    profiles = []
    seen_names: dict[str, int] = {}
    for i, rp in enumerate(raw_profiles):
        profiles.append(_profile(dec, rp, known, gates))
        name = rp.scheduler_name or ""
        if name and name in seen_names:
            problems.append(fe.duplicate(fe.join(rp.path, "schedulerName"), name))
        seen_names.setdefault(name, i)
    problems += v.validate_common_queue_sort(raw_profiles)
    problems += v.validate_percentage(percentage, "percentageOfNodesToScore")
    if initial <= 0:
        problems.append(fe.invalid("podInitialBackoffSeconds", initial, "must be greater than 0"))
    if maximum < initial:
        problems.append(
            fe.invalid(
                "podMaxBackoffSeconds",
                maximum,
                "must be greater than or equal to PodInitialBackoffSeconds",
            )
        )
    if problems:
        raise InputError(problems)
    return t.KubeSchedulerConfiguration(
        parallelism=parallelism,
        percentage_of_nodes_to_score=percentage,
        pod_initial_backoff_seconds=initial,
        pod_max_backoff_seconds=maximum,
        profiles=tuple(profiles),
        client_connection=client,
        leader_election=leader,
        extenders=tuple(extenders),
        enable_profiling=profiling,
        enable_contention_profiling=contention,
        delay_cache_until_active=bool(delay),
        feature_gates=gates,
    )


def _profile(dec: Decoder, rp: RawProfile, known: frozenset[str], gates: FeatureGates) -> t.Profile:
    """Validate one decoded profile (problems go to ``dec``) and build its defaulted value."""
    if not rp.scheduler_name:
        dec.problems.append(fe.required(fe.join(rp.path, "schedulerName")))
    dec.problems += v.validate_percentage(
        rp.percentage_of_nodes_to_score, fe.join(rp.path, "percentageOfNodesToScore")
    )
    if rp.plugins is not None:
        dec.problems += v.validate_plugin_names(
            rp.plugins, fe.join(rp.path, "plugins"), known, gates.version
        )
    dec.problems += v.validate_plugin_config_names(rp, known)
    plugins = d.merge_plugins(d.default_plugins(gates), rp.plugins)
    enabled = {ref.name for point in t.PLUGIN_SET_FIELDS for ref in plugins.get(point).enabled}
    configured: dict[str, object] = {}
    for entry in rp.plugin_config:
        args_path = fe.join(entry.path, "args")
        args = pluginargs.decode_args(
            dec, entry.name, entry.args, args_path, enabled=entry.name in enabled, gates=gates
        )
        configured.setdefault(entry.name, args)
    return t.Profile(
        scheduler_name=rp.scheduler_name or "",
        plugins=plugins,
        plugin_config=d.default_plugin_config(plugins, configured, gates),
        percentage_of_nodes_to_score=rp.percentage_of_nodes_to_score,
    )
