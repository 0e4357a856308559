"""Bad job-layer input, found before anything runs: one :class:`InputError` naming each
object and field.

Checked: every job-layer object parses (:func:`kubesched.admission.objects.collect`); the
quota tree has no missing parent, no cycle, and no parent whose children's ``min`` sum above
its own (:func:`kubesched.admission.quota.check_tree`); a LocalQueue names an existing
ClusterQueue, a ClusterQueue's flavors exist; a Pod's PodGroup, LocalQueue and named quota
exist; and, when every Pod is known (a scenario), each PodGroup has at least one Pod.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubesched.admission import objects as o
from kubesched.admission import quota as qt
from kubesched.api import objects as api
from kubesched.api.errors import InputError


def check(
    objects: list[dict[str, Any]], pods: Iterable[api.Pod], *, all_pods_known: bool = False
) -> o.JobObjects:
    """Parse and cross-check; returns the parsed objects or raises :class:`InputError`."""
    objs = o.collect(objects)
    problems = qt.check_tree(objs.quotas.values())
    for key, lq in sorted(objs.local_queues.items()):
        if lq.cluster_queue not in objs.cluster_queues:
            problems.append(
                (
                    f"LocalQueue/{key}.spec.clusterQueue",
                    f'ClusterQueue "{lq.cluster_queue}" not found',
                )
            )
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
    used_groups: set[str] = set()
    for pod in pods:
        labels = f"Pod/{pod.key}.metadata.labels"
        group = o.pod_group_of(pod)
        if group:
            key = f"{pod.namespace}/{group}"
            used_groups.add(key)
            if key not in objs.pod_groups:
                label = (
                    o.POD_GROUP_LABEL
                    if o.POD_GROUP_LABEL in pod.labels
                    else (o.POD_GROUP_LABEL_KOORDINATOR)
                )
                problems.append((f"{labels}[{label}]", f'PodGroup "{key}" not found'))
        queue = pod.labels.get(o.QUEUE_NAME_LABEL)
        if queue and f"{pod.namespace}/{queue}" not in objs.local_queues:
            problems.append(
                (
                    f"{labels}[{o.QUEUE_NAME_LABEL}]",
                    f'LocalQueue "{pod.namespace}/{queue}" not found',
                )
            )
        quota = pod.labels.get(o.QUOTA_NAME_LABEL)
        if quota and quota not in objs.quotas:
            problems.append(
                (f"{labels}[{o.QUOTA_NAME_LABEL}]", f'ElasticQuota "{quota}" not found')
            )
    if all_pods_known:
        for key in sorted(set(objs.pod_groups) - used_groups):
            problems.append(
                (
                    f"PodGroup/{key}.metadata.name",
                    f"no Pod carries the label {o.POD_GROUP_LABEL}={objs.pod_groups[key].name}",
                )
            )
    if problems:
        raise InputError(problems)
    return objs
