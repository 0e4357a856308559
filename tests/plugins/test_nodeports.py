"""NodePorts: upstream ``node_ports_test.go`` tables as data."""

from __future__ import annotations

import pytest

from kubesched.api import objects as api
from kubesched.config.featuregates import FeatureGates
from kubesched.framework.interface import ActionType, Code, CycleState, Handle, QueueingHint
from kubesched.plugins import nodeports as np_
from kubesched.testing import make_cluster, make_node, make_pod

Q, S = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def ports_pod(name: str, *specs: str, node: str = "") -> api.Pod:
    """``specs`` like ``"UDP/127.0.0.1/8080"`` (protocol/hostIP/hostPort), as upstream's newPod."""
    b = make_pod(name)
    for spec in specs:
        proto, ip, port = spec.split("/")
        b = b.host_port(int(port), proto, ip)
    if node:
        b = b.node(node)
    return b.obj()


def plugin() -> np_.NodePorts:
    return np_.new(None, Handle(make_cluster([])))


# name, wanted ports, ports used on the node, want fails
FILTER_CASES = [
    ("other port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/9090"], False),
    ("same udp port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], True),
    ("same tcp port", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], True),
    ("different host ip", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.2/8080"], False),
    ("different protocol", ["UDP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], False),
    (
        "second udp port conflict",
        ["UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"],
        ["UDP/127.0.0.1/8080"],
        True,
    ),
    (
        "first tcp port conflict",
        ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"],
        ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"],
        True,
    ),
    ("conflict due to wanted 0.0.0.0", ["TCP/0.0.0.0/8001"], ["TCP/127.0.0.1/8001"], True),
    (
        "TCP conflict due to 0.0.0.0 among wanted",
        ["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"],
        ["TCP/127.0.0.1/8001"],
        True,
    ),
    ("conflict with used 0.0.0.0", ["TCP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], True),
    ("second different protocol", ["UDP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], False),
    (
        "UDP conflict due to used 0.0.0.0",
        ["UDP/127.0.0.1/8001"],
        ["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"],
        True,
    ),
    ("empty ip and protocol mean 0.0.0.0/TCP", ["//8001"], ["TCP/127.0.0.1/8001"], True),
    ("empty protocol is TCP", ["/127.0.0.1/8001"], ["UDP/127.0.0.1/8001"], False),
]


@pytest.mark.parametrize(
    ("wanted", "used", "fails"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES]
)
def test_filter(wanted: list[str], used: list[str], fails: bool) -> None:
    cluster = make_cluster(
        [make_node("m1").obj(), make_node("m2").obj()], [ports_pod("p1", *used, node="m1")]
    )
    p, state, the_pod = plugin(), CycleState(), ports_pod("p", *wanted)
    result, status = p.pre_filter(state, the_pod, cluster)
    assert result is None and status.is_success()
    verdict = p.filter(state, the_pod, cluster, cluster.nodes.order())
    assert verdict.codes[1] == 0  # m2 has nothing in use
    if fails:
        status = verdict.table[int(verdict.codes[0])]
        assert status.code == Code.UNSCHEDULABLE
        assert status.reasons == (np_.ERR_REASON,)
    else:
        assert verdict.codes[0] == 0
    assert (
        np_.fits_ports(np_.host_ports(the_pod), np_.host_ports(cluster.pods["default/p1"].pod))
        != fails
    )


def test_pre_filter_skips_pods_without_host_ports() -> None:
    cluster = make_cluster([make_node("m1").obj()])
    result, status = plugin().pre_filter(CycleState(), make_pod("p").obj(), cluster)
    assert result is None and status.code == Code.SKIP


def test_filter_without_pre_filter_is_an_error() -> None:
    cluster = make_cluster([make_node("m1").obj()])
    verdict = plugin().filter(CycleState(), make_pod("p").obj(), cluster, cluster.nodes.order())
    assert verdict.table[int(verdict.codes[0])].code == Code.ERROR


def test_port_freed_after_pod_removed() -> None:
    holder = ports_pod("holder", "TCP/0.0.0.0/80", node="m1")
    cluster = make_cluster([make_node("m1").obj()], [holder])
    p, the_pod = plugin(), ports_pod("p", "TCP/10.0.0.1/80")
    state = CycleState()
    p.pre_filter(state, the_pod, cluster)
    assert p.filter(state, the_pod, cluster, cluster.nodes.order()).codes.tolist() == [1]
    cluster.remove_pod(holder.key)  # column stays, count drops to 0
    assert p.filter(state, the_pod, cluster, cluster.nodes.order()).codes.tolist() == [0]


# name, fits expectation, wanted, used (upstream TestFits)
FITS_CASES = [
    ("non-conflicting ports", True, ["TCP/127.0.0.1/80"], ["TCP/127.0.0.1/9090"]),
    (
        "multiple non-conflicting ports",
        True,
        ["TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"],
        ["TCP/127.0.0.1/9090", "TCP/127.0.0.1/9191", "TCP/127.0.1.1/8080"],
    ),
    ("same ports on different protocols", True, ["TCP/127.0.0.1/80"], ["UDP/127.0.0.1/80"]),
    ("conflicting ports", False, ["TCP/127.0.0.1/80"], ["TCP/127.0.0.1/80"]),
    (
        "multiple ports, some conflicting",
        False,
        ["TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"],
        ["TCP/127.0.0.1/9090", "TCP/127.0.1.1/90", "TCP/127.0.1.1/8080"],
    ),
]


@pytest.mark.parametrize(
    ("fits", "wanted", "used"), [c[1:] for c in FITS_CASES], ids=[c[0] for c in FITS_CASES]
)
def test_fits_ports(fits: bool, wanted: list[str], used: list[str]) -> None:
    want_ports = np_.host_ports(ports_pod("p", *wanted))
    used_ports = np_.host_ports(ports_pod("q", *used))
    assert np_.fits_ports(want_ports, used_ports) == fits
    cluster = make_cluster([make_node("m1").obj()], [ports_pod("q", *used, node="m1")])
    mask = np_.conflict_mask(want_ports, cluster, cluster.nodes.order())
    assert mask.tolist() == [not fits]


TARGET = ports_pod("target", "TCP/0.0.0.0/8080")
HINT_CASES = [
    ("backoff-wrong-old-object", "not-a-pod", Q),
    ("skip-queue-on-unscheduled", make_pod("x").obj(), S),
    ("skip-queue-on-non-hostport", make_pod("x").node("fake-node").obj(), S),
    ("skip-queue-on-unrelated-hostport", ports_pod("x", "TCP/0.0.0.0/8081", node="fake-node"), S),
    ("queue-on-released-hostport", ports_pod("x", "TCP/0.0.0.0/8080", node="fake-node"), Q),
]


@pytest.mark.parametrize(
    ("old", "want"), [c[1:] for c in HINT_CASES], ids=[c[0] for c in HINT_CASES]
)
def test_hint_pod_deleted(old: object, want: QueueingHint) -> None:
    assert np_.is_schedulable_after_pod_deleted(TARGET, old, None) == want


@pytest.mark.parametrize(("version", "pods"), [("1.36", "Pod"), ("1.37", "AssignedPod")])
def test_events_to_register(version: str, pods: str) -> None:
    """v1.37 registers ``AssignedPod/Delete`` (a pending Pod's delete frees no port)."""
    handle = Handle(make_cluster([]), feature_gates=FeatureGates(version))
    events = np_.new(None, handle).events_to_register()
    assert [(e.event.resource, e.event.action, e.hint is None) for e in events] == [
        (pods, ActionType.DELETE, False),
        ("Node", ActionType.ADD, True),
    ]
