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


ASKS = 4
"""Upstream asked up to this many times: its forgetting of the refused Pod races the second
Pod's cycle, and on a loaded machine an ask now and then lands the other way."""


def _assert_among_upstream(
    schedule_oracle: Any, request: dict[str, Any], mine: dict[str, Any]
) -> None:
    """kubesched's (result, node) for ``a`` and ``b`` is one of upstream's answers."""
    keys = ("default/a", "default/b")
    ours = [(mine[k]["result"], mine[k]["node"]) for k in keys]
    seen: list[list[tuple[str, str | None]]] = []
    for _ in range(ASKS):
        theirs = schedule_oracle.ask(request)["pods"]
        answer = [(theirs[k]["result"], theirs[k].get("node")) for k in keys]
        if answer == ours:
            return
        seen.append(answer)
    raise AssertionError(f"kubesched {ours}, upstream {seen}")


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


@pytest.mark.parametrize("policy", ["PreemptLowerPriority", "Never"])
def test_a_refused_binding_frees_its_node_for_the_next_pod_at_once(
    schedule_oracle: Any, policy: str
) -> None:
    """Two Pods wanting the one node, the first (priority 10) refused its binding: upstream
    forgets it microseconds after its Reserve, during the second's first cycle, which the
    forgetting moves to backoffQ, so the second binds while the first backs off (then the
    first preempts it, or with ``preemptionPolicy: Never`` stays Unschedulable).  kubesched
    ends a refused binding just after the next scheduling cycle
    (``tests/sim/test_bind_faults.py``)."""
    small = {"cpu": "1", "memory": "4Gi", "pods": "110"}
    node = _node()
    node["status"] = {"allocatable": small, "capacity": small}
    cluster = {"apiVersion": "v1", "kind": "List", "items": [node]}
    pods = [_pod("a", 0), _pod("b", 1)]
    for pod, priority in zip(pods, (10, 0), strict=True):
        pod["spec"]["priority"] = priority
        pod["spec"]["preemptionPolicy"] = policy
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "800m"
    faults = {"Pod/default/a": "refuseBinding"}
    request = {"cluster": cluster, "pods": pods, "config": None, "bindFaults": faults}
    mine = kubesched.schedule(cluster, pods, None, kubernetes_version="1.34",
                              bind_faults=faults)["pods"]  # fmt: skip
    _assert_among_upstream(schedule_oracle, request, mine)


def test_bind_faults_are_checked() -> None:
    """A key that is not ``Pod/NAMESPACE/NAME`` or an unknown kind is an input error."""
    cluster = {"apiVersion": "v1", "kind": "List", "items": [_node()]}
    for faults in ({"Pod/refused": "refuseBinding"}, {"Pod/default/refused": "refuse"}):
        with pytest.raises(InputError):
            kubesched.schedule(cluster, [_pod("refused", 0)], None, bind_faults=faults)


@pytest.mark.parametrize("world", ["storage", "dra_cpu"])
@pytest.mark.parametrize("policy", ["PreemptLowerPriority", "Never"])
def test_a_refused_prebind_write_frees_its_node_for_the_next_pod(
    schedule_oracle: Any, world: str, policy: str
) -> None:
    """Two Pods wanting the one node's CPU, the first's PreBind write refused (a claim to
    provision, a ResourceClaim's finalizer): the second's first cycle meets the first
    assumed, is moved when the first is forgotten and binds before the first's retry
    (``tests/sim/test_prebind_faults.py``, whose other worlds' upstream answers vary from ask
    to ask)."""
    from tests.sim import test_prebind_faults as cases

    state, pods, faults = getattr(cases, f"_{world}")(policy)
    config = cases.DRA_CONFIG if "claim_faults" in faults else None
    request: dict[str, Any] = {"cluster": state, "pods": pods, "config": config}
    request["volumeFaults" if "volume_faults" in faults else "claimFaults"] = next(
        iter(faults.values())
    )
    mine = kubesched.schedule(state, pods, config, kubernetes_version="1.34", **faults)["pods"]
    _assert_among_upstream(schedule_oracle, request, mine)
