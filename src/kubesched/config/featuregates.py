"""Feature gates as kube-scheduler's ``--feature-gates``: one release's gate table
(:mod:`kubesched.config.featuregates_data`, generated from upstream's Go sources by
``oracle/gen_featuregates.py``) plus the gates a run sets.

:class:`FeatureGates` is what the rest of kubesched asks (``gates.enabled("X")``); it carries
the Kubernetes version too, so one value says which Kubernetes a run models.
:func:`parse_flag` and :func:`with_settings` refuse what upstream's
``k8s.io/component-base/featuregate`` refuses, with its message text: an unknown gate
(``unrecognized feature gate: X``), a locked gate set away from its default (``cannot set
feature gate X to false, feature is locked to true``), a gate not yet available at that
release (PreAlpha), a malformed value, and (1.35+) an enabled gate whose dependencies are
disabled.  Setting an Alpha gate needs no ``AllAlpha``, as upstream; ``AllAlpha``/``AllBeta``
switch every Alpha/Beta gate not set explicitly.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from kubesched.api.errors import InputError
from kubesched.config.featuregates_data import DEPENDENCIES, GATES
from kubesched.config.versions import DEFAULT_VERSION, parse_version

FLAG = "--feature-gates"
RESIZE_PREEMPTION = "InPlacePodVerticalScalingSchedulerPreemption"
"""v1.37's alpha gate of DeferredPodScheduling and of the other plugins' handling of a Pod
whose in-place resize is deferred (:mod:`kubesched.plugins.deferredpodscheduling`)."""

_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


class GateSpec(NamedTuple):
    """One gate at one release (upstream ``FeatureSpec`` at the emulation version)."""

    default: bool
    pre_release: str
    """``Alpha``, ``Beta``, ``GA``, ``Deprecated`` or ``PreAlpha`` (not yet available)."""
    lock_to_default: bool


def gate_table(version: str) -> dict[str, GateSpec]:
    """Every gate kube-scheduler of ``version`` knows, by name."""
    return {name: GateSpec(*spec) for name, spec in GATES[version].items()}


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """The gates of one run: a release's defaults plus the settings given (already checked).

    Pickles (shards in other processes get it through
    :class:`~kubesched.scheduler.SchedulerOptions`)."""

    version: str = DEFAULT_VERSION
    """The Kubernetes minor version (one of
    :data:`~kubesched.config.versions.SUPPORTED_VERSIONS`)."""
    settings: tuple[tuple[str, bool], ...] = ()
    """The gates set explicitly (``--feature-gates``, a workload's ``featureGates``), sorted
    by name (a tuple, so the value pickles and compares)."""

    def setting(self, name: str) -> bool | None:
        """The value gate ``name`` was set to, or None when it was not set."""
        for key, value in self.settings:
            if key == name:
                return value
        return None

    def enabled(self, name: str) -> bool:
        """Whether gate ``name`` is on.  A gate this release does not know is off (code
        that serves several releases may ask about a newer release's gate)."""
        given = self.setting(name)
        if given is not None:
            return given
        spec = GATES[self.version].get(name)
        if spec is None:
            return False
        default, pre, _ = spec
        every = self.setting("AllAlpha" if pre == "Alpha" else "AllBeta" if pre == "Beta" else "")
        return default if every is None else every

    def at_least(self, version: str) -> bool:
        """Whether the run's release is ``version`` (``"1.36"``) or newer: for the changes
        upstream made without a gate."""
        return _minor(self.version) >= _minor(version)

    def describe(self) -> str:
        """``1.37`` or ``1.37 (A=true,B=false)``: the version and the gates set."""
        if not self.settings:
            return self.version
        pairs = ",".join(f"{k}={_go(v)}" for k, v in self.settings)
        return f"{self.version} ({pairs})"


def parse_flag(text: str) -> dict[str, bool]:
    """``A=true,B=false`` as upstream's ``featureGate.Set`` reads it (before the gates are
    checked): a :class:`InputError` at ``--feature-gates`` for a missing or bad value."""
    result: dict[str, bool] = {}
    for item in text.split(","):
        if not item:
            continue
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep:
            raise InputError([(FLAG, f"missing bool value for {key}")])
        value = raw.strip()
        if value not in _TRUE and value not in _FALSE:
            err = f"strconv.ParseBool: parsing {json.dumps(value)}: invalid syntax"
            raise InputError([(FLAG, f"invalid value of {key}={value}, err: {err}")])
        result[key] = value in _TRUE
    return result


def check_settings(
    version: str, settings: Iterable[tuple[str, bool]], *, dependencies: bool = True
) -> list[str]:
    """Upstream's ``unsafeSetFromMap`` refusals of ``settings`` at ``version``, in order
    (empty: accepted).  An unknown gate is the only error reported, as upstream returns at
    the first one.  ``dependencies=False`` skips the dependency check (a newer binary
    emulating ``version`` checks its own dependency table, which kubesched does not have)."""
    table = GATES[version]
    errors: list[str] = []
    enabled: dict[str, bool] = {}
    for name, value in settings:
        spec = table.get(name)
        if spec is None:
            return [f"unrecognized feature gate: {name}"]
        default, pre, locked = spec
        if locked and default != value:
            errors.append(
                f"cannot set feature gate {name} to {_go(value)}, feature is locked to "
                f"{_go(default)}"
            )
            continue
        if pre == "PreAlpha" and name not in ("AllAlpha", "AllBeta"):
            errors.append(f"cannot set feature gate {name} to {_go(value)}, {_pre_alpha(version)}")
            continue
        enabled[name] = value
    if errors or not dependencies:
        return errors
    gates = FeatureGates(version, tuple(sorted(enabled.items())))
    for name, deps in DEPENDENCIES[version].items():
        if not gates.enabled(name):
            continue
        off = [d for d in deps if not gates.enabled(d)]
        if off:
            errors.append(
                f"{name} is enabled, but depends on features that are disabled: [{' '.join(off)}]"
            )
    return errors


def with_settings(
    version: str, settings: Mapping[str, bool], *, path: str = FLAG, dependencies: bool = True
) -> FeatureGates:
    """:class:`FeatureGates` of ``version`` with ``settings``, or an :class:`InputError` at
    ``path`` with upstream's message (several errors joined as upstream's aggregate:
    ``[a, b]``)."""
    errors = check_settings(version, settings.items(), dependencies=dependencies)
    if errors:
        message = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        raise InputError([(path, message)])
    return FeatureGates(version, tuple(sorted(settings.items())))


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")
    return int(major), int(minor)


def _go(value: bool) -> str:
    return "true" if value else "false"


def _pre_alpha(version: str) -> str:
    if version == "1.34":
        return f"feature is PreAlpha at emulated version {version}"
    major, minor = version.split(".")
    return (
        f"feature is PreAlpha at emulated version {version}, "
        f"min compatibility version {major}.{int(minor) - 1}"
    )


def from_spec(version: object, settings: object, path: str) -> FeatureGates:
    """The gates of a document's ``kubernetesVersion`` and ``featureGates`` under ``path``
    (a scenario's ``spec``, a sweep variable): None means the default version, no settings;
    errors are :class:`InputError` at ``path.kubernetesVersion`` / ``path.featureGates``."""
    where = f"{path}." if path else ""
    minor = (
        DEFAULT_VERSION if version is None else parse_version(version, f"{where}kubernetesVersion")
    )
    if settings is None:
        return FeatureGates(minor)
    gates_path = f"{where}featureGates"
    if not isinstance(settings, Mapping) or not all(
        isinstance(k, str) and isinstance(v, bool) for k, v in settings.items()
    ):
        raise InputError([(gates_path, "must be a map of gate name to true or false")])
    return with_settings(minor, settings, path=gates_path)
