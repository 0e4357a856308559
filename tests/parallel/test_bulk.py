"""The binder's bulk fast path, the own-commit chain of the fast check, the API server's
``bind_many``, and the commit stream's encoding."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from kubesched.api import objects as api
from kubesched.bench.api import SchedulerClient
from kubesched.parallel import protocol as p
from kubesched.parallel.host import BulkBinds
from kubesched.sim.apiserver import ApiError, SimApiServer
from kubesched.sim.engine import WallClock
from kubesched.testing import make_node, make_pod
from tests.parallel.harness import ZONE, World, spread_pod

HOST = "kubernetes.io/hostname"


def _node(name: str, cpu: str = "2") -> api.Node:
    return make_node(name).cap(cpu=cpu, memory="8Gi", pods=10).labels(**{HOST: name}).obj()


def _handed(w: World, *pods: api.Pod) -> dict[int, list[api.Pod]]:
    """Create ``pods``, let the dispatcher hand them out: the Pods of each shard."""
    w.add(pods)
    w.parallel.dispatcher.fill(w.sched.queue)
    out: dict[int, list[api.Pod]] = {}
    for pod in pods:
        out.setdefault(w.parallel.dispatcher.in_flight[pod.key].shard, []).append(pod)
    return out


class _Watcher:
    def __init__(self, bulk: bool) -> None:
        self.calls: list[Any] = []
        if bulk:
            self.on_pods_bound = lambda pairs: self.calls.append(("many", list(pairs)))

    def on_node_add(self, node: api.Node) -> None:
        del node

    def on_pod_add(self, pod: api.Pod) -> None:
        del pod

    def on_pod_update(self, old: api.Pod, new: api.Pod) -> None:
        self.calls.append(("update", old.key, new.node_name))


@pytest.mark.parametrize("bulk", [True, False])
def test_bind_many_checks_each_pod_and_tells_the_watcher_once(bulk: bool) -> None:
    watcher = _Watcher(bulk)
    server = SimApiServer(WallClock(), lifecycle=False)
    server.watchers.append(watcher)  # type: ignore[arg-type]
    server.create_node(_node("a"))
    one, two = make_pod("one", "ns").obj(), make_pod("two", "ns").obj()
    server.create_pod(one)
    server.create_pod(two)
    hooked: list[str] = []
    server.on_bound.append(lambda pod: hooked.append(pod.key))
    missing = make_pod("missing", "ns").obj()
    errors = server.bind_many([(one, "a"), (missing, "a"), (two, "nowhere"), (one, "a")])
    assert [e.code if e else None for e in errors] == [None, 404, 404, 409]
    assert server.pods[one.key].node_name == "a" and not server.pods[two.key].node_name
    assert server.stats.binds == 1 and hooked == [one.key]
    if bulk:
        [(kind, pairs)] = watcher.calls
        assert kind == "many" and [(o.key, n.node_name) for o, n in pairs] == [(one.key, "a")]
    else:
        assert watcher.calls == [("update", one.key, "a")]


def test_modelled_client_does_not_offer_bulk_binds() -> None:
    server = SimApiServer(WallClock(), lifecycle=False)
    assert SchedulerClient(server, lambda: 0.0).bulk_binds
    assert not SchedulerClient(server, lambda: 0.0, modelled=True).bulk_binds


class _BindsOneByOne:
    """A client that says its binds complete at once but has no ``bind_many``: not a
    :class:`BulkBinds`, so the bulk commit stays off."""

    bulk_binds = True

    def __init__(self, client: SchedulerClient) -> None:
        self.client = client

    def bind(self, pod: api.Pod, node_name: str) -> None:
        self.client.bind(pod, node_name)

    def delete_pod(self, pod: api.Pod, reason: str) -> None:
        self.client.delete_pod(pod, reason)


def test_the_bulk_commit_takes_only_a_bulk_binds_client_whose_binds_complete_at_once() -> None:
    w = World([_node("a")], round_size=1)
    try:
        bulk = w.parallel.binder.bulk
        assert isinstance(w.client, BulkBinds) and bulk.enabled()
        w.sched.api = _OneByOne(w.api, lambda: w.now)  # a BulkBinds, binds not at once
        assert isinstance(w.sched.api, BulkBinds) and not bulk.enabled()
        w.sched.api = _BindsOneByOne(w.client)
        assert not isinstance(w.sched.api, BulkBinds) and not bulk.enabled()
        w.sched.api = None
        assert not bulk.enabled()
        w.sched.api = w.client
        assert bulk.enabled()
    finally:
        w.close()


def test_one_shards_proposals_on_one_node_all_take_the_fast_path() -> None:
    w = World([_node("a", cpu="4"), _node("b", cpu="4")], round_size=4)
    try:
        pods = [make_pod(f"p{i}", "ns").req(cpu="1").obj() for i in range(6)]
        [(shard, mine), (_, theirs)] = sorted(_handed(w, *pods).items())
        assert len(mine) == 3
        versions = {n: w.generation(n) for n in ("a", "b")}
        binder = w.parallel.binder
        binder.process(shard, [p.Propose(q.key, "a", versions["a"], (), True, "") for q in mine])
        assert w.placements() == {q.key: "a" for q in mine}
        # each was decided with its predecessors assumed on ``a``: no full check needed
        assert binder.stats.committed == {"fast": 3}
        # the other shard decided on the same version of ``a`` without them: full check,
        # which finds one CPU left, so one more fits and the next goes to its alternative
        alt = (("b", versions["b"]),)
        binder.process(
            1 - shard, [p.Propose(q.key, "a", versions["a"], alt, True, "") for q in theirs]
        )
        assert binder.stats.committed == {"fast": 3, "full": 1, "alternative": 2}
        assert sorted(w.placements().values()) == ["a"] * 4 + ["b"] * 2
        w.check(pods)
    finally:
        w.close()


def test_own_commit_chain_does_not_cover_other_shards_or_older_versions() -> None:
    w = World([_node("a", cpu="4"), _node("b", cpu="4")], round_size=1)
    try:
        first = make_pod("first", "ns").req(cpu="1").obj()
        [s1] = _handed(w, first)
        v0 = w.generation("a")
        binder = w.parallel.binder
        binder.process(s1, [p.Propose(first.key, "a", v0, (), True, "")])
        row = w.sched.cluster.nodes.row_of["a"]
        assert binder.fast.unchanged(s1, row, v0)  # only s1's own commit changed ``a``
        assert not binder.fast.unchanged(s1, row, v0 - 1)  # older than the chain's base
        assert not binder.fast.unchanged(1 - s1, row, v0)  # the other shard never saw it
        w.api.delete_pod(w.api.pods[first.key], grace=0)
        assert not binder.fast.unchanged(s1, row, v0)  # a change that was not s1's commit
    finally:
        w.close()


class _OneByOne(SchedulerClient):
    @property
    def bulk_binds(self) -> bool:
        return False


def _placements(bulk: bool) -> tuple[dict[str, str], dict[str, int]]:
    nodes = [_node(f"n{i}", cpu="2") for i in range(6)]
    w = World(nodes, round_size=4, seed=3)
    if not bulk:
        w.client = _OneByOne(w.api, lambda: w.now)
        w.sched.api = w.client
        w.sched.handle.api = w.client
        w.sched.submit_binding = w.client.submit_binding
    try:
        pods = [make_pod(f"p{i:02d}", "ns").req(cpu="500m").obj() for i in range(30)]
        w.add(pods)
        w.run(max_steps=1000)
        w.check(pods)
        return w.placements(), dict(w.parallel.binder.stats.committed)
    finally:
        w.close()


def test_bulk_and_one_by_one_commits_place_alike() -> None:
    bulk, stats = _placements(True)
    one_by_one, _ = _placements(False)
    assert len(bulk) == 24  # 6 nodes x 2 CPU of 500m Pods
    assert bulk == one_by_one
    assert stats.get("fast", 0) > 0


def test_stream_is_pickled_once_and_pods_keep_their_status_only() -> None:
    shared = {"metadata": {"name": "t"}, "spec": {"containers": []}, "status": {"phase": "x"}}
    one, two = make_pod("one").obj(), make_pod("two").obj()
    one.raw = two.raw = shared
    sent_one, sent_two = p.strip(one), p.strip(two)
    assert one.raw is shared  # the original is never touched
    assert sent_one.raw == {"status": {"phase": "x"}} or sent_one is one
    assert sent_two is two or sent_two.raw == {"status": {"phase": "x"}}
    entries: list[p.Entry] = [
        p.Bound(one.key, "a", 3, 0, sent_one),
        p.Bound(two.key, "a", 4, 0, sent_two),
    ]
    back = p.decode_stream(p.encode_stream(entries))
    assert [
        (e.key, e.gen, p.as_pod(e.pod).name) for e in back if isinstance(e, p.Bound) and e.pod
    ] == [
        (one.key, 3, "one"),
        (two.key, 4, "two"),
    ]
    assert p.decode_stream(p.encode_stream([])) == []
    assert p.as_pod(p.pack(one)).name == "one"


def test_a_refused_bulk_bind_makes_the_proposing_shard_forget_its_copy() -> None:
    """A bind ``bind_many`` refused leaves the Pod pending: its proposer must drop the
    assumed copy in its replica, or it would count the Pod on that node for ever and drop
    the Pod unanswered when it is handed out again."""
    w = World([_node("a", cpu="4"), _node("b", cpu="4")], round_size=4)
    refused: list[str] = []
    bind_many = w.client.bind_many

    def flaky(pairs: list[tuple[api.Pod, str]]) -> list[ApiError | None]:
        first = [(pod, node) for pod, node in pairs if pod.name == "flaky" and not refused]
        if not first:
            return bind_many(pairs)
        refused.append(first[0][0].key)
        rest = iter(bind_many([(pod, node) for pod, node in pairs if pod.name != "flaky"]))
        gone = ApiError(409, "refused")
        return [gone if pod.name == "flaky" else next(rest) for pod, _ in pairs]

    w.client.bind_many = flaky  # type: ignore[method-assign]
    try:
        pods = [make_pod(n, "ns").req(cpu="1").obj() for n in ("flaky", "other")]
        w.add(pods)
        w.run()
        assert sorted(w.placements()) == ["ns/flaky", "ns/other"]
        assert refused == ["ns/flaky"] and w.parallel.binder.stats.committed["fast"] >= 2
        w.check(pods)
        w.sync_shards()
        for handle in w.parallel.handles:
            shard = handle.shard  # type: ignore[attr-defined]
            assert not [k for k, r in shard.cluster.pods.items() if r.assumed]
            assert {k: r.node for k, r in shard.cluster.pods.items()} == w.placements()
    finally:
        w.close()


def _spread(name: str) -> api.Pod:
    return spread_pod(name, "500m")


def _spread_placements(bulk: bool) -> tuple[dict[str, str], dict[str, int], int]:
    """Spread Pods (every proposal needs the full check) on 6 nodes in 2 zones: the
    placements, the binder's commits by path, and how many Pods ``bind_many`` bound."""
    nodes = [
        make_node(f"n{i}").cap(cpu="2", memory="8Gi", pods=10).labels(**{ZONE: f"z{i % 2}"})
        for i in range(6)
    ]
    w = World([n.obj() for n in nodes], round_size=4, seed=5)
    if not bulk:
        w.client = _OneByOne(w.api, lambda: w.now)
        w.sched.api = w.client
        w.sched.handle.api = w.client
        w.sched.submit_binding = w.client.submit_binding
    in_bulk: list[str] = []
    bind_many = w.client.bind_many

    def counted(pairs: list[tuple[api.Pod, str]]) -> list[ApiError | None]:
        in_bulk.extend(pod.key for pod, _ in pairs)
        return bind_many(pairs)

    w.client.bind_many = counted  # type: ignore[method-assign]
    try:
        pods = [_spread(f"p{i:02d}") for i in range(30)]
        w.add(pods)
        w.run(max_steps=2000)
        w.check(pods)
        placed = w.placements()
        zones = Counter(w.api.nodes[n].labels[ZONE] for n in placed.values())
        assert abs(zones["z0"] - zones["z1"]) <= 1, zones
        return placed, dict(w.parallel.binder.stats.committed), len(in_bulk)
    finally:
        w.close()


def test_full_checked_commits_are_bound_in_bulk_and_place_as_one_by_one() -> None:
    """A proposal that passes the full check joins the reply's bulk run, assumed in the
    cache at once so the next check (and the kept PreFilter's spread counts) sees it."""
    bulk, stats, in_bulk = _spread_placements(True)
    one_by_one, stats_one, none = _spread_placements(False)
    assert len(bulk) == 24  # 6 nodes x 2 CPU of 500m Pods, spread evenly
    assert bulk == one_by_one and stats == stats_one
    assert "fast" not in stats and stats["full"] > 0
    assert in_bulk == len(bulk) and none == 0
