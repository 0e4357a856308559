"""Upstream's preemption may answer in several ways; the comparison accepts any of them.

Upstream's dry run meets the potential nodes in a map's order from a random offset and
stops once it has ``DefaultPreemptionArgs``' number of candidates; a tie left after
pickOneNodeForPreemption's criteria goes by a map's order.  kube-oracle lists every answer
upstream can give (``preemption.choices``, ``oracle/internal/oracle/preemptchoices.go``) and
``oracle/compare.py`` accepts kubesched's when it is one of them.
"""

from __future__ import annotations

import copy
from typing import Any

from compare import differences, ours


def _node(name: str) -> dict[str, Any]:
    alloc = {"cpu": "1", "memory": "4Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": alloc, "capacity": dict(alloc)},
    }


def _pod(name: str, node: str | None, priority: int, cpu: str = "800m") -> dict[str, Any]:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "priority": priority,
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
        },
    }
    if node is not None:
        pod["spec"]["nodeName"] = node
        pod["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
    return pod


def _request(priorities: list[int], config: dict[str, Any] | None = None) -> dict[str, Any]:
    """One node per priority, each full with one running Pod of that priority (all started
    at the same time); the incoming Pod (priority 100) fits only where one is preempted."""
    items = []
    for i, priority in enumerate(priorities):
        items += [_node(f"node-{i}"), _pod(f"run-{i}", f"node-{i}", priority)]
    return {
        "cluster": {"apiVersion": "v1", "kind": "List", "items": items},
        "pod": _pod("incoming", None, 100, cpu="500m"),
        "config": config,
    }


def _limited(k: int) -> dict[str, Any]:
    args = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "DefaultPreemptionArgs",
        "minCandidateNodesPercentage": 0,
        "minCandidateNodesAbsolute": k,
    }
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "pluginConfig": [{"name": "DefaultPreemption", "args": args}],
            }
        ],
    }


def _nominated(answer: dict[str, Any]) -> set[str]:
    return {c["nominatedNode"] for c in answer["preemption"].get("choices", [])}


def test_candidates_tied_to_the_end_are_each_a_choice(oracle: Any) -> None:
    request = _request([0, 0, 0])
    answer = oracle.ask(request)
    assert _nominated(answer) == {"node-0", "node-1", "node-2"}
    for choice in answer["preemption"]["choices"]:
        n = choice["nominatedNode"][-1]
        assert choice["victims"] == [f"default/run-{n}"]
    assert differences(ours(request), answer) == []


def test_fewer_candidates_than_nodes_make_any_candidate_a_choice(oracle: Any) -> None:
    """With one candidate looked for, the dry run may meet node-1 (a victim of priority 50)
    first and stop there; looking for two of three, it may meet node-1 and node-2 first;
    looking at every node, node-0 (priority 0) always wins."""
    for request, nodes in [
        (_request([0, 50], _limited(1)), {"node-0", "node-1"}),
        (_request([0, 50, 50], _limited(2)), {"node-0", "node-1", "node-2"}),
    ]:
        answer = oracle.ask(request)
        assert _nominated(answer) == nodes
        assert differences(ours(request), answer) == []
    for request in (_request([0, 50], _limited(2)), _request([0, 50, 50])):
        answer = oracle.ask(request)
        assert "choices" not in answer["preemption"]
        assert answer["preemption"]["nominatedNode"] == "node-0"


def test_the_comparison_accepts_any_choice_and_only_those() -> None:
    def answer(node: str) -> dict[str, Any]:
        return {"message": "", "nominatedNode": node, "victims": [f"default/run-{node[-1]}"]}

    theirs = {
        "result": "Unschedulable",
        "message": "0/2 nodes are available: 2 Insufficient cpu.",
        "nodes": {},
        "preemption": {**answer("node-0"), "choices": [answer("node-0"), answer("node-1")]},
    }
    mine = copy.deepcopy(theirs)
    del mine["preemption"]["choices"]
    for node in ("node-0", "node-1"):
        mine["preemption"] = answer(node)
        assert differences(mine, theirs) == []
    mine["preemption"] = answer("node-2")
    lines = differences(mine, theirs)
    assert lines and all("one of 2 choices" in line for line in lines)
