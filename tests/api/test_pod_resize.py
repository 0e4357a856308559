"""A resizing Pod's counted requests per release: the parse keeps v1.34-v1.36's per-container
maximum as ``requests`` and v1.37's largest total as ``resize_totals``; the cache counts the
one its run's release takes (``ClusterState.count_resize_totals``)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api import objects as api
from kubesched.api.pods import parse_pod
from kubesched.config.featuregates import FeatureGates
from kubesched.config.load import load_config
from kubesched.plugins.registry import known_plugin_names
from kubesched.scheduler import Scheduler
from kubesched.state.cache import ClusterState
from kubesched.testing import make_node
from kubesched.testing.clock import VirtualClock
from kubesched.testing.fakeapi import FakeApi


def _container(name: str, cpu: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "x", "resources": {"requests": {"cpu": cpu}}, **extra}


def _status(name: str, cpu: str, allocated: str | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "resources": {"requests": {"cpu": cpu}},
        "allocatedResources": {"cpu": allocated or cpu},
    }


def _pod(
    containers: list[dict[str, Any]],
    statuses: list[dict[str, Any]] | None = None,
    *,
    inits: list[dict[str, Any]] | None = None,
    init_statuses: list[dict[str, Any]] | None = None,
    infeasible: bool = False,
) -> api.Pod:
    status: dict[str, Any] = {"phase": "Running"}
    if statuses is not None:
        status["containerStatuses"] = statuses
    if init_statuses is not None:
        status["initContainerStatuses"] = init_statuses
    if infeasible:
        status["conditions"] = [
            {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}
        ]
    spec: dict[str, Any] = {"nodeName": "n0", "containers": containers}
    if inits:
        spec["initContainers"] = inits
    return parse_pod({"metadata": {"name": "r"}, "spec": spec, "status": status})


def _swapped() -> api.Pod:
    """Containers a (spec 500m, status 100m) and b (spec 100m, status 500m)."""
    return _pod(
        [_container("a", "500m"), _container("b", "100m")],
        [_status("a", "100m"), _status("b", "500m")],
    )


def test_per_container_maximum_until_v136_and_largest_total_at_v137() -> None:
    pod = _swapped()
    assert pod.requests == {api.CPU: 1000}
    assert api.counted_requests(pod, False) == (pod.requests, pod.nonzero_requests)
    assert pod.resize_totals is not None
    requests, nonzero = pod.resize_totals
    assert requests == {api.CPU: 600}
    assert nonzero[api.CPU] == 600
    assert api.counted_requests(pod, True) == pod.resize_totals


def test_a_pod_without_resize_status_counts_its_spec_at_every_release() -> None:
    pod = _pod([_container("a", "500m")])
    assert pod.resize_totals is None
    assert api.counted_requests(pod, True) == (pod.requests, pod.nonzero_requests)


def test_infeasible_resize_leaves_the_spec_out_at_v137() -> None:
    containers = [_container("a", "500m"), _container("b", "100m")]
    statuses = [_status("a", "200m")]  # b reports no status
    feasible = _pod(containers, statuses)
    assert feasible.resize_totals is not None
    assert feasible.resize_totals[0] == {api.CPU: 600}  # the spec's total, 500m + 100m
    infeasible = _pod(containers, statuses, infeasible=True)
    assert infeasible.resize_totals is not None
    assert infeasible.resize_totals[0] == {api.CPU: 200}  # b counts nothing without spec
    assert infeasible.requests == {api.CPU: 300}  # v1.34-v1.36: b keeps its spec


def test_actuated_falls_back_to_allocated_at_v137() -> None:
    status = {"name": "a", "resources": {}, "allocatedResources": {"cpu": "800m"}}
    pod = _pod([_container("a", "300m"), _container("b", "100m")], [status])
    assert pod.resize_totals is not None
    assert pod.resize_totals[0] == {api.CPU: 900}


def test_a_regular_init_container_status_counts_at_v137() -> None:
    pod = _pod(
        [_container("c", "100m")],
        [_status("c", "100m")],
        inits=[_container("i", "200m")],
        init_statuses=[_status("i", "900m")],
    )
    assert pod.requests == {api.CPU: 200}  # v1.34-v1.36: sidecars only
    assert pod.resize_totals is not None
    assert pod.resize_totals[0] == {api.CPU: 900}


@pytest.mark.parametrize(("totals", "cpu"), [(False, 1000), (True, 600)])
def test_the_cache_counts_the_release_rule_and_recounts_on_change(totals: bool, cpu: int) -> None:
    c = ClusterState()
    c.add_node(make_node("n0").cap(cpu="4", memory="8Gi", pods=10).obj())
    c.add_pod(_swapped())
    row = c.nodes.row_of["n0"]
    assert c.nodes.requested[row, 0] == 1000
    c.count_resize_totals(totals)
    assert c.nodes.requested[row, 0] == cpu
    assert c.nodes.nonzero_requested[row, 0] == cpu
    c.remove_pod("default/r")
    assert c.nodes.requested[row, 0] == 0
    assert c.nodes.pod_count[row] == 0


def test_bulk_added_pods_count_the_release_rule() -> None:
    c = ClusterState()
    c.count_resize_totals(True)
    c.add_node(make_node("n0").cap(cpu="4", memory="8Gi", pods=10).obj())
    c.add_bound_pods([_swapped()])
    assert c.nodes.requested[c.nodes.row_of["n0"], 0] == 600


@pytest.mark.parametrize(("version", "cpu"), [("1.34", 1000), ("1.36", 1000), ("1.37", 600)])
def test_the_scheduler_sets_its_release_rule_on_the_cache(version: str, cpu: int) -> None:
    c = ClusterState()
    c.add_node(make_node("n0").cap(cpu="4", memory="8Gi", pods=10).obj())
    c.add_pod(_swapped())
    gates = FeatureGates(version=version)
    cfg = load_config(None, known_plugins=known_plugin_names(), gates=gates)
    Scheduler(cfg, clock=VirtualClock(), api_client=FakeApi(), cluster=c)
    assert c.resize_totals == (version == "1.37")
    assert c.nodes.requested[c.nodes.row_of["n0"], 0] == cpu


def _pod_level(name: str, node: str = "n0") -> api.Pod:
    """A Pod requesting 100m in its container and 3 CPUs at the pod level."""
    spec: dict[str, Any] = {
        "containers": [_container("a", "100m")],
        "resources": {"requests": {"cpu": "3"}},
    }
    if node:
        spec["nodeName"] = node
    return parse_pod({"metadata": {"name": name}, "spec": spec})


@pytest.mark.parametrize("bulk", [False, True])
def test_the_cache_skips_pod_level_resources_with_the_gate_off(bulk: bool) -> None:
    c = ClusterState()
    c.add_node(make_node("n0").cap(cpu="4", memory="8Gi", pods=10).obj())
    row = c.nodes.row_of["n0"]
    c.add_pod(_pod_level("before"))
    assert c.nodes.requested[row, 0] == 3000
    c.skip_pod_level_resources()
    assert c.nodes.requested[row, 0] == 100  # counted again
    if bulk:
        c.add_bound_pods([_pod_level("after")])
    else:
        c.add_pod(_pod_level("after"))
    assert c.nodes.requested[row, 0] == 200


@pytest.mark.parametrize(("gate", "cpu"), [(True, 3000), (False, 100)])
def test_the_scheduler_counts_pod_level_resources_by_the_gate(gate: bool, cpu: int) -> None:
    c = ClusterState()
    c.add_node(make_node("n0").cap(cpu="4", memory="8Gi", pods=10).obj())
    c.add_pod(_pod_level("bound"))
    gates = FeatureGates(version="1.35", settings=(("PodLevelResources", gate),))
    cfg = load_config(None, known_plugins=known_plugin_names(), gates=gates)
    s = Scheduler(cfg, clock=VirtualClock(), api_client=FakeApi(), cluster=c)
    assert c.nodes.requested[c.nodes.row_of["n0"], 0] == cpu
    pending = _pod_level("pending", node="")
    s.on_pod_add(pending)
    assert pending.requests[api.CPU] == cpu


def _pod_level_resizing(
    *,
    pod_level: dict[str, str] | None,
    status: dict[str, Any] | None,
    allocated: dict[str, str] | None = None,
    container_status: str | None = None,
    infeasible: bool = False,
) -> api.Pod:
    """A running Pod with container a (spec 500m; its status reports ``container_status``
    when given), pod-level requests ``pod_level`` and its own ``status.resources``
    (``status``) and ``status.allocatedResources`` (``allocated``)."""
    spec: dict[str, Any] = {"nodeName": "n0", "containers": [_container("a", "500m")]}
    if pod_level is not None:
        spec["resources"] = {"requests": pod_level}
    st: dict[str, Any] = {"phase": "Running"}
    if status is not None:
        st["resources"] = status
    if allocated is not None:
        st["allocatedResources"] = allocated
    if container_status is not None:
        st["containerStatuses"] = [_status("a", container_status)]
    if infeasible:
        st["conditions"] = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]
    return parse_pod({"metadata": {"name": "p"}, "spec": spec, "status": st})


def test_the_pods_own_status_counts_only_with_the_gate() -> None:
    pod = _pod_level_resizing(
        pod_level={"cpu": "1"}, status={"requests": {"cpu": "2"}}, allocated={"cpu": "1500m"}
    )
    assert pod.requests == {api.CPU: 1000}  # the gate off: the spec's pod-level request
    assert api.counted_requests(pod, False) == (pod.requests, pod.nonzero_requests)
    assert api.counted_requests(pod, False, True)[0] == {api.CPU: 2000}  # v1.35-v1.36
    assert api.counted_requests(pod, True, True)[0] == {api.CPU: 2000}  # v1.37


def test_v136_counts_only_the_resources_the_spec_names_at_the_pod_level() -> None:
    pod = _pod_level_resizing(
        pod_level={"cpu": "1"},
        status={"requests": {"cpu": "700m", "memory": "1Gi"}},
        allocated={"cpu": "700m", "memory": "1Gi"},
    )
    per_container, totals = (
        api.counted_requests(pod, False, True),
        api.counted_requests(pod, True, True),
    )
    assert per_container[0] == {api.CPU: 1000}  # memory: not named at the pod level
    assert totals[0] == {api.CPU: 1000, api.MEMORY: 1024**3}  # v1.37: every resource named


def test_infeasible_leaves_the_pod_level_spec_out_and_a_missing_entry_counts_zero() -> None:
    pod = _pod_level_resizing(
        pod_level={"cpu": "1", "memory": "1Gi"},
        status={"requests": {"cpu": "300m"}},
        infeasible=True,
    )
    assert api.counted_requests(pod, False, True)[0] == {api.CPU: 300, api.MEMORY: 0}
    # v1.37: the Pod's totals need allocatedResources too; without them its containers'
    # statuses count (none here: nothing, as infeasible leaves the spec out), and the
    # pod-level request is the largest the statuses report
    assert api.counted_requests(pod, True, True)[0] == {api.CPU: 300}


def test_v137_takes_the_pods_totals_in_place_of_its_containers() -> None:
    # no pod-level spec: v1.35-v1.36 read the Pod's status only for pod-level requests
    pod = _pod_level_resizing(
        pod_level=None,
        status={"requests": {"cpu": "2"}},
        allocated={"cpu": "1200m"},
        container_status="3",
    )
    assert api.counted_requests(pod, False, True)[0] == {api.CPU: 3000}  # the container's
    assert api.counted_requests(pod, True, False)[0] == {api.CPU: 3000}
    assert api.counted_requests(pod, True, True)[0] == {api.CPU: 2000}  # spec 500m, 2, 1200m


def test_v137_defaults_pod_level_requests_from_the_containers_for_its_resize() -> None:
    """PodLevelResourcesFixDefaulting: a pod-level cpu request alone gets memory from the
    containers' spec, so a container status reporting more memory no longer counts."""
    spec: dict[str, Any] = {
        "nodeName": "n0",
        "containers": [
            {"name": "a", "image": "x", "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}}}
        ],
        "resources": {"requests": {"cpu": "1"}},
    }
    status = {
        "phase": "Running",
        "containerStatuses": [{"name": "a", "resources": {"requests": {"memory": "3Gi"}}}],
    }
    pod = parse_pod({"metadata": {"name": "d"}, "spec": spec, "status": status})
    assert pod.requests == {api.CPU: 1000, api.MEMORY: 3 * 1024**3}  # v1.34-v1.36
    assert pod.resize_totals is not None
    assert pod.resize_totals[0] == {api.CPU: 1000, api.MEMORY: 1024**3}  # v1.37


@pytest.mark.parametrize(
    ("version", "settings", "cpu"),
    [
        ("1.35", (), 1000),
        (
            "1.35",
            (("InPlacePodLevelResourcesVerticalScaling", True), ("NodeDeclaredFeatures", True)),
            2000,
        ),
        ("1.36", (), 2000),
        ("1.37", (("InPlacePodLevelResourcesVerticalScaling", False),), 1000),
        ("1.37", (), 2000),
    ],
)
def test_the_scheduler_sets_the_gate_on_the_cache(
    version: str, settings: tuple[tuple[str, bool], ...], cpu: int
) -> None:
    c = ClusterState()
    c.add_node(make_node("n0").cap(cpu="4", memory="8Gi", pods=10).obj())
    c.add_bound_pods(
        [
            _pod_level_resizing(
                pod_level={"cpu": "1"}, status={"requests": {"cpu": "2"}}, allocated={"cpu": "2"}
            )
        ]
    )
    gates = FeatureGates(version=version, settings=settings)
    cfg = load_config(None, known_plugins=known_plugin_names(), gates=gates)
    Scheduler(cfg, clock=VirtualClock(), api_client=FakeApi(), cluster=c)
    assert c.nodes.requested[c.nodes.row_of["n0"], 0] == cpu
