"""Live mode keeps the Pods of a Node it does not know (issue 31): a Node deleted and created
again under its name while its Pods run, and a Pod another scheduler bound to a Node the
Node watch has not delivered yet.  As upstream's cache (its *ghost* node entries), those Pods
count on the Node when it (re)appears, so Pods waiting for room stay Pending instead of
overcommitting it -- serial and sharded, by hand and over seeded sequences."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from kubesched.state.cache import ClusterState
from tests.live.conftest import Api, Replica, Role, make_config, node, pod, start
from tests.live.conftest import wait_for as wait
from tests.live.fakestore import Obj, by_plural

T = 20.0


def _millicpu(obj: Obj) -> int:
    cpu = obj["spec"]["containers"][0]["resources"]["requests"]["cpu"]
    return int(cpu[:-1]) if cpu.endswith("m") else int(cpu) * 1000


def _used(api: Api) -> dict[str, int]:
    """Millicpu bound to each node, by the API server's Pods."""
    items, _ = api.store.list(by_plural("pods"), "", "", "")
    out: dict[str, int] = {}
    for p in items:
        name = p["spec"].get("nodeName")
        if name:
            out[name] = out.get(name, 0) + _millicpu(p)
    return out


def _condition(api: Api, name: str) -> dict[str, Any] | None:
    for c in api.pod(name).get("status", {}).get("conditions", []):
        if c["type"] == "PodScheduled" and c["status"] == "False":
            return dict(c)
    return None


def _elsewhere(name: str, node_name: str, cpu: str) -> Obj:
    """A Pod another scheduler bound to ``node_name``."""
    obj = pod(name, cpu=cpu, scheduler="another-scheduler")
    obj["spec"]["nodeName"] = node_name
    return obj


def _counted(cluster: ClusterState, name: str) -> int:
    row = cluster.nodes.row_of.get(name)
    return -1 if row is None else int(cluster.nodes.requested[row, 0])


def _uid(cluster: ClusterState, name: str) -> str | None:
    found = cluster.node(name)
    return None if found is None else str(found.raw.get("metadata", {}).get("uid"))


class _Setup:
    """The serial replica, or a coordinator with two shards: the caches to check."""

    def __init__(self, mode: str, replicas: Callable[..., Replica], roles: Callable[..., Role]):
        if mode == "serial":
            r = replicas("solo", make_config(leader=False))
            self.caches = [r.live.scheduler.cluster]
        else:
            c, shards = start(roles)
            self.caches = [c.coordinator.cluster] + [s.shard.shard.cluster for s in shards]

    def counted(self, name: str, millicpu: int) -> bool:
        """Every cache counts ``millicpu`` on node ``name``."""
        return all(_counted(cache, name) == millicpu for cache in self.caches)


MODES = pytest.mark.parametrize("mode", ["serial", "sharded"])


@MODES
def test_a_node_deleted_and_created_again_keeps_its_pods(
    mode: str, api: Api, replicas: Callable[..., Replica], roles: Callable[..., Role]
) -> None:
    api.create(node("n1", cpu="1"))
    s = _Setup(mode, replicas, roles)
    api.create(pod("a", cpu="500m"))
    api.create(pod("b", cpu="500m"))
    wait(lambda: api.node_of("a") == api.node_of("b") == "n1", timeout=T)
    nodes = by_plural("nodes")
    api.store.delete(nodes, "", "n1")  # the kubelet registers it again; its Pods run on
    wait(lambda: all("n1" not in c.nodes.row_of for c in s.caches), timeout=T)
    api.create(node("n1", cpu="1"))
    wait(lambda: s.counted("n1", 1000), timeout=T)
    api.create(pod("c", cpu="500m"))
    cond = wait(lambda: _condition(api, "c"), timeout=T)
    assert cond["reason"] == "Unschedulable"
    assert api.node_of("c") == "" and _used(api) == {"n1": 1000}
    assert all(cache.overcommitted_nodes() == [] for cache in s.caches)


