"""What the Workload API suites ask of the scheduler that kubesched does not model yet, said
out loud in a workload's result instead of passing silently.

Upstream v1.37 with GenericWorkload on preempts workload-aware (``docs/fidelity.md``):

- a PodGroup that cannot be placed runs the PodGroupPostFilter plugins (DefaultPreemption
  preempting for the whole group); kubesched's PodGroup cycle has no such step, so a group
  that only fits by preemption stays pending (``workload_preemption``'s suites).
  :func:`stalled_group_note` names that when a wait for such a group's Pods ends;
- a victim that belongs to a PodGroup with ``disruptionMode: all`` is preempted together with
  every other member of its group (a preemption unit, ``getHighestAllAncestor``); kubesched
  preempts Pods one by one.  :func:`victim_notes` names the groups a run preempted members
  of that upstream would have evicted whole (``default_preemption``'s
  ``PreemptionPodGroupDisruptionMode``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubesched.api import objects as api
from kubesched.api import workload as wl
from kubesched.sim.apiserver import SimApiServer, object_key

NOT_MODELLED = "workload-aware preemption is not modelled by kubesched (docs/fidelity.md)"


def _generic(gates: wl.Gates) -> bool:
    return gates.version == "1.37" and gates.enabled("GenericWorkload")


def stalled_group_note(api_server: SimApiServer, waiting: Iterable[str], gates: wl.Gates) -> str:
    """Why Pods ``waiting`` (keys) may never bind here although upstream binds them: some are
    members of a PodGroup and a lower-priority Pod is bound (upstream's PodGroupPostFilter
    could preempt it for the group); "" when that is not the case."""
    if not _generic(gates):
        return ""
    members = [
        pod
        for key in waiting
        if (pod := api_server.pods.get(key)) is not None
        and not pod.node_name
        and pod.scheduling_group
    ]
    if not members:
        return ""
    top = max(pod.priority for pod in members)
    if not any(p.node_name and p.priority < top for p in api_server.pods.values()):
        return ""
    return (
        f"{len(members)} pending Pods belong to PodGroups that upstream would place by "
        f"preempting lower-priority Pods (PodGroupPostFilter): {NOT_MODELLED}"
    )


def _disrupts_all(group: dict[str, Any] | None) -> bool:
    spec = group.get("spec") if group is not None else None
    mode = spec.get("disruptionMode") if isinstance(spec, dict) else None
    return isinstance(mode, dict) and "all" in mode


def victim_notes(
    api_server: SimApiServer, victims: Iterable[api.Pod], gates: wl.Gates
) -> list[str]:
    """The PodGroups with ``disruptionMode: all`` whose members this run preempted (the
    ``victims``) one by one where upstream evicts the whole group as one preemption unit
    (none: [])."""
    if not _generic(gates):
        return []
    groups: dict[str, int] = {}
    for pod in victims:
        if not pod.scheduling_group:
            continue
        raw = api_server.objects.get(object_key("PodGroup", pod.namespace, pod.scheduling_group))
        if _disrupts_all(raw):
            key = f"{pod.namespace}/{pod.scheduling_group}"
            groups[key] = groups.get(key, 0) + 1
    if not groups:
        return []
    shown = ", ".join(f"{k} ({n})" for k, n in sorted(groups.items())[:5])
    more = f" and {len(groups) - 5} more" if len(groups) > 5 else ""
    return [
        f"preempted members of {len(groups)} disruptionMode=all PodGroups one by one "
        f"({shown}{more}), where upstream evicts each such group whole: {NOT_MODELLED}"
    ]
