"""RBAC of the deploy/ manifests against the calls a replica really made.

The fake API server records every request as ``(User-Agent, verb, group, resource, name)``
(:attr:`tests.live.fakestore.Stats.calls`); :func:`rules_of` collects the rules the
manifests bind to one ServiceAccount (ClusterRoles and Roles alike: the tests' Leases live
in another namespace than the manifests'), and :func:`denied` lists the calls no rule
allows, as the API server's authorizer would.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"

Call = tuple[str, str, str, str]
"""``(verb, API group, resource[/subresource], name)``."""


def manifests(folder: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Every object of the folder's YAML files by ``(kind, name)``."""
    out = {}
    for path in sorted(folder.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            out[(doc["kind"], doc["metadata"]["name"])] = doc
    return out


def rules_of(objs: Mapping[tuple[str, str], dict[str, Any]], account: str) -> list[dict[str, Any]]:
    """The rules of every (Cluster)Role bound to ServiceAccount ``account``."""
    rules: list[dict[str, Any]] = []
    for (kind, _), binding in objs.items():
        if kind not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        if not any(
            s["kind"] == "ServiceAccount" and s["name"] == account for s in binding["subjects"]
        ):
            continue
        ref = binding["roleRef"]
        rules += objs[(ref["kind"], ref["name"])]["rules"]
    return rules


def allows(rule: Mapping[str, Any], call: Call) -> bool:
    """Whether one rule allows ``call`` (``resourceNames`` never allow list, watch, create)."""
    verb, group, resource, name = call
    if group not in rule["apiGroups"] or resource not in rule["resources"]:
        return False
    if verb not in rule["verbs"]:
        return False
    names = rule.get("resourceNames")
    return not names or (bool(name) and verb not in ("list", "watch", "create") and name in names)


def denied(rules: list[dict[str, Any]], calls: Iterable[Call]) -> list[Call]:
    """The calls no rule allows."""
    return sorted({c for c in calls if not any(allows(r, c) for r in rules)})


def calls_of(stats: Any, agent: str) -> set[Call]:
    """What the replica with User-Agent ``agent`` asked the API server."""
    return {(v, g, r, n) for (a, v, g, r, n) in stats.calls if a == agent}
