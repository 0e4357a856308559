"""Job-layer input, checked before anything runs.

Bad input is one :class:`InputError` naming each object and field: every job-layer object
parses (:func:`kubesched.admission.objects.collect`); the quota tree has no missing parent,
no cycle, and no parent whose children's ``min`` sum above its own
(:func:`kubesched.admission.quota.check_tree`); a ClusterQueue's flavors exist; and, when
every Pod is known (a scenario), each PodGroup has at least one Pod.

A *reference to an object the input lacks* is not bad input but a fact about the cluster
(``kubectl get nodes,pods`` never prints PodGroups or LocalQueues): :func:`dangling` lists
them and :func:`check` logs one warning per missing object.  What follows is what upstream
does with such a Pod: bound Pods keep running; a pending member of a missing PodGroup is
rejected at Permit by Coscheduling (``PodGroup not found``, scheduler-plugins'
``PodGroupNotFound``); a Pod naming a missing LocalQueue (or a LocalQueue naming a missing
ClusterQueue) stays gated, its workload inadmissible with Kueue's reason
(:func:`inadmissible_message`); a Pod naming a missing ElasticQuota is governed by none; a
Pod naming a missing PersistentVolumeClaim gets the volume plugins' answer for it
(:func:`missing_claims`; the warning names the ``kubectl`` command that includes claims).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kubesched.admission import objects as o
from kubesched.admission import quota as qt
from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.api.podvolumes import claim_names
from kubesched.api.storage import SNAPSHOT_COMMAND

log = logging.getLogger(__name__)

CONSEQUENCES = {
    "PodGroup": "pending members are rejected at Permit by Coscheduling (PodGroup not found)",
    "LocalQueue": "pending Pods stay gated, their workloads inadmissible (Kueue)",
    "ClusterQueue": "pending Pods stay gated, their workloads inadmissible (Kueue)",
    "ElasticQuota": "no quota governs its Pods",
    "PersistentVolumeClaim": (
        "pending Pods that use it get upstream's answer for a missing claim "
        "(persistentvolumeclaim not found); a snapshot taken with "
        f"`{SNAPSHOT_COMMAND}` includes the storage objects"
    ),
}
"""What happens to the Pods that name a missing object of each kind (the warning says it)."""


@dataclass(frozen=True, slots=True)
class Dangling:
    """A missing object and who names it: ``kind``, its key (``ns/name`` for namespaced
    kinds), the first referrer (``Pod/ns/name`` or ``LocalQueue/ns/name``) and how many
    referrers there are."""

    kind: str
    key: str
    referrer: str
    count: int

    def warning(self) -> str:
        """The one-line warning for this object."""
        more = f" and {self.count - 1} more" if self.count > 1 else ""
        return (
            f'{self.kind} "{self.key}" not found (named by {self.referrer}{more}): '
            f"not in the input, taken as a fact about the cluster; bound Pods keep running, "
            f"{CONSEQUENCES[self.kind]}"
        )


def inadmissible_message(objs: o.JobObjects, namespace: str, queue: str) -> str:
    """Kueue's ``Inadmissible`` message for a workload of ``queue`` in ``namespace`` whose
    LocalQueue or ClusterQueue is missing ("" when both exist): the workload controller's
    ``LocalQueue %s doesn't exist`` / ``ClusterQueue %s doesn't exist``."""
    lq = objs.local_queues.get(f"{namespace}/{queue}")
    if lq is None:
        return f"LocalQueue {queue} doesn't exist"
    if lq.cluster_queue not in objs.cluster_queues:
        return f"ClusterQueue {lq.cluster_queue} doesn't exist"
    return ""


def dangling(objs: o.JobObjects, pods: Iterable[api.Pod]) -> list[Dangling]:
    """Every object named by a Pod label (PodGroup, LocalQueue, ElasticQuota) or by a
    LocalQueue (ClusterQueue) that ``objs`` lacks, in order of first reference."""
    found: dict[tuple[str, str], list[str]] = {}

    def missing(kind: str, key: str, referrer: str) -> None:
        found.setdefault((kind, key), []).append(referrer)

    for key, lq in sorted(objs.local_queues.items()):
        if lq.cluster_queue not in objs.cluster_queues:
            missing("ClusterQueue", lq.cluster_queue, f"LocalQueue/{key}")
    for pod in pods:
        group = o.pod_group_of(pod)
        if group and f"{pod.namespace}/{group}" not in objs.pod_groups:
            missing("PodGroup", f"{pod.namespace}/{group}", f"Pod/{pod.key}")
        queue = pod.labels.get(o.QUEUE_NAME_LABEL)
        if queue and f"{pod.namespace}/{queue}" not in objs.local_queues:
            missing("LocalQueue", f"{pod.namespace}/{queue}", f"Pod/{pod.key}")
        quota = pod.labels.get(o.QUOTA_NAME_LABEL)
        if quota and quota not in objs.quotas:
            missing("ElasticQuota", quota, f"Pod/{pod.key}")
    return [Dangling(kind, key, refs[0], len(refs)) for (kind, key), refs in found.items()]


def missing_claims(objects: Iterable[dict[str, Any]], pods: Iterable[api.Pod]) -> list[Dangling]:
    """Every PersistentVolumeClaim a Pod's volume names (an ephemeral volume's only once
    the Pod is bound: the ephemeral volume controller makes it for a pending one) that
    ``objects`` lack, in order of first reference."""
    have = {
        f"{(o.get('metadata') or {}).get('namespace') or 'default'}/"
        f"{(o.get('metadata') or {}).get('name')}"
        for o in objects
        if o.get("kind") == "PersistentVolumeClaim"
    }
    found: dict[str, list[str]] = {}
    for pod in pods:
        if not pod.volumes:
            continue
        for name, ephemeral in claim_names(pod):
            key = f"{pod.namespace}/{name}"
            if key not in have and (pod.node_name or not ephemeral):
                found.setdefault(key, []).append(f"Pod/{pod.key}")
    return [Dangling("PersistentVolumeClaim", k, r[0], len(r)) for k, r in found.items()]


def check(
    objects: list[dict[str, Any]],
    pods: Iterable[api.Pod],
    *,
    all_pods_known: bool = False,
    warn: bool = True,
) -> o.JobObjects:
    """Parse and cross-check; returns the parsed objects or raises :class:`InputError`.
    With ``warn``, each missing referenced object (:func:`dangling`) is logged once."""
    objs = o.collect(objects)
    problems = qt.check_tree(objs.quotas.values())
    for name, cq in sorted(objs.cluster_queues.items()):
        for i, rg in enumerate(cq.resource_groups):
            for j, (flavor, _q) in enumerate(rg.flavors):
                if flavor not in objs.flavors:
                    problems.append(
                        (
                            f"ClusterQueue/{name}.spec.resourceGroups[{i}].flavors[{j}].name",
                            f'ResourceFlavor "{flavor}" not found',
                        )
                    )
    pods = list(pods)
    if all_pods_known:
        used = {f"{p.namespace}/{o.pod_group_of(p)}" for p in pods if o.pod_group_of(p)}
        for key in sorted(set(objs.pod_groups) - used):
            problems.append(
                (
                    f"PodGroup/{key}.metadata.name",
                    f"no Pod carries the label {o.POD_GROUP_LABEL}={objs.pod_groups[key].name}",
                )
            )
    if problems:
        raise InputError(problems)
    if warn:
        for d in [*dangling(objs, pods), *missing_claims(objects, pods)]:
            log.warning("%s", d.warning())
    return objs
