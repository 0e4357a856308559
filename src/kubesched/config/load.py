"""Load a KubeSchedulerConfiguration: read, decode strictly, default, validate.

:func:`load_config` is the one entry point.  Every problem (unknown field, wrong type,
invalid value) is collected with its field path and raised together as one
:class:`~kubesched.api.errors.InputError`; a clean result is fully defaulted (upstream v1.34
``SetDefaults_KubeSchedulerConfiguration``), so callers never look at raw input again.

Like upstream's strict decoder, a key repeated in one YAML mapping is an error.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from typing import Any

import yaml

from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.config import decode, pluginargs
from kubesched.config import defaults as d
from kubesched.config import fielderr as fe
from kubesched.config import types as t
from kubesched.config import validate as v
from kubesched.config.decode import Decoder, RawProfile
from kubesched.config.resolve import resolve_plugins

__all__ = ["build_config", "load_config", "read_file", "resolve_plugins"]

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


class _StrictLoader(yaml.SafeLoader):
    """Safe loader that rejects a key repeated within one mapping."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            line = key_node.start_mark.line + 1
            raise yaml.constructor.ConstructorError(
                None, None, f'key "{key}" already set in map (line {line})', key_node.start_mark
            )
        seen.add(key)
    return dict(loader.construct_mapping(node, deep=True))


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_file(path: str) -> Any:
    """The single YAML or JSON document in ``path`` (JSON is YAML, so one reader suffices)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise InputError("no such file", file=path) from None
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read: {err}", file=path) from None
    try:
        docs = [doc for doc in yaml.load_all(text, Loader=_StrictLoader) if doc is not None]
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err)
        raise InputError([(where, f"invalid YAML: {problem}")], file=path) from None
    if len(docs) != 1:
        raise InputError(f"expected one document, found {len(docs)}", file=path)
    return docs[0]


def load_config(
    source: str | os.PathLike[str] | Mapping[str, Any] | None,
    *,
    known_plugins: Collection[str],
) -> t.KubeSchedulerConfiguration:
    """The defaulted, validated configuration from a file path, a mapping, or None (defaults).

    ``known_plugins`` are the plugin names kubesched can run (the registry's keys); a name
    enabled anywhere must be one of them.  Raises :class:`InputError` with every problem.
    """
    if source is None:
        return build_config({"apiVersion": t.API_VERSION, "kind": t.KIND}, known_plugins)
    if isinstance(source, Mapping):
        return build_config(source, known_plugins)
    path = os.fspath(source)
    raw = read_file(path)
    try:
        return build_config(raw, known_plugins)
    except InputError as err:
        raise err.with_file(path) from None


def build_config(raw: Any, known_plugins: Collection[str]) -> t.KubeSchedulerConfiguration:
    """Decode, default and validate one configuration mapping (see :func:`load_config`)."""
    known = frozenset(known_plugins)
    dec = Decoder()
    top = dec.obj(raw, "", _TOP_FIELDS)
    if top is None:
        raise InputError([("", "a KubeSchedulerConfiguration must be a mapping")])
    for key, want in (("apiVersion", t.API_VERSION), ("kind", t.KIND)):
        got = top.get(key)
        if got is None:
            dec.problems.append(fe.required(key))
        elif got != want:
            dec.problems.append(fe.not_supported(key, got, (want,)))
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
        profiles.append(_profile(dec, rp, known))
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
    )


def _profile(dec: Decoder, rp: RawProfile, known: frozenset[str]) -> t.Profile:
    """Validate one decoded profile (problems go to ``dec``) and build its defaulted value."""
    if not rp.scheduler_name:
        dec.problems.append(fe.required(fe.join(rp.path, "schedulerName")))
    dec.problems += v.validate_percentage(
        rp.percentage_of_nodes_to_score, fe.join(rp.path, "percentageOfNodesToScore")
    )
    if rp.plugins is not None:
        dec.problems += v.validate_plugin_names(rp.plugins, fe.join(rp.path, "plugins"), known)
    dec.problems += v.validate_plugin_config_names(rp, known)
    configured: dict[str, object] = {}
    for entry in rp.plugin_config:
        args_path = fe.join(entry.path, "args")
        args = pluginargs.decode_args(dec, entry.name, entry.args, args_path)
        configured.setdefault(entry.name, args)
    plugins = d.merge_plugins(d.DEFAULT_PLUGINS, rp.plugins)
    return t.Profile(
        scheduler_name=rp.scheduler_name or "",
        plugins=plugins,
        plugin_config=d.default_plugin_config(plugins, configured),
        percentage_of_nodes_to_score=rp.percentage_of_nodes_to_score,
    )