@MODES
def test_a_pod_bound_to_a_node_not_watched_yet_counts_when_it_arrives(
    mode: str, api: Api, replicas: Callable[..., Replica], roles: Callable[..., Role]
) -> None:
    s = _Setup(mode, replicas, roles)
    api.create(_elsewhere("other", "late", "1"))  # its Node comes later (another watch)
    wait(lambda: all(c.has_pod("default/other") for c in s.caches), timeout=T)
    api.create(node("late", cpu="1"))
    wait(lambda: s.counted("late", 1000), timeout=T)
    api.create(pod("c", cpu="500m"))
    cond = wait(lambda: _condition(api, "c"), timeout=T)
    assert cond["reason"] == "Unschedulable"
    assert api.node_of("c") == "" and _used(api) == {"late": 1000}


@pytest.mark.parametrize("seed", range(4))
def test_seeded_sequences_never_overcommit_nor_lose_a_pod(
    seed: int, api: Api, replicas: Callable[..., Replica]
) -> None:
    """Random interleavings of: our Pods arriving, Node objects deleted and created again
    (their Pods running on), and another scheduler binding Pods to Nodes not created yet.
    Afterwards no node is overcommitted, each of our Pods is bound or Pending with a reason,
    and the cache counts exactly the API server's bound Pods on every node."""
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(3)]
    for n in names[:2]:
        api.create(node(n, cpu="1"))
    r = replicas("solo", make_config(leader=False))
    cluster = r.live.scheduler.cluster
    nodes = by_plural("nodes")
    present = set(names[:2])
    outside: dict[str, int] = {}  # millicpu another scheduler put on a node not yet created
    ours: list[str] = []

    def settled() -> bool:
        return all(api.node_of(p) or _condition(api, p) for p in ours)

    for step in range(14):
        wait(settled, timeout=T)  # the scheduler has answered every Pod so far
        op = rng.choice(["pod", "pod", "recreate", "elsewhere", "node"])
        if op == "pod":
            ours.append(f"p{step}")
            api.create(pod(ours[-1], cpu=rng.choice(["200m", "300m", "500m"])))
        elif op == "recreate" and present:
            n = rng.choice(sorted(present))
            api.store.delete(nodes, "", n)
            api.create(node(n, cpu="1"))
        elif op == "elsewhere" and len(present) < len(names):
            n = rng.choice(sorted(set(names) - present))
            if outside.get(n, 0) <= 500:
                api.create(_elsewhere(f"o{step}", n, "500m"))
                outside[n] = outside.get(n, 0) + 500
                # Pods and Nodes come on two watches: a Node created right after may reach
                # any scheduler first (upstream's too).  What is tested is a Pod the cache
                # holds before its Node arrives, so the Node waits for the Pod to be seen.
                wait(lambda key=f"default/o{step}": cluster.has_pod(key), timeout=T)
        elif op == "node" and len(present) < len(names):
            n = rng.choice(sorted(set(names) - present))
            api.create(node(n, cpu="1"))
            present.add(n)
    for n in sorted(set(names) - present):
        api.create(node(n, cpu="1"))
    wait(settled, timeout=T)
    # The last Node deleted and created again may still be on its way to the cache (deleted
    # there, its Pods waiting as ghosts, the new Node not applied yet): the end state is read
    # once the cache holds every Node the API server does, by UID.
    node_uids = {n: api.store.get(nodes, "", n)["metadata"]["uid"] for n in names}
    wait(lambda: all(_uid(cluster, n) == node_uids[n] for n in names), timeout=T)
    wait(lambda: all(_counted(cluster, n) == _used(api).get(n, 0) for n in names), timeout=T)
    used = _used(api)
    assert all(v <= 1000 for v in used.values()), used
    assert cluster.overcommitted_nodes() == [] and not cluster.ghosts
