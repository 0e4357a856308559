"""``extenders[]`` of KubeSchedulerConfiguration v1 as typed, defaulted values.

:func:`kubesched.config.validate.validate_extenders` checks the entries when the configuration
loads and keeps them as raw mappings in ``KubeSchedulerConfiguration.extenders`` (so they round
trip unchanged); :func:`parse_extenders` turns those mappings into :class:`Extender` values
with upstream's defaults (``pkg/scheduler/apis/config/v1/defaults.go`` and
``NewHTTPExtender``): ``httpTimeout`` 5 s when absent or zero, ``weight`` 0 unless given.

Upstream orders extenders at start-up: the ignorable ones move to the end of the list
(``buildExtenders``), and the ``managedResources`` marked ``ignoredByScheduler`` become
NodeResourcesFit's ``ignoredResources`` in every profile; :func:`ordered` and
:func:`ignored_resources` do the same.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import os
import ssl
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.config import names
from kubesched.config.args import NodeResourcesFitArgs
from kubesched.config.decode import parse_go_duration
from kubesched.config.types import Profile, frozen_mapping

FIT_NAME = names.NODE_RESOURCES_FIT
"""The plugin whose args take the ignored resources."""
DEFAULT_HTTP_TIMEOUT_SECONDS = 5.0
"""Upstream ``DefaultExtenderTimeout``."""


@dataclass(frozen=True, slots=True)
class TLSConfig:
    """``tlsConfig`` (upstream ``ExtenderTLSConfig``); ``*_data`` fields are PEM bytes
    (base64 in YAML/JSON, as Go encodes ``[]byte``)."""

    insecure: bool = False
    """Skip verifying the server certificate (testing only)."""
    server_name: str = ""
    """Name checked against the server certificate and sent for SNI (default: URL host)."""
    cert_file: str = ""
    """Client certificate file (PEM) for mutual TLS."""
    key_file: str = ""
    """Client key file (PEM)."""
    ca_file: str = ""
    """Trusted root certificates file (PEM)."""
    cert_data: bytes = b""
    """Client certificate (PEM bytes); takes precedence over ``cert_file``."""
    key_data: bytes = b""
    """Client key (PEM bytes); takes precedence over ``key_file``."""
    ca_data: bytes = b""
    """Trusted root certificates (PEM bytes); takes precedence over ``ca_file``."""


@dataclass(frozen=True, slots=True)
class ManagedResource:
    """``managedResources[]``: an extended resource the extender manages."""

    name: str
    ignored_by_scheduler: bool = False
    """NodeResourcesFit does not check this resource (the extender does)."""


@dataclass(frozen=True, slots=True)
class Extender:
    """One ``extenders[]`` entry, defaulted (upstream ``config.Extender``)."""

    url_prefix: str
    """Base URL; a verb is appended as ``<urlPrefix>/<verb>``.  Also the extender's name."""
    filter_verb: str = ""
    """Verb of the filter call; empty: the extender does not filter."""
    preempt_verb: str = ""
    """Verb of the preempt call (DefaultPreemption sends it the candidates)."""
    prioritize_verb: str = ""
    """Verb of the prioritize call; empty: the extender does not score."""
    weight: int = 0
    """Multiplier of the prioritize scores (> 0 when ``prioritize_verb`` is set)."""
    bind_verb: str = ""
    """Verb of the bind call; a binding extender replaces the default binder."""
    enable_https: bool = False
    """Use TLS settings; without a CA the server certificate is not verified (upstream)."""
    tls_config: TLSConfig | None = None
    """TLS settings (``tlsConfig``)."""
    http_timeout: float = DEFAULT_HTTP_TIMEOUT_SECONDS
    """Seconds a whole call may take (``httpTimeout``, default 5s)."""
    node_cache_capable: bool = False
    """Send node names only (the extender caches nodes itself) instead of full Nodes."""
    managed_resources: tuple[ManagedResource, ...] = ()
    """When non-empty, the extender is called only for Pods requesting one of these."""
    ignorable: bool = False
    """Errors and timeouts of this extender skip it instead of failing the attempt."""

    @property
    def name(self) -> str:
        """Upstream ``HTTPExtender.Name()``: the URL prefix."""
        return self.url_prefix


def _bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if not isinstance(value, str) or not value:
        return b""
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return value.encode()  # PEM text given verbatim


def parse_tls(raw: Mapping[str, Any] | None) -> TLSConfig | None:
    """``tlsConfig`` to :class:`TLSConfig` (None when absent)."""
    if not raw:
        return None
    return TLSConfig(
        insecure=bool(raw.get("insecure", False)),
        server_name=str(raw.get("serverName") or ""),
        cert_file=str(raw.get("certFile") or ""),
        key_file=str(raw.get("keyFile") or ""),
        ca_file=str(raw.get("caFile") or ""),
        cert_data=_bytes(raw.get("certData")),
        key_data=_bytes(raw.get("keyData")),
        ca_data=_bytes(raw.get("caData")),
    )


