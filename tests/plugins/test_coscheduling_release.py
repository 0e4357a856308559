"""Coscheduling's Unreserve releases the waiting siblings, in a running scheduler.

A second, independent guard of the rule tests/plugins/test_coscheduling.py checks on the
plugin alone (``test_unreserve_rejects_siblings``): here a gang of three goes through the
serial scheduler and through the parallel binder; two members wait at Permit when the
third's Reserve fails (the recording plugin of tests/recorder.py refuses it once), and the
scheduler's Unreserve must reach Coscheduling, which rejects the two waiting members: they
are unreserved, forgotten and requeued with upstream's message, so no member of an
incomplete gang keeps its resources; the gang is then placed whole on a later attempt.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesched.api import objects as api
from kubesched.plugins.coscheduling.plugin import UNRESERVE_REJECT
from kubesched.testing import make_node, make_pod
from tests import recorder as r
from tests.parallel.harness import GANG_CONFIG, World, pod_group

GROUP = "scheduling.x-k8s.io/pod-group"


def _config() -> dict[str, Any]:
    cfg = copy.deepcopy(GANG_CONFIG)
    cfg["profiles"][0]["plugins"]["multiPoint"]["enabled"].append({"name": r.NAME})
    return cfg


def _member(name: str, **labels: str) -> api.Pod:
    return make_pod(name, "ns").req(cpu="1").labels(**{GROUP: "g", **labels}).obj()


def _recorders(w: World) -> list[tuple[r.Recorder, Any]]:
    """Each scheduler's recorder with that scheduler: the serial one or the coordinator
    first, then the shards (their recorders told they are shards)."""
    out = [(w.sched.profiles["default-scheduler"].instances[r.NAME], w.sched)]
    if w.shards > 1:
        for handle in w.parallel.handles:
            shard = handle.shard  # type: ignore[attr-defined]
            rec = shard.profiles["default-scheduler"].instances[r.NAME]
            rec.role = "shard"
            out.append((rec, shard))
    return out  # type: ignore[return-value]


@pytest.mark.parametrize(("shards", "at"), [(1, "binder"), (2, "shard")], ids=["serial", "sharded"])
def test_a_member_failing_reserve_releases_its_waiting_siblings(shards: int, at: str) -> None:
    """``at``: where m2's Reserve fails once -- where the members are scheduled in order
    (the serial scheduler; a shard, which then reports the three failures to the
    coordinator)."""
    nodes = [make_node(f"n{i}").cap(cpu="2", memory="8Gi", pods=10).obj() for i in range(2)]
    w = World(
        nodes,
        shards=shards,
        config=_config(),
        registry={r.NAME: r.new},
        objects=[pod_group("g", "ns", 3)],
    )
    members = [_member("m0"), _member("m1"), _member("m2", **{r.FAIL: "reserve", r.AT: at})]
    recorders = _recorders(w)
    try:
        w.add(members)
        for _ in range(500):
            if any(rec.failed["reserve"] for rec, _ in recorders):
                break
            w.step()
        [(rec, where)] = [(rec, s) for rec, s in recorders if rec.failed["reserve"]]
        assert rec.failed["reserve"] == 1
        # m0 and m1 were waiting at Permit when m2 failed: all three reserved in that order
        firsts = [key for point, key in rec.log if point == "reserve"][:3]
        assert firsts == ["ns/m0", "ns/m1", "ns/m2"]
        siblings = ("ns/m0", "ns/m1")
        for _ in range(50):  # a shard's answer reaches the coordinator a step or two later
            if all(k in w.sched.failures for k in siblings):
                break
            w.step()
        for sibling in siblings:
            assert ("unreserve", sibling) in rec.log
            assert where.handle.get_waiting_pod(sibling) is None
            assert sibling not in where.cluster.pods  # forgotten: its CPU is free again
            assert sibling not in w.sched.cluster.pods
            # upstream WaitOnPermit reports the rejection as a FitError over the one node
            message = f"0/1 nodes are available: 1 {UNRESERVE_REJECT}."
            assert w.sched.failures[sibling] == ("Unschedulable", message)
        assert not w.placements()
        w.run()
        assert sorted(w.placements()) == ["ns/m0", "ns/m1", "ns/m2"]  # whole, later
        w.check(members)
        w.check_gangs({"ns/g": 3})
        for each, _ in recorders:
            r.check_reserve_pairing(each)
    finally:
        w.close()
