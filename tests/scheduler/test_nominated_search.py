"""The search's nominated-node stage (upstream ``evaluateNominatedNode`` inside
``findNodesThatFitPod``): a failing nominated node keeps its Filter status in the diagnosis,
whatever PreFilter narrowed to, and counts as processed."""

from __future__ import annotations

import dataclasses

from kubesched.api import objects as api
from kubesched.testing import drain, make_node, make_pod, new_scheduler


def _only_on(node: str) -> api.NodeAffinity:
    """Required node affinity naming one node by ``metadata.name`` (NodeAffinity's
    PreFilter narrows the search to it)."""
    req = api.Requirement("metadata.name", "In", (node,))
    return api.NodeAffinity(required=(api.NodeSelectorTerm(match_fields=(req,)),))


def test_a_nominated_node_left_out_by_pre_filter_counts_with_its_filter_reason() -> None:
    """Upstream's FitError counts the nominated node with the reason Filter gave it in the
    nominated pass, not as a node PreFilter left out."""
    s, fake, _ = new_scheduler()
    s.on_node_add(make_node("node-0").cap(cpu="1", memory="8Gi", pods=110).obj())
    s.on_node_add(make_node("node-1").cap(cpu="1", memory="8Gi", pods=110).obj())
    s.on_node_add(make_node("node-2").cap(cpu="2", memory="8Gi", pods=110).obj())
    pod = make_pod("incoming").req(cpu="2").affinity(_only_on("node-0")).obj()
    s.on_pod_add(dataclasses.replace(pod, nominated_node_name="node-2"))
    drain(s)
    # the first attempt, with the nomination (its failed preemption clears the nomination,
    # which requeues the Pod, as upstream's status patch does; the retry has none)
    key, reason, message = fake.failed[0]
    assert (key, reason) == ("default/incoming", "Unschedulable")
    assert message.startswith(
        "0/3 nodes are available: 1 Insufficient cpu, "
        "1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) didn't satisfy plugin(s) [NodeAffinity]. "
    )  # kubesched said "2 node(s) didn't satisfy plugin(s) [NodeAffinity]"


def test_a_failing_nominated_node_the_search_does_not_reach_counts_as_processed() -> None:
    """Upstream ``processedNodes = len(feasible) + NodeToStatus.Len()``: the nominated node's
    status is in ``NodeToStatus`` even when the window of ``percentageOfNodesToScore``
    stops before it, so the round-robin start index moves one further."""
    s, fake, _ = new_scheduler(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": 10,
        }
    )
    for i in range(300):
        cpu = "100m" if i == 299 else "4"
        s.on_node_add(make_node(f"n{i:03d}").cap(cpu=cpu, memory="8Gi", pods=110).obj())
    pod = make_pod("a").req(cpu="200m").obj()
    s.on_pod_add(dataclasses.replace(pod, nominated_node_name="n299"))
    s.schedule_one()
    assert "default/a" in fake.binds
    assert s.search.next_start_node_index == 101  # 100 nodes in the window + n299
