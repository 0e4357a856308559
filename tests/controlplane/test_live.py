"""``kubesched run`` (in-process replicas) against a real kube-apiserver v1.34, under the
shipped RBAC: binding, Events and conditions as upstream writes them, the Lease, preemption,
two replicas with leader election, and the sharded roles.  Every write kubesched makes goes
through the API server's validation, admission and Node,RBAC authorizer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesched.live.roles import COORDINATOR, SHARD
from tests.controlplane.conftest import DEPLOY, NAMESPACE, VERSION, ControlPlane, config
from tests.live.conftest import Replica, Role, node, pod
from tests.live.conftest import wait_for as wait

pytestmark = pytest.mark.controlplane
T = 30.0
"""Seconds any one wait may take (a loaded 2-core machine)."""


@pytest.fixture
def started() -> Iterator[list[Replica | Role]]:
    made: list[Replica | Role] = []
    yield made
    for r in made:
        if r.thread.is_alive():
            r.stop()


def replica(cp: ControlPlane, made: list[Any], identity: str, **kw: Any) -> Replica:
    r = Replica(cp.sa, identity, config(**kw))
    made.append(r)
    return r.start()


def holder(cp: ControlPlane, name: str = "kubesched") -> str:
    lease = cp.get("lease", name, NAMESPACE)
    return "" if lease is None else str(lease["spec"].get("holderIdentity") or "")


def condition(cp: ControlPlane, name: str, kind: str) -> dict[str, Any] | None:
    obj = cp.get("pod", name) or {}
    for c in obj.get("status", {}).get("conditions", []):
        if c["type"] == kind:
            return dict(c)
    return None


def test_pods_applied_with_kubectl_are_bound_others_untouched(
    cp: ControlPlane, started: list[Any]
) -> None:
    cp.apply(node("n1"))
    for i in range(3):
        cp.apply(pod(f"web-{i}"))
    cp.apply(pod("other", scheduler="default-scheduler"))
    r = replica(cp, started, "a")
    wait(lambda: all(cp.node_of(f"web-{i}") == "n1" for i in range(3)), T)
    assert holder(cp) == "a"
    wait(lambda: len(cp.events("Scheduled")) == 3, T)
    ev = cp.events("Scheduled")[0]
    assert (ev["type"], ev["action"], ev["reportingController"]) == (
        "Normal",
        "Binding",
        "kubesched",
    )
    assert ev["note"].startswith("Successfully assigned default/web-") and ev["note"].endswith(
        " to n1"
    )
    assert cp.node_of("other") == ""  # another scheduler's Pod
    assert r.live.api.bind_errors == 0 and r.live.api.binds == 3
    cond = condition(cp, "web-0", "PodScheduled")
    assert cond is None or cond["status"] == "True"


def test_unschedulable_pod_gets_condition_and_event_as_upstream(
    cp: ControlPlane, started: list[Any]
) -> None:
    cp.apply(node("n1", cpu="1"))
    replica(cp, started, "a")
    cp.apply(pod("huge", cpu="2"))
    cond = wait(lambda: condition(cp, "huge", "PodScheduled"), T)
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    # v1.34: a request above the node's allocatable is Unresolvable, so preemption is not
    # tried; DynamicResources' PostFilter (default profile) speaks first, until v1.37 (the
    # release is the API server's)
    dra = "" if VERSION == "1.37" else "no new claims to deallocate, "
    assert cond["message"] == (
        f"0/1 nodes are available: 1 Insufficient cpu. {dra}preemption: "
        "0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    (ev,) = wait(lambda: cp.events("FailedScheduling"), T)
    assert (ev["type"], ev["action"], ev["note"]) == ("Warning", "Scheduling", cond["message"])
    assert ev["regarding"]["name"] == "huge" and ev["reportingController"] == "kubesched"
    cp.apply(node("n2", cpu="4"))  # a Node add requeues it
    wait(lambda: cp.node_of("huge") == "n2", T)


def _priority_classes(cp: ControlPlane) -> None:
    for name, value in (("low", 0), ("high", 1000)):
        cp.apply(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": f"kubesched-{name}", "labels": {"kubesched-test": "yes"}},
                "value": value,
            }
        )


def _prio_pod(name: str, cls: str) -> dict[str, Any]:
    manifest = pod(name, cpu="1")
    manifest["spec"]["priorityClassName"] = f"kubesched-{cls}"
    return manifest


def _terminating(cp: ControlPlane, name: str) -> dict[str, Any] | None:
    obj = cp.get("pod", name)
    return obj if obj is not None and obj["metadata"].get("deletionTimestamp") else None


def _status(cp: ControlPlane, name: str) -> dict[str, Any]:
    return dict((cp.get("pod", name) or {}).get("status", {}))


def _preempts(cp: ControlPlane) -> None:
    """A victim with the default 30 s grace: marked, deleted (Terminating: no kubelet), the
    preemptor nominated; once the victim is gone (force-deleted, as a kubelet would finish)
    the preemptor binds where it was nominated."""
    _priority_classes(cp)
    cp.apply(_prio_pod("low", "low"))
    wait(lambda: cp.node_of("low") == "n1", T)
    cp.apply(_prio_pod("high", "high"))
    victim = wait(
        lambda: (v := cp.get("pod", "low")) and v["metadata"].get("deletionTimestamp") and v, T
    )
    [dt] = [c for c in victim["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert (dt["status"], dt["reason"]) == ("True", "PreemptionByScheduler")
    assert dt["message"] == "kubesched: preempting to accommodate a higher priority pod"
    wait(
        lambda: (cp.get("pod", "high") or {}).get("status", {}).get("nominatedNodeName") == "n1", T
    )
    assert cp.node_of("high") == ""  # the victim still holds n1 while it terminates
    (ev,) = wait(lambda: cp.events("Preempted"), T)
    high = cp.get("pod", "high")
    assert high is not None
    assert (ev["type"], ev["action"]) == ("Normal", "Preempting")
    assert ev["regarding"]["name"] == "low" and ev["related"]["name"] == "high"
    assert ev["note"] == f"Preempted by pod {high['metadata']['uid']} on node n1"
    cp.kubectl("delete", "pod", "low", "--force", "--grace-period=0")
    wait(lambda: cp.node_of("high") == "n1", T)


def test_preemption_as_upstream(cp: ControlPlane, started: list[Any]) -> None:
    cp.apply(node("n1", cpu="1"))
    replica(cp, started, "a")
    _preempts(cp)


def test_two_replicas_one_leader_and_a_takeover(cp: ControlPlane, started: list[Any]) -> None:
    cp.apply(node("n1"))
    a = replica(cp, started, "a")
    wait(lambda: holder(cp) == "a", T)
    b = replica(cp, started, "b")
    cp.apply(pod("p1"))
    wait(lambda: cp.node_of("p1") == "n1", T)
    assert (a.live.api.binds, b.live.api.binds) == (1, 0)
    assert a.stop() == 0  # releases the Lease on the way out
    wait(lambda: holder(cp) == "b", T)
    cp.apply(pod("p2"))
    wait(lambda: cp.node_of("p2") == "n1", T)
    assert b.live.api.binds == 1


@pytest.fixture
def sharded_rbac(cp: ControlPlane) -> Iterator[dict[str, Path]]:
    """deploy/sharded/rbac.yaml on top of deploy/rbac.yaml, for this test only: a kubeconfig
    per role, with the token of that role's own ServiceAccount."""
    cp.kubectl("apply", "-f", str(DEPLOY / "sharded" / "rbac.yaml"))
    kubeconfigs = {}
    for role in ("coordinator", "shard"):
        sa = f"kubesched-{role}"
        token = cp.kubectl("create", "token", sa, "-n", NAMESPACE, "--duration=2h").strip()
        kubeconfigs[role] = cp.write_sa_kubeconfig(cp.dir / f"{sa}.kubeconfig", cp.server, token)
    yield kubeconfigs
    cp.kubectl("delete", "-f", str(DEPLOY / "sharded" / "rbac.yaml"))


def test_coordinator_and_two_shards(
    cp: ControlPlane, sharded_rbac: dict[str, Path], started: list[Any]
) -> None:
    # (sharded_rbac before started: the roles stop before their permissions are removed)
    for n in ("n1", "n2"):
        cp.apply(node(n))
    c = Role(sharded_rbac["coordinator"], COORDINATOR, "coordinator", config(), shards=2)
    started.append(c)
    for i in range(2):
        shard = Role(sharded_rbac["shard"], SHARD, f"shard-{i}", config(), shards=2, shard_index=i)
        started.append(shard)
    wait(lambda: c.coordinator.live == [0, 1], T)
    for i in range(6):
        cp.apply(pod(f"s-{i}"))
    wait(lambda: all(cp.node_of(f"s-{i}") for i in range(6)), T)
    assert holder(cp, "kubesched-shard-0") == "shard-0"
    assert holder(cp, "kubesched-shard-1") == "shard-1"
    assert c.coordinator.stats["committed"] + c.coordinator.stats["alternative"] == 6
