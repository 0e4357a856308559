"""``kubesched.schedule(bind_faults=)``: the API server refusing a Pod's binding, as
kube-oracle's fake API server refuses it for a request's ``bindFaults`` (issue 30 item 3,
DefaultBinder's error returns).  The answers are upstream v1.34.4's (kube-oracle's schedule
verb, asked in session 21; ``tests/oracle/test_bind_faults.py`` asks it again).

Upstream's binding cycle starts within microseconds of Permit and the refusal comes back at
once, while the next Pod's cycle runs: that cycle meets the refused Pod assumed and fails,
the refused Pod is forgotten meanwhile, and the move that makes sends the other Pod to
backoffQ, from which Pop takes it at once (kube-oracle reports it attempted twice).  The
simulator ends a refused binding just after the next scheduling cycle (``bind_latency`` is
an accepted bind's; ``tests/sim/test_prebind_faults.py`` does the same for refused PreBind
writes); it used to run it ``bind_latency`` later, when nothing woke the scheduler for the
moved Pod, and the refused Pod, of higher priority, won every retry."""

from __future__ import annotations

from typing import Any

import pytest

import kubesched

CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def _pod(name: str, priority: int, policy: str) -> dict[str, Any]:
    requests = {"cpu": "800m"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": {
            "priority": priority,
            "preemptionPolicy": policy,
            "containers": [{"name": "c", "image": "i", "resources": {"requests": requests}}],
        },
    }


def _cluster() -> dict[str, Any]:
    room = {"cpu": "1", "memory": "4Gi", "pods": "110"}
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n0", "labels": {"kubernetes.io/hostname": "n0"}},
        "status": {"allocatable": room, "capacity": room},
    }
    return {"apiVersion": "v1", "kind": "List", "items": [node]}


@pytest.mark.parametrize(
    ("policy", "gates", "want"),
    [
        # a (priority 10) is refused its binding; b takes the node while a backs off, then a
        # preempts it (and is refused again, for ever)
        ("PreemptLowerPriority", None, {"a": ("Error", None), "b": ("Preempted", None)}),
        (
            "PreemptLowerPriority",
            {"SchedulerAsyncAPICalls": True},
            {"a": ("Error", None), "b": ("Preempted", None)},
        ),
        # without preemption b keeps the node and a is left Unschedulable
        ("Never", None, {"a": ("Unschedulable", None), "b": ("Scheduled", "n0")}),
    ],
)
def test_refused_binding_frees_the_node_at_once(
    policy: str, gates: dict[str, bool] | None, want: dict[str, tuple[str, str | None]]
) -> None:
    pods = [_pod("a", 10, policy), _pod("b", 0, policy)]
    out = kubesched.schedule(
        _cluster(),
        pods,
        CONFIG,
        kubernetes_version="1.34",
        feature_gates=gates,
        bind_faults={"Pod/default/a": "refuseBinding"},
    )["pods"]
    got = {k.split("/")[1]: (v["result"], v["node"]) for k, v in out.items()}
    assert got == want
