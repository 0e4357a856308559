"""Sweep variables: which class each belongs to, and how a value is set by its path.

A variable is a path.  KubeSchedulerConfiguration fields and plugin args use the
configuration's own camelCase names, with ``[i]`` for a list index and ``[Name]`` for the
list entry whose ``name`` is ``Name`` (created when missing)::

    percentageOfNodesToScore
    profiles[0].pluginConfig[NodeResourcesFit].args.scoringStrategy.type
    profiles[0].plugins.score.enabled[NodeResourcesBalancedAllocation].weight

Other variables are the run's, not the configuration's: ``kubernetesVersion`` (the
Kubernetes version modelled, ``docs/versions.md``), ``shards`` (parallel scheduler),
``policy`` (a replay's GPU placement policy), ``api.latencySeconds`` /
``api.watchDelaySeconds`` (the API server's speed) and ``client.qps`` / ``client.burst``
(the scheduler's client rate limit; ``clientConnection.qps`` / ``.burst`` are the same).

Operators change one *class* of variable at a time (:data:`CLASSES`), so a sweep's variables
must share one class unless the sweep says ``allowMixedClasses: true``.
"""

from __future__ import annotations

import re
from typing import Any

from kubesched.api.errors import InputError
from kubesched.config import names

CONFIG_API_VERSION = "kubescheduler.config.k8s.io/v1"
CLASSES = {
    "search": "how many nodes a cycle looks at (percentageOfNodesToScore)",
    "parallelism": "the configuration's parallelism",
    "scoring": "score plugins, their weights and args (scoring strategy)",
    "plugins": "other plugin args and plugin sets",
    "backoff": "queue backoff (podInitialBackoffSeconds, podMaxBackoffSeconds)",
    "config": "other KubeSchedulerConfiguration fields",
    "client": "the client's rate limit (QPS and burst)",
    "apiLatency": "the API server's latency and watch delay",
    "shards": "scheduler shards (the parallel architecture)",
    "policy": "a replay's GPU placement policy",
    "version": "the Kubernetes version modelled (kubernetesVersion: what changes on upgrade)",
}
"""Variable classes and what each covers."""
RUN_VARIABLES = {
    "shards": "shards",
    "policy": "policy",
    "api.latencySeconds": "apiLatency",
    "api.watchDelaySeconds": "apiLatency",
    "client.qps": "client",
    "client.burst": "client",
    "kubernetesVersion": "version",
}
ALIASES = {"clientConnection.qps": "client.qps", "clientConnection.burst": "client.burst"}
SCORING_ARGS = (
    names.NODE_RESOURCES_FIT,
    names.NODE_RESOURCES_BALANCED_ALLOCATION,
    names.IMAGE_LOCALITY,
)
_TOKEN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[[^\]]+\])*)")


def canonical(path: str) -> str:
    """The path with aliases resolved."""
    return ALIASES.get(path, path)


def tokens(path: str) -> list[str | int]:
    """``a.b[0][Name].c`` -> ``["a", "b", 0, "Name", "c"]``; :class:`ValueError` if malformed.

    An index is an ``int``; a ``[Name]`` selector is kept as a ``str`` prefixed with ``=``.
    """
    out: list[str | int] = []
    for part in path.split("."):
        m = _TOKEN.fullmatch(part)
        if m is None:
            raise ValueError(f"malformed path segment {part!r}")
        out.append(m.group(1))
        for sel in re.findall(r"\[([^\]]+)\]", m.group(2)):
            out.append(int(sel) if sel.isdigit() else "=" + sel)
    return out


def classify(path: str) -> str:
    """The class of variable ``path`` (a key of :data:`CLASSES`)."""
    path = canonical(path)
    if path in RUN_VARIABLES:
        return RUN_VARIABLES[path]
    toks = tokens(path)
    head, last = toks[0], toks[-1]
    if head == "percentageOfNodesToScore" or last == "percentageOfNodesToScore":
        return "search"
    if head == "parallelism":
        return "parallelism"
    if head in ("podInitialBackoffSeconds", "podMaxBackoffSeconds"):
        return "backoff"
    if head == "profiles":
        if "plugins" in toks:
            return "scoring" if ("score" in toks or "multiPoint" in toks) else "plugins"
        if "pluginConfig" in toks:
            i = toks.index("pluginConfig")
            name = toks[i + 1] if i + 1 < len(toks) else None
            if isinstance(name, str) and name.lstrip("=") in SCORING_ARGS:
                return "scoring"
            return "plugins"
    return "config"


def is_config(path: str) -> bool:
    """Whether ``path`` sets a KubeSchedulerConfiguration field."""
    return canonical(path) not in RUN_VARIABLES


def base_config(config: dict[str, Any] | None) -> dict[str, Any]:
    """A copy-ready configuration: ``config`` or upstream's defaults with one profile."""
    if config is not None:
        return config
    return {
        "apiVersion": CONFIG_API_VERSION,
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler"}],
    }


def set_path(doc: dict[str, Any], path: str, value: Any) -> None:
    """Set ``value`` at ``path`` in ``doc`` (in place), creating maps and named list entries
    on the way; :class:`InputError` naming ``path`` when the document's shape disagrees."""
    toks = tokens(path)
    node: Any = doc
    for i, tok in enumerate(toks):
        last = i == len(toks) - 1
        nxt = None if last else toks[i + 1]
        fresh: Any = [] if isinstance(nxt, int) or (isinstance(nxt, str) and nxt[:1] == "=") else {}
        if isinstance(tok, int):
            if not isinstance(node, list) or tok >= len(node):
                raise InputError([(path, f"no list entry [{tok}] here")])
            if last:
                node[tok] = value
                return
            node = node[tok]
        elif tok.startswith("="):
            if not isinstance(node, list):
                raise InputError([(path, f"[{tok[1:]}] needs a list here")])
            entry = next(
                (e for e in node if isinstance(e, dict) and e.get("name") == tok[1:]), None
            )
            if entry is None:
                entry = {"name": tok[1:]}
                node.append(entry)
            if last:
                raise InputError([(path, "a [Name] selector cannot be the last segment")])
            node = entry
        else:
            if not isinstance(node, dict):
                raise InputError([(path, f"{tok!r} needs a map here")])
            if last:
                node[tok] = value
                return
            if node.get(tok) is None:
                node[tok] = fresh
            node = node[tok]
