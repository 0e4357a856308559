"""``bindFaults`` against upstream: kube-oracle's fake API server refuses the binding of the
Pods a request names (``oracle/internal/oracle/schedule.go``), through the clientset and,
with SchedulerAsyncAPICalls, the API dispatcher; ``kubesched.schedule(bind_faults=)`` plays
the same (``kubesched.sim.apiserver.BIND_FAULTS``)."""

from __future__ import annotations

from typing import Any

import pytest

import kubesched
from kubesched.api.errors import InputError


def _node() -> dict[str, Any]:
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
            "status": {"allocatable": alloc, "capacity": alloc}}  # fmt: skip


def _pod(name: str, ts: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                         "creationTimestamp": f"2026-01-01T00:00:{ts:02d}Z"},
            "spec": {"containers": [{"name": "c", "image": "x",
                                     "resources": {"requests": {"cpu": "100m"}}}]}}  # fmt: skip


@pytest.mark.parametrize("async_calls", [False, True])
def test_a_refused_binding_ends_the_pod_an_error_on_both_sides(
    schedule_oracle: Any, async_calls: bool
) -> None:
    """The refused Pod retries until the run settles and ends an Error; the other binds.
    Upstream's answer holds the fault model kubesched follows, with and without the API
    dispatcher (DefaultBinder's two branches)."""
    cluster = {"apiVersion": "v1", "kind": "List", "items": [_node()]}
    pods = [_pod("refused", 0), _pod("fine", 1)]
    faults = {"Pod/default/refused": "refuseBinding"}
    gates = {"SchedulerAsyncAPICalls": True} if async_calls else {}
    request: dict[str, Any] = {"cluster": cluster, "pods": pods, "config": None}
    request["bindFaults"] = faults
    if gates:
        request["featureGates"] = gates
    theirs = schedule_oracle.ask(request)["pods"]
    mine = kubesched.schedule(cluster, pods, None, kubernetes_version="1.34",
                              feature_gates=gates, bind_faults=faults)["pods"]  # fmt: skip
    assert theirs["default/refused"]["result"] == mine["default/refused"]["result"] == "Error"
    assert theirs["default/fine"]["result"] == mine["default/fine"]["result"] == "Scheduled"
    assert "refused (the case's bindFaults)" in mine["default/refused"]["message"]


def test_bind_faults_are_checked() -> None:
    """A key that is not ``Pod/NAMESPACE/NAME`` or an unknown kind is an input error."""
    cluster = {"apiVersion": "v1", "kind": "List", "items": [_node()]}
    for faults in ({"Pod/refused": "refuseBinding"}, {"Pod/default/refused": "refuse"}):
        with pytest.raises(InputError):
            kubesched.schedule(cluster, [_pod("refused", 0)], None, bind_faults=faults)
