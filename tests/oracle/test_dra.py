"""DynamicResources against upstream: the issue's scenario (12 GPUs, 7 Pods of 2 through a
template) scheduled by the simulator, then its end state explained by kubesched and by
kube-oracle (upstream's real DynamicResources over the same slices, class and claims)."""

from __future__ import annotations

from typing import Any

from compare import differences, ours

from tests.plugins._dra import cluster, pod
from tests.sim.test_dra_schedule import SEVENTH_1_34, claiming, claims_of, run, twelve_gpus


def end_state() -> tuple[dict[str, Any], dict[str, Any]]:
    """The cluster after the run (bound Pods with their claims) and the Pod left over."""
    objects = twelve_gpus()
    sim = run(objects, [claiming(f"p{i}") for i in range(7)])
    items = [*objects, *claims_of(sim).values()]
    waiting: dict[str, Any] = {}
    for p in sim.api.pods.values():
        manifest = pod(p.name, ("gpu", "resourceClaimTemplateName", "two-gpus"),
                       node_name=p.node_name, statuses=p.resource_claim_statuses)  # fmt: skip
        if p.node_name:
            items.append(manifest)
        else:
            waiting = manifest
    return cluster(*items), waiting


def test_the_seventh_pod_gets_upstreams_answer(oracle: Any) -> None:
    snapshot, seventh = end_state()
    request = {"cluster": snapshot, "pod": seventh, "config": None}
    theirs = oracle.ask(request)
    mine = ours(request)
    assert differences(mine, theirs) == []
    assert theirs["fullMessage"] == SEVENTH_1_34  # the default oracle build is v1.34
    assert mine["preemption"]["message"] == theirs["preemption"]["message"]
