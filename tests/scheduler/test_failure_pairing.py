"""Reserve ⇄ Unreserve and assume ⇄ forget on every failure path, serial and sharded.

One Pod per failure (Reserve fails, Permit rejects, Permit times out, PreBind fails, the
API server refuses the bind) plus one that never fails, in the serial scheduler and in the
parallel scheduler with two in-process shards; and a Pod deleted while it waits at Permit,
in the serial scheduler, at the parallel binder and in a shard.  The :class:`Recorder`
(tests/recorder.py) logs every Reserve, Unreserve and PostBind of every plugin instance:
each reservation must be closed exactly once, and no cache may keep an assumed Pod or
count a Pod the API server has not bound there (docs/design.md section 7).  Each failing Pod
is scheduled on a later attempt, which it could not be if its first attempt leaked.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import pytest

from kubesched.api import objects as api
from kubesched.parallel.transport import InlineShard
from kubesched.testing import make_node, make_pod
from tests import recorder as r
from tests.parallel.harness import World

FAILURES = ("reserve", "permit", "timeout", "prebind", "bind")
"""The failures every scheduler meets once per Pod (``hold`` is the deletion test's)."""


def _world(shards: int) -> tuple[World, Counter[str]]:
    nodes = [make_node(f"n{i}").cap(cpu="4", memory="8Gi", pods=10).obj() for i in range(3)]
    w = World(nodes, shards=shards, config=r.CONFIG, registry={r.NAME: r.new})
    for shard in _shard_recorders(w):
        shard.role = "shard"
    binds: Counter[str] = Counter()
    w.client.bind = r.failing_bind(w.client, binds)  # type: ignore[method-assign,assignment]
    return w, binds


def _recorder(instances: Mapping[str, object]) -> r.Recorder:
    rec = instances[r.NAME]
    assert isinstance(rec, r.Recorder)
    return rec


def _binder_recorder(w: World) -> r.Recorder:
    return _recorder(w.sched.profiles["default-scheduler"].instances)


def _shard_recorders(w: World) -> list[r.Recorder]:
    if w.shards == 1:
        return []
    out = []
    for handle in w.parallel.handles:
        assert isinstance(handle, InlineShard) and handle.shard is not None
        out.append(_recorder(handle.shard.profiles["default-scheduler"].instances))
    return out


def _pod(name: str, mode: str = "", at: str = "") -> api.Pod:
    labels = {r.FAIL: mode} if mode else {}
    if at:
        labels[r.AT] = at
    return make_pod(name).req(cpu="500m", memory="1Gi").labels(**labels).obj()


def _check_caches(w: World) -> None:
    """assume ⇄ forget in the authoritative cache and (after one more message each, so
    they have heard every bind) in every shard's replica."""
    bound = w.placements()
    r.check_assume_pairing(w.sched.cluster, bound, "scheduler")
    if w.shards == 1:
        return
    w.sync_shards()
    for i, handle in enumerate(w.parallel.handles):
        assert isinstance(handle, InlineShard) and handle.shard is not None
        r.check_assume_pairing(handle.shard.cluster, bound, f"shard {i}")


@pytest.mark.parametrize("shards", [1, 2], ids=["serial", "sharded"])
def test_every_failure_path_unreserves_and_forgets(shards: int) -> None:
    w, binds = _world(shards)
    pods = [_pod(f"fail-{mode}", mode) for mode in FAILURES] + [_pod("plain")]
    try:
        w.add(pods)
        w.run()
        assert sorted(w.placements()) == sorted(p.key for p in pods)
        w.check(pods)
        binder = _binder_recorder(w)
        for rec in (binder, *_shard_recorders(w)):
            r.check_reserve_pairing(rec)
        # the binding scheduler met each failure once, undid it, then bound the Pod
        assert binder.failed == Counter({m: 1 for m in FAILURES if m != "bind"})
        assert binds["default/fail-bind"] == 2 and binds["default/plain"] == 1
        undone = Counter(key for point, key in binder.log if point == "unreserve")
        assert undone == Counter({f"default/fail-{m}": 1 for m in FAILURES})
        if shards > 1:  # the shards met the Scheduler's failures first, on their replicas
            met: Counter[str] = sum((s.failed for s in _shard_recorders(w)), Counter())
            assert set(met) == {"reserve", "permit", "timeout", "prebind"}
        _check_caches(w)
    finally:
        w.close()


def test_serial_log_of_a_reserve_failure_is_reserve_unreserve_then_a_clean_attempt() -> None:
    w, _ = _world(1)
    w.add([_pod("p", "reserve"), _pod("q", "prebind")])
    w.run()
    log = _binder_recorder(w).log
    assert [pt for pt, key in log if key == "default/p"] == [
        "reserve",
        "unreserve",
        "reserve",
        "permit",
        "pre_bind",
        "post_bind",
    ]
    assert [pt for pt, key in log if key == "default/q"] == [
        "reserve",
        "permit",
        "pre_bind",
        "unreserve",
        "reserve",
        "permit",
        "pre_bind",
        "post_bind",
    ]


def _step_until_held(w: World, recs: list[r.Recorder], limit: int = 500) -> r.Recorder:
    """Step until one of ``recs`` holds the Pod at Permit; that one."""
    for _ in range(limit):
        for rec in recs:
            if rec.failed["hold"]:
                return rec
        w.step()
    raise AssertionError("the held Pod never reached Permit")


@pytest.mark.parametrize(
    ("shards", "at"),
    [(1, "binder"), (2, "binder"), (2, "shard")],
    ids=["serial", "sharded-binder", "sharded-shard"],
)
def test_pod_deleted_while_waiting_at_permit_is_unreserved_and_forgotten(
    shards: int, at: str
) -> None:
    w, _ = _world(shards)
    held, plain = _pod("held", "hold", at), _pod("plain")
    try:
        w.add([held, plain])
        where = [_binder_recorder(w)] if at == "binder" else _shard_recorders(w)
        rec = _step_until_held(w, where)
        # at the binder the authoritative cache holds it assumed; a shard holds it alone
        assert w.sched.cluster.is_assumed(held.key) == (at == "binder")
        w.api.delete_pod(w.api.pods[held.key])
        w.run()
        assert held.key not in w.api.pods and list(w.placements()) == [plain.key]
        assert [pt for pt, key in rec.log if key == held.key] == ["reserve", "permit", "unreserve"]
        for each in (_binder_recorder(w), *_shard_recorders(w)):
            r.check_reserve_pairing(each)
        _check_caches(w)
    finally:
        w.close()
