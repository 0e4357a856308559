"""PodDisruptionBudgets as preemption sees them (upstream ``filterPodsWithPDBViolation``).

Budgets come from ``cluster.objects[("PodDisruptionBudget", "ns/name")]`` (raw ``policy/v1``
dicts).  As upstream, only ``status.disruptionsAllowed`` (kept current by the disruption
controller) and ``status.disruptedPods`` are read: a budget without a status (no controller
has seen it yet) allows no disruption, whatever its ``spec.minAvailable`` /
``spec.maxUnavailable`` say.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.api import fields
from kubesched.api import objects as api
from kubesched.state.cache import ClusterState

KIND = "PodDisruptionBudget"


@dataclass(frozen=True, slots=True)
class Budget:
    """One PodDisruptionBudget: who it selects and how many disruptions it still allows."""

    namespace: str
    selector: api.LabelSelector
    allowed: int
    disrupted: frozenset[str] = frozenset()

    def selects(self, pod: api.Pod) -> bool:
        """Same namespace and selector match (a Pod without labels matches no budget)."""
        return (
            bool(pod.labels)
            and pod.namespace == self.namespace
            and self.selector.matches(pod.labels)
        )


def parse_budget(obj: dict[str, Any]) -> Budget | None:
    """A :class:`Budget` from a raw PDB; None when its selector is missing, empty or invalid
    (upstream: such a budget matches nothing)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    try:
        selector = fields.label_selector(spec, "selector", "spec")
    except Exception:  # an invalid selector matches nothing, as upstream
        return None
    if selector is None or not (selector.match_labels or selector.match_expressions):
        return None
    namespace = str(meta.get("namespace") or "default")
    allowed = int(status.get("disruptionsAllowed") or 0)
    disrupted = frozenset(str(k) for k in (status.get("disruptedPods") or {}))
    return Budget(namespace, selector, allowed, disrupted)


def load_budgets(cluster: ClusterState) -> list[Budget]:
    """Every usable PodDisruptionBudget of the cluster, in a stable (key) order."""
    raws = [obj for (kind, _), obj in sorted(cluster.objects.items()) if kind == KIND]
    if not raws:
        return []
    budgets = (parse_budget(obj) for obj in raws)
    return [b for b in budgets if b is not None]


def charge(pod: api.Pod, budgets: Sequence[Budget], left: list[int], first_only: bool) -> bool:
    """Charge the eviction of ``pod`` to every budget selecting it (and not already listing
    it in ``disruptedPods``) in ``left``, the allowances still left per budget; whether one
    of them runs below zero.  ``first_only``: v1.37's ``FilterVictimsWithPDBViolation``
    stops at the first budget that does (the budgets after it are not charged); before
    v1.37 ``filterPodsWithPDBViolation`` charges every budget."""
    violated = False
    if pod.labels:
        for i, b in enumerate(budgets):
            if not b.selects(pod) or pod.name in b.disrupted:
                continue
            left[i] -= 1
            if left[i] < 0:
                violated = True
                if first_only:
                    break
    return violated


def split_by_violation(
    pods: Sequence[api.Pod], budgets: Sequence[Budget], first_only: bool = False
) -> tuple[list[api.Pod], list[api.Pod]]:
    """Upstream ``filterPodsWithPDBViolation`` (v1.37: ``FilterVictimsWithPDBViolation``,
    ``first_only``): ``(violating, non_violating)``, both in the order of ``pods``.
    Evicting the Pods in order, a Pod violates when some budget selecting it runs below
    zero (:func:`charge`)."""
    left = [b.allowed for b in budgets]
    violating: list[api.Pod] = []
    fine: list[api.Pod] = []
    for pod in pods:
        (violating if charge(pod, budgets, left, first_only) else fine).append(pod)
    return violating, fine
