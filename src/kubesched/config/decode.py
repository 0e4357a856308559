"""Strict decoding of a KubeSchedulerConfiguration mapping into not-yet-defaulted values.

Upstream decodes the file strictly: an unknown or duplicated field, or a value of the wrong
type, is an error.  :class:`Decoder` does the same but keeps going, collecting every problem
with its field path, so the user sees all mistakes at once.  Absent and ``null`` fields come
back as None (Go's nil pointer), for :mod:`kubesched.config.load` to default.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.api import fielderr as fe
from kubesched.config import types as t

_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0}
_DURATION_UNITS |= {"m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


MAX_DURATION_SECONDS = (2**63 - 1) / 1e9
"""The longest Go ``time.Duration`` (int64 nanoseconds, about 292 years)."""


def parse_go_duration(text: str) -> float | None:
    """Seconds of a Go duration string (``"15s"``, ``"1m30s"``, ``"-2h"``), None if malformed
    or beyond what a Go duration holds (as ``time.ParseDuration`` refuses it)."""
    s = text.strip()
    sign = -1.0 if s.startswith("-") else 1.0
    s = s.lstrip("+-")
    if s == "0":
        return 0.0
    if not s:
        return None
    total, pos = 0.0, 0
    for m in _DURATION_PART.finditer(s):
        if m.start() != pos:
            return None
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    if pos != len(s) or total > MAX_DURATION_SECONDS:  # Go: "time: invalid duration"
        return None
    return sign * total


class Decoder:
    """Typed field access that records ``(path, message)`` problems instead of raising."""

    def __init__(self) -> None:
        self.problems: list[fe.Problem] = []

    def _bad(self, path: str, value: Any, kind: str) -> None:
        self.problems.append(fe.invalid(path, value, f"must be {kind}"))

    def obj(self, value: Any, path: str, fields: tuple[str, ...]) -> dict[str, Any] | None:
        """``value`` as a mapping whose keys are all in ``fields``; None if not a mapping."""
        if value is None:
            return None
        if not isinstance(value, Mapping):
            self._bad(path, value, "an object")
            return None
        for key in value:
            if key not in fields:
                self.problems.append(fe.unknown_field(fe.join(path, str(key))))
        return {k: v for k, v in value.items() if k in fields}

    def lst(self, value: Any, path: str) -> list[Any]:
        """``value`` as a list (None -> empty)."""
        if value is None:
            return []
        if not isinstance(value, list | tuple):
            self._bad(path, value, "a list")
            return []
        return list(value)

    def integer(
        self, value: Any, path: str, lo: int = fe.INT32_MIN, hi: int = fe.INT32_MAX
    ) -> int | None:
        """An integer within ``[lo, hi]`` (the Go type's range); None when absent or bad."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self._bad(path, value, "an integer")
            return None
        if not lo <= value <= hi:
            self._bad(path, value, f"an integer in [{lo}, {hi}]")
            return None
        return value

    def number(self, value: Any, path: str) -> float | None:
        """A float (Go float32); None when absent or bad."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            self._bad(path, value, "a number")
            return None
        return float(value)

    def string(self, value: Any, path: str) -> str | None:
        """A string; None when absent or bad."""
        if value is None:
            return None
        if not isinstance(value, str):
            self._bad(path, value, "a string")
            return None
        return value

    def boolean(self, value: Any, path: str) -> bool | None:
        """A bool; None when absent or bad."""
        if value is None:
            return None
        if not isinstance(value, bool):
            self._bad(path, value, "a boolean")
            return None
        return value

    def duration(self, value: Any, path: str) -> float | None:
        """A Go duration string as seconds; None when absent or bad."""
        if value is None:
            return None
        seconds = parse_go_duration(value) if isinstance(value, str) else None
        if seconds is None:
            self._bad(path, value, 'a duration such as "15s" or "1m30s"')
        return seconds

    # --- plugin sets ------------------------------------------------------------------------

    def plugin_refs(self, value: Any, path: str) -> tuple[t.PluginRef, ...]:
        """A list of ``{name, weight}``."""
        refs = []
        for i, item in enumerate(self.lst(value, path)):
            p = fe.index(path, i)
            d = self.obj(item, p, ("name", "weight"))
            if d is None:
                if item is None:
                    self._bad(p, item, "an object")
                continue
            name = self.string(d.get("name"), fe.join(p, "name"))
            if name is None:
                if d.get("name") is None:
                    self.problems.append(fe.required(fe.join(p, "name")))
                continue
            refs.append(t.PluginRef(name, self.integer(d.get("weight"), fe.join(p, "weight"))))
        return tuple(refs)

    def plugins(self, value: Any, path: str) -> t.Plugins | None:
        """The ``plugins`` section (None when absent, as upstream's nil pointer)."""
        d = self.obj(value, path, tuple(t.CAMEL.values()))
        if d is None:
            return None
        sets = {}
        for point, key in t.CAMEL.items():
            p = fe.join(path, key)
            s = self.obj(d.get(key), p, ("enabled", "disabled")) or {}
            sets[point] = t.PluginSet(
                enabled=self.plugin_refs(s.get("enabled"), fe.join(p, "enabled")),
                disabled=self.plugin_refs(s.get("disabled"), fe.join(p, "disabled")),
            )
        return t.Plugins(**sets)


@dataclass
class RawPluginConfig:
    """One ``pluginConfig`` entry as written: its path, plugin name and args mapping."""

    path: str
    name: str
    args: Mapping[str, Any] | None


@dataclass
class RawProfile:
    """One ``profiles[i]`` entry as written (None = absent)."""

    path: str
    scheduler_name: str | None = None
    percentage_of_nodes_to_score: int | None = None
    plugins: t.Plugins | None = None
    plugin_config: list[RawPluginConfig] = field(default_factory=list)


_PROFILE_FIELDS = ("schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig")


def profile(dec: Decoder, value: Any, path: str) -> RawProfile:
    """Decode ``profiles[i]``."""
    d = dec.obj(value, path, _PROFILE_FIELDS) or {}
    prof = RawProfile(
        path=path,
        scheduler_name=dec.string(d.get("schedulerName"), fe.join(path, "schedulerName")),
        percentage_of_nodes_to_score=dec.integer(
            d.get("percentageOfNodesToScore"), fe.join(path, "percentageOfNodesToScore")
        ),
        plugins=dec.plugins(d.get("plugins"), fe.join(path, "plugins")),
    )
    cfg_path = fe.join(path, "pluginConfig")
    for j, item in enumerate(dec.lst(d.get("pluginConfig"), cfg_path)):
        p = fe.index(cfg_path, j)
        entry = dec.obj(item, p, ("name", "args"))
        if entry is None:
            continue
        name = dec.string(entry.get("name"), fe.join(p, "name"))
        if name is None:
            if entry.get("name") is None:
                dec.problems.append(fe.required(fe.join(p, "name")))
            continue
        args = entry.get("args")
        if args is not None and not isinstance(args, Mapping):
            dec.problems.append(fe.invalid(fe.join(p, "args"), args, "must be an object"))
            args = None
        prof.plugin_config.append(RawPluginConfig(p, name, args))
    return prof


_LEADER_FIELDS = {
    "leaderElect": "leader_elect",
    "leaseDuration": "lease_duration_seconds",
    "renewDeadline": "renew_deadline_seconds",
    "retryPeriod": "retry_period_seconds",
    "resourceLock": "resource_lock",
    "resourceName": "resource_name",
    "resourceNamespace": "resource_namespace",
}


def leader_election(dec: Decoder, value: Any, path: str) -> t.LeaderElection:
    """Decode and default ``leaderElection`` (component-base recommended defaults)."""
    d = dec.obj(value, path, tuple(_LEADER_FIELDS)) or {}
    kw: dict[str, Any] = {}
    for key, attr in _LEADER_FIELDS.items():
        p = fe.join(path, key)
        v: Any
        if key == "leaderElect":
            v = dec.boolean(d.get(key), p)
        elif attr.endswith("_seconds"):
            v = dec.duration(d.get(key), p)
        else:
            v = dec.string(d.get(key), p) or None  # "" takes the default, as upstream
        if v is not None:
            kw[attr] = v
    return t.LeaderElection(**kw)


def client_connection(dec: Decoder, value: Any, path: str) -> t.ClientConnection:
    """Decode and default ``clientConnection`` (0 qps/burst and "" take the defaults)."""
    fields = ("kubeconfig", "acceptContentTypes", "contentType", "qps", "burst")
    d = dec.obj(value, path, fields) or {}
    kw: dict[str, Any] = {}
    kubeconfig = dec.string(d.get("kubeconfig"), fe.join(path, "kubeconfig"))
    accept = dec.string(d.get("acceptContentTypes"), fe.join(path, "acceptContentTypes"))
    content = dec.string(d.get("contentType"), fe.join(path, "contentType"))
    qps = dec.number(d.get("qps"), fe.join(path, "qps"))
    burst = dec.integer(d.get("burst"), fe.join(path, "burst"))
    if kubeconfig:
        kw["kubeconfig"] = kubeconfig
    if accept:
        kw["accept_content_types"] = accept
    if content:
        kw["content_type"] = content
    if qps:
        kw["qps"] = qps
    if burst:
        kw["burst"] = burst
    return t.ClientConnection(**kw)
