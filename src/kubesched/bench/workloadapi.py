"""What the Workload API suites ask of the scheduler that kubesched does not model yet, said
out loud in a workload's result instead of passing silently.

Upstream v1.37 with GenericWorkload on preempts workload-aware (``docs/fidelity.md``).  A
PodGroup preempting for itself (PodGroupPostFilter) is modelled
(``plugins/defaultpreemption/podgroup.py``); an ordinary Pod's preemption is not yet
workload-aware: a victim that belongs to a PodGroup with ``disruptionMode: all`` is preempted
together with every other member of its group upstream (a preemption unit,
``getHighestAllAncestor``), while kubesched preempts such Pods one by one.
:func:`victim_notes` names the groups a run preempted members of that upstream would have
evicted whole (``default_preemption``'s ``PreemptionPodGroupDisruptionMode``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubesched.api import objects as api
from kubesched.api import workload as wl
from kubesched.sim.apiserver import SimApiServer, object_key

NOT_MODELLED = (
    "an ordinary Pod's workload-aware preemption is not modelled by kubesched (docs/fidelity.md)"
)


def _generic(gates: wl.Gates) -> bool:
    return gates.version == "1.37" and gates.enabled("GenericWorkload")


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
