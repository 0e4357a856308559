"""Coscheduling: upstream core_test / coscheduling_test cases, queue order, gang release."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.admission import objects as o
from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.framework import interface as fw
from kubesched.plugins import coscheduling as cos
from kubesched.plugins.coscheduling.plugin import resource_gap
from kubesched.state.cache import ClusterState
from kubesched.testing import make_cluster, make_node, make_pod


def pg(name: str, min_member: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"minMember": min_member, **spec},
    }


def member(name: str, group: str, node: str = "", cpu: str = "0") -> api.Pod:
    b = make_pod(name, "ns").labels(**{o.POD_GROUP_LABEL: group}).req(cpu=cpu)
    return b.node(node).obj() if node else b.obj()


def plugin(
    cluster: ClusterState,
    groups: list[dict[str, Any]],
    known: list[api.Pod],
    args: object = None,
    now: list[float] | None = None,
) -> cos.Coscheduling:
    for g in groups:
        cluster.apply_object(g)
    clock = now or [0.0]
    handle = fw.Handle(cluster, clock=lambda: clock[0])
    p = cos.new(args, handle)
    for pod in known:
        p.on_pod_add(pod)
    return p


NODES_4CPU = [
    make_node("node-a").cap(cpu="4", pods=110).obj(),
    make_node("node-b").cap(cpu="4", pods=110).obj(),
]


@pytest.mark.parametrize(
    ("name", "pod", "pending", "groups", "ok"),
    [
        (
            "pod does not belong to any pg",
            make_pod("p", "ns").obj(),
            [member("p1", "pg1"), member("p2", "pg2")],
            [pg("pg1", 1), pg("pg2", 1)],
            True,
        ),
        (
            "pod belongs to a non-existent pg",
            member("p", "pg-non-existent"),
            [],
            [pg("pg1", 1)],
            True,
        ),
        (
            "pod count less than minMember",
            member("p", "pg1"),
            [member("pg2-1", "pg2")],
            [pg("pg1", 2), pg("pg2", 2)],
            False,
        ),
        (
            "pod count equal minMember",
            member("p1a", "pg1"),
            [member("p1b", "pg1"), member("p1c", "pg1")],
            [pg("pg1", 2), pg("pg2", 2)],
            True,
        ),
        (
            "cluster's resource satisfies minResource",
            member("p1a", "pg1"),
            [member("p1b", "pg1"), member("p1c", "pg1")],
            [pg("pg1", 2, minResources={"cpu": "6"})],
            True,
        ),
        (
            "cluster's resource cannot satisfy minResource",
            member("p1a", "pg1"),
            [member("p1b", "pg1"), member("p1c", "pg1")],
            [pg("pg1", 2, minResources={"cpu": "10"})],
            False,
        ),
    ],
)
def test_pre_filter(
    name: str, pod: api.Pod, pending: list[api.Pod], groups: list[dict[str, Any]], ok: bool
) -> None:
    cluster = make_cluster(NODES_4CPU)
    pl = plugin(cluster, groups, pending)
    _res, status = pl.pre_filter(fw.CycleState(), pod, cluster)
    assert status.is_success() is ok, name
    if not ok:
        assert status.code == fw.Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_pre_filter_reason_counts_siblings() -> None:
    cluster = make_cluster(NODES_4CPU)
    pl = plugin(cluster, [pg("pg1", 3)], [member("p", "pg1")])
    _r, status = pl.pre_filter(fw.CycleState(), member("p", "pg1"), cluster)
    assert status.message() == (
        "pre-filter pod p cannot find enough sibling pods, current pods number: 1, "
        "minMember of group: 3"
    )


@pytest.mark.parametrize(
    ("pod", "existing", "code"),
    [
        (make_pod("p", "ns").obj(), [], fw.Code.SUCCESS),
        (member("p", "pg-non-existent"), [], fw.Code.UNSCHEDULABLE),
        (member("p", "pg1"), [], fw.Code.WAIT),
        (member("p1a", "pg1"), [member("p1b", "pg1", node="node")], fw.Code.SUCCESS),
    ],
)
def test_permit(pod: api.Pod, existing: list[api.Pod], code: fw.Code) -> None:
    cluster = make_cluster([make_node("node").cap(cpu="4", pods=110).obj()], existing)
    pl = plugin(cluster, [pg("pg1", 2)], [*existing, pod])
    status, timeout = pl.permit(fw.CycleState(), pod, "node")
    assert status.code == code
    assert timeout == (60.0 if code == fw.Code.WAIT else 0.0)
    if code == fw.Code.UNSCHEDULABLE:
        assert status.message() == "PodGroup not found"


@pytest.mark.parametrize(
    ("existing", "need", "own", "gap"),
    [
        ([make_pod("p1", "ns").req(cpu="2").node("node-a").obj()], {"cpu": 4000}, set(), {}),
        (
            [
                make_pod("p1", "ns").req(cpu="2").node("node-a").obj(),
                make_pod("p2", "ns").req(cpu="1").node("node-b").obj(),
            ],
            {"cpu": 4000},
            set(),
            {"cpu": 1000},
        ),
        (
            [
                member("p1", "pg1", node="node-a", cpu="2"),
                make_pod("p2", "ns").req(cpu="1").node("node-b").obj(),
            ],
            {"cpu": 4000},
            {"ns/p1"},
            {},
        ),
    ],
)
def test_check_cluster_resource(
    existing: list[api.Pod], need: dict[str, int], own: set[str], gap: dict[str, int]
) -> None:
    nodes = [
        make_node("node-a").cap(cpu="3", pods=110).obj(),
        make_node("node-b").cap(cpu="3", pods=110).obj(),
    ]
    assert resource_gap(make_cluster(nodes, existing), need, own) == gap


def test_timeout_from_pod_group_then_args() -> None:
    cluster = make_cluster(NODES_4CPU)
    pl = plugin(
        cluster,
        [pg("a", 2, scheduleTimeoutSeconds=7), pg("b", 2)],
        [],
        args={"permitWaitingTimeSeconds": 30},
    )
    assert pl.permit(fw.CycleState(), member("x", "a"), "node-a")[1] == 7.0
    assert pl.permit(fw.CycleState(), member("y", "b"), "node-a")[1] == 30.0


def test_first_waiting_member_activates_its_siblings() -> None:
    cluster = make_cluster(NODES_4CPU)
    pods = [member(f"m{i}", "g") for i in range(3)]
    pl = plugin(cluster, [pg("g", 3)], pods)
    state = fw.CycleState()
    assert pl.permit(state, pods[0], "node-a")[0].code == fw.Code.WAIT
    assert set(state[fw.PODS_TO_ACTIVATE_KEY]) == {"ns/m1", "ns/m2"}


def test_quorum_allows_every_waiting_member() -> None:
    cluster = make_cluster(NODES_4CPU)
    pods = [member(f"m{i}", "g") for i in range(3)]
    pl = plugin(cluster, [pg("g", 3)], pods)
    waiting = []
    for p in pods[:2]:
        cluster.assume_pod(p.bound_to("node-a"), "node-a")
        wp = fw.WaitingPod(p, {cos.NAME: 10.0})
        pl.handle.waiting_pods.add(wp)
        waiting.append(wp)
    cluster.assume_pod(pods[2].bound_to("node-b"), "node-b")
    assert pl.permit(fw.CycleState(), pods[2], "node-b")[0].is_success()
    assert all(wp.status is not None and wp.status.is_success() for wp in waiting)


def test_sort_keeps_a_group_together() -> None:
    cluster = make_cluster(NODES_4CPU)
    now = [0.0]
    a0, b0, a1 = member("a0", "a"), member("b0", "b"), member("a1", "a")
    pl = plugin(cluster, [pg("a", 2), pg("b", 2)], [], now=now)
    infos = []
    for seq, p in enumerate((a0, b0, a1)):
        now[0] = float(seq)
        pl.on_pod_add(p)
        infos.append(fw.QueuedPodInfo(p, float(seq), initial_attempt_timestamp=float(seq), seq=seq))
    order = sorted(infos, key=pl.sort_key)
    assert [qp.pod.name for qp in order] == ["a0", "a1", "b0"]
    hi = fw.QueuedPodInfo(make_pod("urgent", "ns").priority(10).obj(), 9.0, seq=9)
    assert sorted([*infos, hi], key=pl.sort_key)[0] is hi


def test_post_filter_rejects_waiting_members_and_backs_off() -> None:
    cluster = make_cluster(NODES_4CPU)
    now = [0.0]
    pods = [member(f"m{i}", "g") for i in range(4)]
    pl = plugin(cluster, [pg("g", 4)], pods, args={"podGroupBackoffSeconds": 5}, now=now)
    wp = fw.WaitingPod(pods[0], {cos.NAME: 10.0})
    cluster.assume_pod(pods[0].bound_to("node-a"), "node-a")
    pl.handle.waiting_pods.add(wp)
    _r, status = pl.post_filter(fw.CycleState(), pods[1], cluster, None)
    assert status.message() == (
        "PodGroup ns/g gets rejected due to Pod m1 is unschedulable even after PostFilter"
    )
    assert wp.status is not None and wp.status.message() == "optimistic rejection in PostFilter"
    assert not pl.pre_filter(fw.CycleState(), pods[2], cluster)[1].is_success()
    now[0] = 5.0
    assert pl.pre_filter(fw.CycleState(), pods[2], cluster)[1].is_success()


def test_post_filter_leaves_a_nearly_complete_group_alone() -> None:
    cluster = make_cluster(NODES_4CPU)
    pods = [member(f"m{i}", "g") for i in range(10)]
    pl = plugin(cluster, [pg("g", 10)], pods)
    for p in pods[:9]:
        cluster.assume_pod(p.bound_to("node-a"), "node-a")
    _r, status = pl.post_filter(fw.CycleState(), pods[9], cluster, None)
    assert status.code == fw.Code.UNSCHEDULABLE and not status.reasons


def test_unreserve_rejects_siblings() -> None:
    cluster = make_cluster(NODES_4CPU)
    pods = [member(f"m{i}", "g") for i in range(3)]
    pl = plugin(cluster, [pg("g", 3)], pods)
    wp = fw.WaitingPod(pods[0], {cos.NAME: 10.0})
    pl.handle.waiting_pods.add(wp)
    pl.unreserve(fw.CycleState(), pods[1], "node-a")
    assert wp.status is not None and wp.status.plugin == cos.NAME


@pytest.mark.parametrize("args", [{"permitWaitingTimeSeconds": -1}, {"bogus": 1}, 3])
def test_bad_args(args: object) -> None:
    with pytest.raises(InputError):
        cos.new(args, fw.Handle(ClusterState()))
