"""The Kubernetes release a run models: the supported minor versions, the default (the
newest), and how a version is read from a flag, a scenario, a snapshot's Nodes
(``status.nodeInfo.kubeletVersion``) or an API server's ``/version``.

A version decides the feature gates' defaults (:mod:`kubesched.config.featuregates`) and,
through them, the default profile (:mod:`kubesched.config.defaults`).  ``docs/versions.md``
says what differs between the versions.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from kubesched.api.errors import InputError

SUPPORTED_VERSIONS: tuple[str, ...] = ("1.34", "1.35", "1.36", "1.37")
"""The Kubernetes minor versions kubesched models, oldest first."""

DEFAULT_VERSION = SUPPORTED_VERSIONS[-1]
"""The version of a run that names none: the newest supported release."""

UPSTREAM_RELEASES = {"1.34": "v1.34.4", "1.35": "v1.35.4", "1.36": "v1.36.3", "1.37": "v1.37.2"}
"""The upstream patch release whose sources each supported version was read from."""

FLAG_HELP = (
    f"Kubernetes version whose scheduler to model: {', '.join(SUPPORTED_VERSIONS)} "
    f"(default {DEFAULT_VERSION}, the newest, unless the input tells it: a snapshot's "
    "kubeletVersion, a scenario, a recording or the API server; docs/versions.md)"
)
"""The help text of every command's ``--kubernetes-version``."""

_MINOR = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+].*)?$")


def minor_of(text: str) -> str | None:
    """``1.37`` of ``v1.37.2``, ``1.37.2-gke.1``, ``1.37`` (None when not a version)."""
    m = _MINOR.match(text.strip())
    return f"{int(m.group(1))}.{int(m.group(2))}" if m else None


def parse_version(text: object, path: str = "--kubernetes-version") -> str:
    """The supported minor version ``text`` names (``1.37``, ``v1.37``, ``1.37.2``), or an
    :class:`InputError` at ``path`` listing the supported ones (exit code 2)."""
    minor = minor_of(text) if isinstance(text, str) else None
    if minor in SUPPORTED_VERSIONS:
        return minor
    shown = text if isinstance(text, str) else type(text).__name__
    raise InputError(
        [
            (
                path,
                f"unsupported Kubernetes version {shown!r}: supported versions are "
                f"{', '.join(SUPPORTED_VERSIONS)}",
            )
        ]
    )


def version_of_nodes(kubelet_versions: Iterable[str]) -> str | None:
    """The supported minor version most Nodes' kubelets run (ties: the newest), or None when
    no Node reports a supported one.  Kubelets may lag the control plane by up to three
    minor versions, so this is a guess the command states on stderr, never a fact."""
    counts = Counter(m for v in kubelet_versions if (m := minor_of(v)) in SUPPORTED_VERSIONS)
    if not counts:
        return None
    best = max(counts.values())
    return max(
        (m for m, c in counts.items() if c == best), key=lambda m: tuple(map(int, m.split(".")))
    )


def version_of_server(body: object) -> str | None:
    """The supported minor version of an API server's ``/version`` answer (``gitVersion``,
    else ``major``/``minor``), or None."""
    if not isinstance(body, dict):
        return None
    git = body.get("gitVersion")
    minor = minor_of(git) if isinstance(git, str) else None
    if minor is None:
        major, mnr = str(body.get("major", "")), str(body.get("minor", "")).rstrip("+")
        minor = minor_of(f"{major}.{mnr}")
    return minor if minor in SUPPORTED_VERSIONS else None
