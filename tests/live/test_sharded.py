"""The sharded architecture live: a coordinator and shards (in-process replicas on threads)
coordinating through the fake API server only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.config.load import load_config
from kubesched.live import sharding as sh
from kubesched.live.roles import COORDINATOR, SHARD
from kubesched.plugins.registry import known_plugin_names
from tests.live.conftest import Api, Role, kubectl, make_config, needs_kubectl, node, pod, start
from tests.live.conftest import wait_for as wait
from tests.live.fakeapi import FakeApiServer
from tests.live.fakestore import by_plural

POD_YAML = """apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  schedulerName: kubesched
  containers: [{name: c, image: nginx, resources: {requests: {cpu: 500m}}}]
"""


def bound(api: Api, *names: str) -> bool:
    return all(api.node_of(n) for n in names)


def annotations(api: Api, name: str) -> dict[str, str]:
    return dict(api.pod(name)["metadata"].get("annotations") or {})


@needs_kubectl
def test_kubectl_pods_are_bound_by_a_coordinator_and_two_shards(
    server: FakeApiServer, api: Api, roles: Callable[..., Role]
) -> None:
    for i in range(4):
        api.create(node(f"n{i}"))
    c, shards = start(roles)
    names = [f"web-{i}" for i in range(12)]
    kubectl(
        server,
        "apply",
        "--validate=false",
        "-f",
        "-",
        stdin="---\n".join(POD_YAML % n for n in names),
    )
    wait(lambda: bound(api, *names))
    stats = api.store.stats
    assert sorted(stats.binds_per_pod.values()) == [1] * 12
    assert {ua for *_, ua in stats.binds} == {"kubesched-test (coordinator)"}
    assert all(s.shard.proposed > 0 for s in shards)  # both shards did work
    for n in names:
        ann = annotations(api, n)
        prop = sh.Proposal.decode(ann[sh.PROPOSAL])
        assert prop is not None and prop.node == api.node_of(n)
        assert (str(prop.shard), str(prop.attempt)) == (ann[sh.SHARD], ann[sh.ATTEMPT])
        the_node = api.store.get(by_plural("nodes"), "", prop.node)
        assert prop.resource_version == the_node["metadata"]["resourceVersion"]
    assert c.coordinator.stats["dispatched"] == 12 and c.coordinator.stats["committed"] == 12
    wait(lambda: len(api.events("Scheduled")) == 12)


def test_two_shards_proposing_the_last_free_slot_bind_exactly_one(
    api: Api, roles: Callable[..., Role]
) -> None:
    c, shards = start(roles)
    api.create(node("n1", cpu="1"))
    wait(lambda: all("n1" in s.shard.dispatch.nodes for s in shards))

    def other_answered() -> bool:
        return sum(s.shard.proposed + s.shard.reported for s in shards) >= 1

    # The first proposal is slow to arrive: the API server holds it until the other shard,
    # which cannot see it, has answered for the other Pod (and so picked the same slot).
    first_proposal = r"PATCH /api/v1/namespaces/default/pods/[ab] kubesched-test \(shard-"
    api.server.delay(first_proposal, 4.0, until=other_answered)
    api.create(pod("a", cpu="1"))
    api.create(pod("b", cpu="1"))
    wait(lambda: c.coordinator.stats["refused:resources"] >= 1)
    wait(lambda: bound(api, "a") or bound(api, "b"))
    winner, loser = ("a", "b") if bound(api, "a") else ("b", "a")
    wait(lambda: annotations(api, loser).get(sh.REFUSED) == "resources")  # kept as a record

    def refused_condition() -> bool:
        conds = api.pod(loser).get("status", {}).get("conditions", [])
        return any(x["type"] == "PodScheduled" and x["status"] == "False" for x in conds)

    wait(refused_condition)  # handed out again, then reported unschedulable
    assert api.node_of(loser) == ""
    assert api.store.stats.binds_per_pod == {f"default/{winner}": 1}


def test_a_new_coordinator_relists_and_ignores_its_predecessor_s_hand_outs(
    api: Api, roles: Callable[..., Role]
) -> None:
    api.create(node("n1"))
    # A Lease that a few slow requests on a loaded machine do not lose: the failover below
    # is the injected one, after the first coordinator handed every Pod out.
    config = make_config(lease=("4s", "3s", "100ms"))
    first = roles(COORDINATOR, "coordinator-1", config, shards=2)
    wait(first.live.leading)
    standby = roles(COORDINATOR, "coordinator-2", config, shards=2)
    for i in range(2):
        roles(SHARD, f"shard-{i}", config, shards=2, shard_index=i)
    # The leader hands Pods out and gets proposals, but its binds fail; then it loses its
    # Lease.  The standby takes over with fresh lists and hands everything out again.
    api.server.fail(r"POST .*/binding .*coordinator-1", 500, times=100_000)
    names = [f"p{i}" for i in range(4)]
    for n in names:
        api.create(pod(n))
    wait(lambda: all(sh.PROPOSAL in annotations(api, n) for n in names))
    api.server.fail(r"leases/kubesched .*coordinator-1", 500, times=100_000)
    first.thread.join(15)
    assert first.code == 1
    wait(lambda: bound(api, *names), timeout=30)
    assert sorted(api.store.stats.binds_per_pod.values()) == [1] * 4
    assert {ua for *_, ua in api.store.stats.binds} == {"kubesched-test (coordinator-2)"}
    for n in names:  # decided on a new hand-out: the old proposals were never used
        ann = annotations(api, n)
        proposal = sh.Proposal.decode(ann[sh.PROPOSAL])
        assert proposal is not None and proposal.attempt == sh.attempt_of(ann) >= 2
    assert standby.coordinator.stats["committed"] == 4


GANG_CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "leaderElection": {  # steady (STEADY_LEASE): this test is not about failover
        "leaseDuration": "15s",
        "renewDeadline": "10s",
        "retryPeriod": "100ms",
        "resourceName": "kubesched",
        "resourceNamespace": "kube-system",
    },
    "profiles": [
        {
            "schedulerName": "kubesched",
            "plugins": {
                "multiPoint": {
                    "enabled": [{"name": "Coscheduling"}],
                    "disabled": [{"name": "PrioritySort"}],
                }
            },
            "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 1}}],
        }
    ],
}


def gang_pod(name: str, group: str) -> dict[str, Any]:
    out = pod(name, cpu="1")
    out["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": group}
    return out


def test_a_gang_goes_to_one_shard_and_binds_all_or_nothing(
    api: Api, roles: Callable[..., Role]
) -> None:
    config = load_config(GANG_CONFIG, known_plugins=known_plugin_names())
    for i in range(4):
        api.create(node(f"n{i}", cpu="1"))
    for group, size in (("fits", 3), ("too-big", 5)):
        spec = {"minMember": size}
        obj = {"metadata": {"name": group, "namespace": "default"}, "spec": spec}
        api.store.create(by_plural("podgroups"), "default", obj)
    c, _ = start(roles, config=config)
    fits = [f"fits-{i}" for i in range(3)]
    for n in fits:
        api.create(gang_pod(n, "fits"))
    wait(lambda: bound(api, *fits))
    owners = {sh.owner(annotations(api, n)) for n in fits}
    assert len({shard for shard, _ in owners}) == 1  # one shard took the whole gang
    big = [f"big-{i}" for i in range(5)]  # 5 members, 1 free slot: none may bind
    for n in big:
        api.create(gang_pod(n, "too-big"))
    wait(lambda: c.coordinator.stats["failed"] >= 5, timeout=15)
    assert not any(api.node_of(n) for n in big)
    assert sorted(api.store.stats.binds_per_pod) == [f"default/{n}" for n in fits]
