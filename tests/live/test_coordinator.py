"""The coordinator's decisions step by step, without a server: hand-outs balance over live
shards, the first proposal for the last slot wins and the second is refused and handed out
again, answers to old hand-outs are ignored, a gang is refused whole, a lost shard's Pods
go back to the queue."""

from __future__ import annotations

import copy
from typing import Any

from kubesched import testing
from kubesched.api import objects as api
from kubesched.api.parse import parse_node, parse_pod
from kubesched.framework.interface import CycleState
from kubesched.live import sharding as sh
from kubesched.live.client import ApiError
from kubesched.live.coordinator import CoordinatorScheduler
from tests.live.conftest import make_config, node, pod


class FakeClient:
    """Records annotation patches; answers them like the API server would."""

    def __init__(self) -> None:
        self.patches: list[tuple[str, dict[str, Any]]] = []

    def request(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        assert method == "PATCH"
        self.patches.append((path.rsplit("/", 1)[1], kw["body"]["metadata"]["annotations"]))
        return {}


class FakeApi(testing.FakeApi):
    """The kit's fake with the rest of the LiveApi surface the coordinator uses: a refused
    bind is the API server's 409 Conflict, kept for ``take_bind_error``."""

    def __init__(self) -> None:
        super().__init__()
        self.bind_errors = 0
        self.last_bind_error: ApiError | None = None

    def bind_failure(self, pod: api.Pod, node_name: str) -> Exception:
        self.bind_errors += 1
        self.last_bind_error = ApiError(409, "pod is already assigned", "Conflict")
        return self.last_bind_error

    def take_bind_error(self) -> Exception | None:
        err, self.last_bind_error = self.last_bind_error, None
        return err


def lease(i: int) -> dict[str, Any]:
    spec = {"holderIdentity": f"shard-{i}", "leaseDurationSeconds": 2, "renewTime": "x"}
    return {"metadata": {"name": sh.lease_name(i)}, "spec": spec}


class World:
    def __init__(self, shards: int = 2) -> None:
        self.clock = testing.VirtualClock(100.0)
        self.client = FakeClient()
        self.api = FakeApi()
        self.membership = sh.Membership(shards, clock=self.clock)
        for i in range(shards):
            self.membership.observe(lease(i))
        self.c = CoordinatorScheduler(
            make_config(),
            clock=self.clock,
            api_client=self.api,  # type: ignore[arg-type]
            client=self.client,  # type: ignore[arg-type]
            shards=shards,
            membership=self.membership,
        )
        self.pods: dict[str, api.Pod] = {}

    def add_node(self, name: str, cpu: str) -> None:
        self.c.on_node_add(parse_node(node(name, cpu=cpu)))

    def add_pod(self, name: str, cpu: str = "1", **labels: str) -> None:
        obj = pod(name, cpu=cpu)
        obj["metadata"].update(uid=f"uid-{name}", resourceVersion="1", labels=labels)
        self.pods[name] = parse_pod(obj)
        self.c.on_pod_add(self.pods[name])

    def annotate(self, name: str, **marks: str) -> None:
        old = self.pods[name]
        raw = copy.deepcopy(old.raw)
        meta = raw["metadata"]
        meta["annotations"] = {**(meta.get("annotations") or {}), **marks}
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
        self.pods[name] = parse_pod(raw)
        self.c.on_pod_update(old, self.pods[name])

    def propose(self, name: str, node_name: str, alternatives: tuple[str, ...] = ()) -> None:
        f = self.c.flights[f"default/{name}"]
        prop = sh.Proposal(
            f.shard, f.attempt, node=node_name, alternatives=tuple((a, "") for a in alternatives)
        )
        self.annotate(name, **{sh.PROPOSAL: prop.encode()})

    def handed(self) -> dict[str, tuple[str, str]]:
        """Pod name -> (shard, attempt) of the last hand-out patch."""
        out = {}
        for name, marks in self.client.patches:
            if marks.get(sh.SHARD):
                out[name] = (marks[sh.SHARD], marks[sh.ATTEMPT])
        return out


def test_hand_outs_balance_and_the_first_proposal_for_the_last_slot_wins() -> None:
    w = World()
    w.add_node("n1", cpu="1")
    w.add_pod("a")
    w.add_pod("b")
    assert w.c.step()
    assert w.handed() == {"a": ("0", "1"), "b": ("1", "1")}  # one each
    w.propose("b", "n1")
    w.propose("a", "n1")
    w.c.step()
    assert w.api.bound == [("default/b", "n1")]  # whichever the coordinator decides first
    refusal = [m for n, m in w.client.patches if n == "a" and sh.REFUSED in m]
    assert refusal == [{sh.SHARD: None, sh.PROPOSAL: None, sh.REFUSED: "resources"}]
    assert w.handed()["a"][1] == "2"  # handed out again as a new attempt
    assert w.c.stats["refused:resources"] == 1 and w.c.stats["committed"] == 1


def test_an_alternative_is_committed_when_the_proposed_node_is_full() -> None:
    w = World()
    w.add_node("n1", cpu="1")
    w.add_node("n2", cpu="1")
    w.add_pod("a")
    w.add_pod("b")
    w.c.step()
    w.propose("a", "n1")
    w.propose("b", "n1", alternatives=("n2",))
    w.c.step()
    assert sorted(w.api.bound) == [("default/a", "n1"), ("default/b", "n2")]
    assert w.c.stats["alternative"] == 1


def test_answers_to_an_old_hand_out_are_ignored() -> None:
    w = World()
    w.add_node("n1", cpu="4")
    w.add_pod("a")
    w.c.step()
    stale = sh.Proposal(0, 7, node="n1")  # not the current attempt
    w.annotate("a", **{sh.PROPOSAL: stale.encode()})
    assert not w.c.step() and w.api.bound == []
    assert w.c.stats["stale_proposal"] == 1


def test_a_gang_is_refused_whole_when_one_member_no_longer_fits() -> None:
    w = World()
    w.add_node("n1", cpu="1")
    group = {"scheduling.x-k8s.io/pod-group": "g"}
    w.add_pod("g0", **group)
    w.add_pod("g1", **group)
    w.c.step()
    shards = {w.c.flights[f"default/{n}"].shard for n in ("g0", "g1")}
    assert len(shards) == 1  # the gang went to one shard
    w.propose("g0", "n1")
    w.c.step()
    assert w.api.bound == []  # waits for every member's answer
    w.propose("g1", "n1")
    w.c.step()
    assert w.api.bound == []
    assert w.c.stats["refused:gang_resources"] == 2
    assert w.c.cluster.pods == {}  # the tentative holds were released


def test_a_gang_member_reported_unschedulable_fails_alone_as_the_binder_decides() -> None:
    """A member a shard reports as fitting nowhere fails on its own; its siblings' proposals
    are decided together and committed (the binder's rule, ``gangs.commit_unit``; the
    in-process form: ``tests/parallel/test_binder.py``) -- not refused for it."""
    w = World()
    w.add_node("n1", cpu="4")
    group = {"scheduling.x-k8s.io/pod-group": "g"}
    w.add_pod("g0", **group)
    w.add_pod("g1", **group)
    w.c.step()
    w.propose("g0", "n1")
    f = w.c.flights["default/g1"]
    failed = sh.Proposal(
        f.shard, f.attempt, failed="Unschedulable", message="0/1 nodes", plugins=("NodeAffinity",)
    )
    w.annotate("g1", **{sh.PROPOSAL: failed.encode()})
    w.c.step()
    assert w.api.bound == [("default/g0", "n1")]
    assert w.c.stats["failed"] == 1 and w.c.stats["committed"] == 1
    assert not [k for k in w.c.stats if k.startswith("refused:")]


def test_a_lost_shard_s_pods_go_back_to_the_queue() -> None:
    w = World()
    w.add_node("n1", cpu="4")
    w.add_pod("a")
    w.add_pod("b")
    w.c.step()
    w.clock.now += 1.0
    w.membership.observe({**lease(0), "spec": {**lease(0)["spec"], "renewTime": "y"}})
    w.clock.now += 1.5  # shard 1's Lease is 2.5 s old: expired; shard 0 renewed 1.5 s ago
    assert w.membership.live() == [0]
    w.c.step()
    assert w.c.stats["requeued:shard_lost"] == 1
    assert w.handed() == {"a": ("0", "1"), "b": ("0", "2")}  # b handed to the survivor
    assert w.c.load == [2, 0]


def test_a_409_on_bind_counts_as_a_conflict_and_the_pod_is_handed_out_again() -> None:
    w = World()
    w.add_node("n1", cpu="4")
    w.add_pod("a")
    w.c.step()
    w.api.refuse.add("default/a")
    w.propose("a", "n1")
    w.c.step()
    assert w.api.bound == [] and w.c.stats["refused:bind_conflict"] == 1
    assert w.c.cluster.pods == {}  # forgotten
    assert w.c.queue.queue_of("default/a") == "backoff"
    w.api.refuse.clear()
    for step in (1.5, 1.0):  # past the backoff, the shards renewing their Leases
        w.clock.now += step
        for i in range(2):
            w.membership.observe({**lease(i), "spec": {**lease(i)["spec"], "renewTime": step}})
    w.c.queue.flush_backoff_completed()
    w.c.step()
    assert w.handed()["a"][1] == "2"  # handed out again as a new attempt
    w.propose("a", "n1")
    w.c.step()
    assert w.api.bound == [("default/a", "n1")]


def test_a_409_after_a_wait_at_permit_counts_as_a_conflict_too() -> None:
    """A Pod held at Permit binds, once allowed, through the same binding cycle as one that
    did not wait (``_submit``): its 409 is a conflict as well."""
    w = World()
    w.add_node("n1", cpu="4")
    w.add_pod("a")
    w.c.step()
    qp = w.c.flights["default/a"].qp
    fwk = w.c.profiles[qp.pod.scheduler_name]
    assumed = qp.pod.bound_to("n1")
    w.c.cluster.assume_pod(assumed, "n1")
    w.c.in_flight_bindings += 1
    w.api.refuse.add("default/a")
    # what an allowed wait runs:
    w.c.committer.submit(fwk, CycleState(), qp, assumed, w.clock.now, 1)
    assert w.api.bound == [] and w.c.stats["refused:bind_conflict"] == 1
    assert w.c.cluster.pods == {}  # forgotten
