"""The elastic quota tree: guaranteed ``min``, ceiling ``max``, borrowing and reclaim.

Quotas (:class:`~kubesched.admission.objects.ElasticQuotaSpec`) form a forest through their
parent label.  A Pod is charged to its quota (the ``quota.scheduling.koordinator.sh/name``
label, else the quota of its namespace) and to every ancestor.  Arrays are indexed
``[quota, resource]`` over the resources the tree names.

What the tree allows (a Pod asking ``req`` of quota ``q``):

- ``used[a] + req <= max[a]`` for ``q`` and each ancestor ``a`` (upstream
  ``usedOverMaxWith``);
- ``used[a] + req <= runtime[a]``, where runtime quotas come from weighted water-filling
  (:mod:`kubesched.admission.waterfill`) top-down, each quota demanding what it uses (plus
  ``req`` on the Pod's path), so idle ``min`` of one quota can be borrowed by others and a
  borrower's share shrinks when the owner asks for it back;
- the pool: the sum over root quotas of ``used`` plus ``req`` stays within the sum of the
  roots' ``min`` (upstream ``aggregatedUsedOverMinWith``).

Deviation from upstream Capacity Scheduling (flat, one quota per namespace): the tree and
water-filling are Koordinator's; a quota governs only the resources named in its ``min`` or
``max`` (upstream treats an unnamed CPU or memory ``max`` as 0); a resource no root names
in ``min`` has an unlimited pool.  Reclaim (:meth:`QuotaTree.victim_eligible`) takes Pods of
quotas that use more than their ``min`` on some resource, as upstream does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from kubesched.admission import objects as o
from kubesched.admission.waterfill import UNLIMITED, IntArray, waterfill

__all__ = ["ROOT", "UNLIMITED", "IntArray", "QuotaTree", "check_tree"]
from kubesched.api import objects as api
from kubesched.api.errors import InputError

ROOT = -1


def check_tree(specs: Iterable[o.ElasticQuotaSpec]) -> list[tuple[str, str]]:
    """Problems of a quota forest: missing parents, cycles, children's min above the parent's."""
    by_name = {s.name: s for s in specs}
    problems: list[tuple[str, str]] = []
    for s in by_name.values():
        if s.parent and s.parent not in by_name:
            problems.append(
                (
                    f"ElasticQuota/{s.name}.metadata.labels[{o.QUOTA_PARENT_LABEL}]",
                    f'parent quota "{s.parent}" not found',
                )
            )
    reported: set[str] = set()
    for s in by_name.values():
        seen = [s.name]
        cur = s
        while cur.parent and cur.parent in by_name:
            cur = by_name[cur.parent]
            if cur.name in seen:
                cycle = [*seen[seen.index(cur.name) :], cur.name]
                if not reported & set(cycle):
                    problems.append(
                        (
                            f"ElasticQuota/{cur.name}.metadata.labels[{o.QUOTA_PARENT_LABEL}]",
                            "cycle in the quota tree: " + " -> ".join(cycle),
                        )
                    )
                    reported.update(cycle)
                break
            seen.append(cur.name)
    children: dict[str, list[o.ElasticQuotaSpec]] = {}
    for s in by_name.values():
        if s.parent in by_name:
            children.setdefault(s.parent, []).append(s)
    for parent, kids in sorted(children.items()):
        p = by_name[parent]
        for res in sorted({r for k in kids for r in k.min}):
            total = sum(k.min.get(res, 0) for k in kids)
            if total > p.min.get(res, 0):
                problems.append(
                    (
                        f"ElasticQuota/{parent}.spec.min[{res}]",
                        f"children's min sum to {total}, more than the parent's "
                        f"{p.min.get(res, 0)}",
                    )
                )
    return problems


class QuotaTree:
    """Quotas as arrays ``[quota, resource]``, with the Pods charged to them.

    ``minimum`` / ``maximum``: int64 ``(Q, R)`` (``UNLIMITED`` where a quota names no max);
    ``used``: int64 ``(Q, R)``, each quota's Pods plus its descendants'; ``pool``: int64
    ``(R,)`` what all roots together may use.
    """

    def __init__(self, specs: Iterable[o.ElasticQuotaSpec]) -> None:
        specs = sorted(specs, key=lambda s: s.name)
        problems = check_tree(specs)
        if problems:
            raise InputError(problems)
        self.specs = specs
        self.names = [s.name for s in specs]
        self.index = {n: i for i, n in enumerate(self.names)}
        self.resources = sorted({r for s in specs for r in (*s.min, *s.max)})
        self.res_index = {r: j for j, r in enumerate(self.resources)}
        q, r = len(specs), len(self.resources)
        self.parent = np.array([self.index.get(s.parent, ROOT) for s in specs], dtype=np.int64)
        self.weight = np.array([s.weight for s in specs], dtype=np.int64)
        self.minimum = np.zeros((q, r), dtype=np.int64)
        self.maximum = np.full((q, r), UNLIMITED, dtype=np.int64)
        for i, s in enumerate(specs):
            for res, v in s.min.items():
                self.minimum[i, self.res_index[res]] = v
            for res, v in s.max.items():
                self.maximum[i, self.res_index[res]] = v
        roots = self.parent == ROOT
        named = np.zeros(r, dtype=np.bool_)
        for s in specs:
            if not s.parent:
                for res in s.min:
                    named[self.res_index[res]] = True
        self.pool = np.where(named, self.minimum[roots].sum(axis=0), UNLIMITED).astype(np.int64)
        self.children = [np.flatnonzero(self.parent == i) for i in range(q)]
        self.roots = np.flatnonzero(roots)
        leaves = {
            s.namespace: s.name
            for s in reversed(specs)
            if not self.children[self.index[s.name]].size
        }
        self.by_namespace = {s.namespace: s.name for s in reversed(specs)} | leaves
        self.used = np.zeros((q, r), dtype=np.int64)
        self.pods: dict[str, tuple[int, IntArray]] = {}

    # ------------------------------------------------------------------ lookup
    def __len__(self) -> int:
        return len(self.names)

    def quota_of(self, pod: api.Pod) -> int | None:
        """Index of the Pod's quota, or None when no quota governs it."""
        name = pod.labels.get(o.QUOTA_NAME_LABEL) or self.by_namespace.get(pod.namespace)
        return None if name is None else self.index.get(name)

    def vector(self, requests: Mapping[str, int]) -> IntArray:
        """A request as an int64 ``(R,)`` vector over the tree's resources."""
        v = np.zeros(len(self.resources), dtype=np.int64)
        for res, amount in requests.items():
            j = self.res_index.get(res)
            if j is not None:
                v[j] = amount
        return v

    def path(self, q: int) -> list[int]:
        """``q`` and its ancestors, leaf first."""
        out = [q]
        while self.parent[out[-1]] != ROOT:
            out.append(int(self.parent[out[-1]]))
        return out

    # ------------------------------------------------------------------ accounting
    def add(self, pod_key: str, q: int, vec: IntArray) -> bool:
        """Charge ``vec`` to ``q`` and its ancestors (False if the Pod is already charged)."""
        if pod_key in self.pods:
            return False
        self.pods[pod_key] = (q, vec)
        self.used[self.path(q)] += vec
        return True

    def remove(self, pod_key: str) -> bool:
        """Release a charged Pod (False if it was not charged)."""
        entry = self.pods.pop(pod_key, None)
        if entry is None:
            return False
        self.used[self.path(entry[0])] -= entry[1]
        return True

    # ------------------------------------------------------------------ what the tree allows
    def runtime(
        self, used: IntArray | None = None, extra: tuple[int, IntArray] | None = None
    ) -> IntArray:
        """Runtime quota of every quota, int64 ``(Q, R)``, by water-filling top-down; each
        quota demands its ``used`` (plus ``extra = (q, vec)`` along ``q``'s path)."""
        demand = (self.used if used is None else used).copy()
        if extra is not None:
            demand[self.path(extra[0])] += extra[1]
        out = np.zeros_like(demand)
        levels = [(self.pool, self.roots)]
        while levels:
            total, kids = levels.pop()
            if kids.size == 0:
                continue
            for j in range(len(self.resources)):
                out[kids, j] = waterfill(
                    int(total[j]),
                    demand[kids, j],
                    self.minimum[kids, j],
                    self.maximum[kids, j],
                    self.weight[kids],
                )
            levels.extend((out[k], self.children[k]) for k in kids.tolist())
        return out

    def check(self, q: int, vec: IntArray, used: IntArray | None = None) -> str | None:
        """Why ``vec`` more for quota ``q`` is not allowed now (None: it is)."""
        used = self.used if used is None else used
        path = self.path(q)
        for a in path:
            if bool((used[a] + vec > self.maximum[a]).any()):
                return f"ElasticQuota {self.names[a]} is more than Max"
        if bool((used[self.roots].sum(axis=0) + vec > self.pool).any()):
            return "total ElasticQuota used is more than min"
        runtime = self.runtime(used, (q, vec))
        for a in path:
            if bool((used[a] + vec > runtime[a]).any()):
                return f"ElasticQuota {self.names[a]} is more than its runtime quota"
        return None

    def over_min_with(self, q: int, vec: IntArray, used: IntArray | None = None) -> bool:
        """Upstream ``usedOverMinWith``: ``used + vec`` exceeds ``min`` for some resource."""
        used = self.used if used is None else used
        return bool((used[q] + vec > self.minimum[q]).any())

    def over_min(self, q: int, used: IntArray | None = None) -> bool:
        """Upstream ``usedOverMin``: ``used`` exceeds ``min`` for some resource."""
        used = self.used if used is None else used
        return bool((used[q] > self.minimum[q]).any())

    def victim_eligible(self, v: int, used: IntArray, q: int) -> bool:
        """Whether Pods of quota ``v`` may be reclaimed for quota ``q`` at usage ``used``:
        each quota on ``v``'s path below the ancestors it shares with ``q`` uses more than its
        ``min`` on some resource (upstream ``usedOverMin``; flat quotas: ``v`` itself).  The
        victim may take its quota below ``min`` on any resource, as upstream's may."""
        shared = set(self.path(q))
        for a in self.path(v):
            if a in shared:
                break
            if not self.over_min(a, used):
                return False
        return True

    def invariant_problems(self, used: IntArray | None = None) -> list[str]:
        """Where usage exceeds what the tree can ever allow (``max`` or the pool)."""
        used = self.used if used is None else used
        out = [
            f"{self.names[i]} over max"
            for i in range(len(self))
            if (used[i] > self.maximum[i]).any()
        ]
        if bool((used[self.roots].sum(axis=0) > self.pool).any()):
            out.append("roots over pool")
        return out

    def report(self) -> dict[str, Any]:
        """Per quota: min, max, used and runtime per resource (``max`` omitted if unlimited)."""
        runtime = self.runtime()
        out: dict[str, Any] = {}
        for i, name in enumerate(self.names):
            row: dict[str, Any] = {}
            for j, res in enumerate(self.resources):
                mx = int(self.maximum[i, j])
                row[res] = {
                    "min": int(self.minimum[i, j]),
                    "max": None if mx >= UNLIMITED else mx,
                    "used": int(self.used[i, j]),
                    "runtime": int(runtime[i, j]),
                }
            parent = int(self.parent[i])
            out[name] = {"parent": self.names[parent] if parent != ROOT else None, "resources": row}
        return out