def parse_extender(raw: Mapping[str, Any]) -> Extender:
    """One validated raw entry to :class:`Extender` with upstream defaults."""
    timeout = raw.get("httpTimeout")
    seconds = parse_go_duration(timeout) if isinstance(timeout, str) else None
    if isinstance(timeout, int | float) and not isinstance(timeout, bool):
        seconds = float(timeout)
    managed = tuple(
        ManagedResource(str(r.get("name", "")), bool(r.get("ignoredByScheduler", False)))
        for r in raw.get("managedResources") or ()
        if isinstance(r, Mapping)
    )
    return Extender(
        url_prefix=str(raw.get("urlPrefix") or ""),
        filter_verb=str(raw.get("filterVerb") or ""),
        preempt_verb=str(raw.get("preemptVerb") or ""),
        prioritize_verb=str(raw.get("prioritizeVerb") or ""),
        weight=int(raw.get("weight") or 0),
        bind_verb=str(raw.get("bindVerb") or ""),
        enable_https=bool(raw.get("enableHTTPS", False)),
        tls_config=parse_tls(raw.get("tlsConfig")),
        http_timeout=seconds if seconds else DEFAULT_HTTP_TIMEOUT_SECONDS,
        node_cache_capable=bool(raw.get("nodeCacheCapable", False)),
        managed_resources=managed,
        ignorable=bool(raw.get("ignorable", False)),
    )


def ordered(extenders: Iterable[Extender]) -> tuple[Extender, ...]:
    """Upstream ``buildExtenders`` order: non-ignorable extenders first, ignorable ones at
    the tail, each group in configuration order."""
    items = list(extenders)
    return tuple([e for e in items if not e.ignorable] + [e for e in items if e.ignorable])


def parse_extenders(raw: Iterable[Mapping[str, Any]]) -> tuple[Extender, ...]:
    """Every raw entry parsed, in upstream's order (see :func:`ordered`)."""
    return ordered(parse_extender(e) for e in raw)


def ignored_resources(extenders: Iterable[Extender]) -> tuple[str, ...]:
    """Managed resources marked ``ignoredByScheduler``, in order: upstream sets these as
    NodeResourcesFit's ``ignoredResources`` in every profile (replacing the configured
    list)."""
    return tuple(r.name for e in extenders for r in e.managed_resources if r.ignored_by_scheduler)


def apply_ignored_resources(
    profiles: Iterable[Profile], extenders: Iterable[Extender]
) -> tuple[Profile, ...]:
    """Profiles whose NodeResourcesFit args ignore the extenders' ``ignoredByScheduler``
    resources (upstream ``buildExtenders`` replaces ``ignoredResources`` in every profile);
    profiles are returned unchanged when no resource is ignored."""
    ignored = ignored_resources(extenders)
    out = []
    for p in profiles:
        args = p.plugin_config.get(FIT_NAME)
        if ignored and isinstance(args, NodeResourcesFitArgs):
            config = dict(p.plugin_config)
            config[FIT_NAME] = dataclasses.replace(args, ignored_resources=ignored)
            p = dataclasses.replace(p, plugin_config=frozen_mapping(config))
        out.append(p)
    return tuple(out)


def tls_context(enable_https: bool, tls: TLSConfig | None) -> ssl.SSLContext:
    """Upstream ``makeTransport``: without a CA (file or data) under ``enableHTTPS``, or with
    ``insecure``, the server certificate is not verified."""
    cfg = tls or TLSConfig()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies certificate and host name
    has_ca = bool(cfg.ca_file or cfg.ca_data)
    if cfg.ca_file:
        ctx.load_verify_locations(cafile=cfg.ca_file)
    if cfg.ca_data:
        ctx.load_verify_locations(cadata=cfg.ca_data.decode())
    if not has_ca:  # as Go: the given CAs replace the system roots
        ctx.load_default_certs()
    if cfg.insecure or (enable_https and not has_ca):
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cfg.cert_data or cfg.cert_file:
        _load_client_cert(ctx, cfg)
    return ctx


def _load_client_cert(ctx: ssl.SSLContext, cfg: TLSConfig) -> None:
    if not cfg.cert_data and not cfg.key_data:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file or None)
        return
    paths: list[str] = []
    try:
        for data, path in ((cfg.cert_data, cfg.cert_file), (cfg.key_data, cfg.key_file)):
            if data:
                fd, tmp = tempfile.mkstemp(suffix=".pem")
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                paths.append(tmp)
            else:
                paths.append(path)
        ctx.load_cert_chain(paths[0], paths[1] or None)
    finally:
        for p in paths:
            if p and p not in (cfg.cert_file, cfg.key_file):
                os.unlink(p)
