"""Live mode's first LIST in bulk: an informer with ``batch_lists`` hands a list into an empty
store on as one delta, and the dispatcher loads it (quick parse, bound Pods in one bulk
load) into the same cache and queue as the one-object deltas would."""

from __future__ import annotations

import copy
import gc
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kubesched.live.client import connect
from kubesched.live.dispatch import Dispatcher
from kubesched.live.informer import ADDED, DELETED, Delta, Informer, Kind, object_key
from kubesched.scheduler import Scheduler
from tests.coldstart_gen import snapshot
from tests.live.conftest import FAST, Api, Replica, make_config, node, pod, wait_for
from tests.live.fakestore import by_plural


def _loaded(items: list[dict[str, Any]], listed: bool) -> Dispatcher:
    d = Dispatcher(Scheduler(make_config(leader=False), clock=time.monotonic))
    for obj in items:
        if obj["kind"] == "Node":
            d.apply(Delta("Node", ADDED, None, obj))
    pods = [copy.deepcopy(o) for o in items if o["kind"] == "Pod"]
    for obj in pods:
        if not obj["spec"].get("nodeName"):
            obj["spec"]["schedulerName"] = "kubesched"  # ours: queued
    if listed:
        d.apply_listed(Delta("Pod", ADDED, None, {}, tuple(pods)))
    else:
        for obj in pods:
            d.apply(Delta("Pod", ADDED, None, obj))
    return d


@pytest.mark.parametrize("seed", range(8))
def test_a_listed_batch_loads_like_its_deltas(seed: int) -> None:
    items = snapshot(seed, n_pods=80)["items"]
    one, bulk = _loaded(items, False), _loaded(items, True)
    assert one.pods == bulk.pods and one.skipped == bulk.skipped
    a, b = one.scheduler.cluster, bulk.scheduler.cluster
    assert a.pods.keys() == b.pods.keys() and a.version == b.version
    for name in ("requested", "nonzero_requested", "pod_count", "generation"):
        np.testing.assert_array_equal(getattr(a.nodes, name), getattr(b.nodes, name))
    assert [r.sparse for r in a.pods.values()] == [r.sparse for r in b.pods.values()]
    qa, qb = one.scheduler.queue, bulk.scheduler.queue
    assert qa.pending_pods() == qb.pending_pods() and qa.pending_pods()["active"] > 0
    assert sorted(p.pod.key for p in qa.pending_pod_infos()) == sorted(
        p.pod.key for p in qb.pending_pod_infos()
    )
    assert _popped(one) == _popped(bulk)  # in the same order


def _popped(d: Dispatcher) -> list[str]:
    out = []
    while (qp := d.scheduler.queue.pop()) is not None:
        out.append(qp.pod.key)
    return out


def test_pods_already_known_go_one_by_one() -> None:
    items = snapshot(3, n_pods=20)["items"]
    d = _loaded(items, True)
    pods = tuple(o for o in items if o["kind"] == "Pod")
    before = dict(d.pods)
    d.apply_listed(Delta("Pod", ADDED, None, {}, pods))  # the same again: deltas, no error
    assert d.pods.keys() == before.keys()


@pytest.fixture
def batching(api: Api, kubeconfig: Path) -> Any:
    client = connect(kubeconfig=str(kubeconfig), qps=0, burst=1)
    deltas: list[Delta] = []
    stop = threading.Event()
    kind = Kind("Pod", "v1", "/api/v1/pods")
    inf = Informer(client, kind, deltas.append, stop, replace(FAST, page_size=2), batch_lists=True)
    thread = threading.Thread(target=inf.run, daemon=True)
    yield inf, deltas, thread
    stop.set()
    deadline = time.monotonic() + 15
    while thread.is_alive() and time.monotonic() < deadline:
        client.abort()
        thread.join(0.2)
    client.close()


def test_the_first_list_is_one_delta_later_ones_are_differences(api: Api, batching: Any) -> None:
    inf, deltas, thread = batching
    for name in ("a", "b", "c"):
        api.create(pod(name))
    thread.start()
    wait_for(inf.synced.is_set)
    (first,) = deltas
    assert (first.type, first.new) == (ADDED, {})
    assert [object_key(o) for o in first.listed] == ["default/a", "default/b", "default/c"]
    assert [d.new["kind"] for d in first.split()] == ["Pod"] * 3
    wait_for(lambda: api.store.stats.requests["GET pods"] >= 2)  # the pages, then the watch
    with api.store.outage():
        api.store.delete(by_plural("pods"), "default", "b")
    wait_for(lambda: inf.lists == 2)
    wait_for(lambda: len(deltas) == 2)
    assert (deltas[1].type, object_key(deltas[1].new), deltas[1].listed) == (
        DELETED,
        "default/b",
        (),
    )


def test_a_list_that_fails_midway_starts_over_and_delivers_each_object_once(
    api: Api, batching: Any
) -> None:
    inf, deltas, thread = batching
    api.server.watch_cache = False  # pages of 2 even at resourceVersion=0
    for name in ("a", "b", "c", "d", "e"):
        api.create(pod(name))
    api.server.fail(r"GET /api/v1/pods\?limit=2&continue=", 500)  # the second page, once
    thread.start()
    wait_for(inf.synced.is_set)
    (first,) = deltas
    assert [object_key(o) for o in first.listed] == [f"default/{n}" for n in "abcde"]
    assert [f.times for f in api.server.faults] == [0]  # the second page failed once
    # page 1, then 3 pages from the start (the injected 500 is answered before counting;
    # the watch that follows may or may not be counted yet)
    assert api.store.stats.requests["GET pods"] >= 1 + 3


def test_the_collector_stays_paused_until_every_first_list_is_applied(
    api: Api, replicas: Callable[..., Replica]
) -> None:
    api.create(node("n1"))
    api.create(pod("p"))
    api.server.delay(r"GET /api/v1/pods\?limit", 3.0)  # the Pod list is slow to come
    assert gc.isenabled()
    r = replicas("a", make_config(leader=False))
    (nodes,) = [i for i in r.live.informers if i.kind.kind == "Node"]
    wait_for(nodes.synced.is_set)  # Nodes listed (their own pause over), Pods not yet
    assert not gc.isenabled() and not r.live.synced()
    wait_for(lambda: api.node_of("p"))
    assert gc.isenabled()


def test_the_first_synced_loop_of_a_process_freezes_its_first_lists(
    api: Api, replicas: Callable[..., Replica], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small cluster's first lists (far fewer objects than ``FREEZE_AFTER``) are frozen
    once synced, so the collector does not walk them again; only the process's first loop
    freezes (a second replica of the same process leaves the collector's generations be)."""
    from kubesched.live import runner

    monkeypatch.setattr(runner, "_COLLECTOR", runner._Collector())  # a fresh process's
    api.create(node("n1"))
    api.create(pod("p"))
    gc.unfreeze()
    try:
        r = replicas("a", make_config(leader=False))
        wait_for(lambda: api.node_of("p"))
        wait_for(gc.isenabled)
        frozen = gc.get_freeze_count()
        assert frozen > 0 and r.live.synced()
        gc.unfreeze()
        b = replicas("b", make_config(leader=False))
        wait_for(lambda: b.live.synced() and not b.live._collector_paused)
        assert gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()
