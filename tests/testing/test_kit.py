"""The public test kit (:mod:`kubesched.testing`): its fake API server, clock, builders and
runner do what docs/testing.md says, and no room of the product imports it."""

from __future__ import annotations

import grimp
import pytest

from kubesched.api import objects as api
from kubesched.testing import (
    DoesNotExist,
    Exists,
    FakeApi,
    In,
    NotIn,
    VirtualClock,
    affinity_term,
    conformance,
    drain,
    make_cluster,
    make_node,
    make_pod,
    match_labels,
    new_scheduler,
    node_affinity,
    node_selector_term,
    spread_constraint,
    weighted,
)

ZONE = "topology.kubernetes.io/zone"


def test_fake_api_records_binds_deletions_and_failures_in_order() -> None:
    fake = FakeApi()
    a, b = make_pod("a").obj(), make_pod("b", "ns").obj()
    fake.bind(a, "n1")
    fake.bind(b, "n2")
    fake.bind(a, "n3")
    assert fake.binds == {"default/a": "n3", "ns/b": "n2"}
    assert fake.bound == [("default/a", "n1"), ("ns/b", "n2"), ("default/a", "n3")]
    fake.delete_pod(b, "preempted")
    assert fake.deleted == ["ns/b"]
    fake.pod_scheduling_failed(a, "Unschedulable", "first")
    fake.pod_scheduling_failed(a, "Unschedulable", "second")
    assert fake.failures == {"default/a": ("Unschedulable", "second")}
    assert fake.failed == [
        ("default/a", "Unschedulable", "first"),
        ("default/a", "Unschedulable", "second"),
    ]


def test_fake_api_refuses_binds_when_told() -> None:
    fake = FakeApi(fail_binds=True, bind_error="boom")
    with pytest.raises(RuntimeError, match="boom"):
        fake.bind(make_pod("a").obj(), "n")
    fake.fail_binds = False
    fake.refuse.add("default/b")
    with pytest.raises(RuntimeError, match="boom"):
        fake.bind(make_pod("b").obj(), "n")
    fake.bind(make_pod("c").obj(), "n")
    assert fake.binds == {"default/c": "n"}


def test_fake_api_with_a_cluster_drops_deleted_pods_from_it() -> None:
    victim = make_pod("v").node("n").obj()
    cluster = make_cluster([make_node("n").cap(cpu="1").obj()], [victim])
    FakeApi(cluster).delete_pod(victim, "preempted")
    assert "default/v" not in cluster.pods


def test_virtual_clock_moves_only_forward_and_only_when_told() -> None:
    clock = VirtualClock(10.0)
    assert clock() == 10.0
    assert clock.advance(2.5) == 12.5
    clock.sleep(0.5)
    assert clock() == clock.now == 13.0
    with pytest.raises(ValueError, match="does not go back"):
        clock.advance(-1)


def test_term_builders_build_what_the_api_objects_spell_out() -> None:
    sel = api.LabelSelector((("app", "web"),), (api.Requirement("tier", "In", ("a", "b")),))
    assert match_labels({"app": "web"}, In("tier", "a", "b")) == sel
    assert NotIn("k", "v") == api.Requirement("k", "NotIn", ("v",))
    assert Exists("k") == api.Requirement("k", "Exists")
    assert DoesNotExist("k") == api.Requirement("k", "DoesNotExist")
    term = affinity_term(ZONE, In("tier", "a", "b"), labels={"app": "web"}, namespaces=["x"])
    assert term == api.PodAffinityTerm(ZONE, sel, ("x",))
    assert affinity_term(ZONE, no_selector=True).label_selector is None
    assert weighted(5, term) == api.WeightedPodAffinityTerm(5, term)
    tsc = spread_constraint(1, ZONE, labels={"app": "web"}, min_domains=2)
    assert tsc == api.TopologySpreadConstraint(
        1, ZONE, "DoNotSchedule", match_labels({"app": "web"}), 2
    )
    na = node_affinity(node_selector_term(In(ZONE, "z1")), preferred=[(3, node_selector_term())])
    assert na.required == (api.NodeSelectorTerm((In(ZONE, "z1"),)),)
    assert na.preferred == (api.PreferredSchedulingTerm(3, api.NodeSelectorTerm()),)
    assert node_affinity().required is None


def test_pod_builder_adds_spread_and_affinity_terms() -> None:
    term = affinity_term("kubernetes.io/hostname", labels={"app": "db"})
    pod = (
        make_pod("p")
        .spread(1, ZONE, labels={"app": "web"})
        .spread(2, "kubernetes.io/hostname", "ScheduleAnyway")
        .pod_affinity(term)
        .anti_affinity(preferred=[weighted(10, term)])
        .obj()
    )
    assert [(c.max_skew, c.when_unsatisfiable) for c in pod.topology_spread_constraints] == [
        (1, "DoNotSchedule"),
        (2, "ScheduleAnyway"),
    ]
    assert pod.pod_affinity == api.PodAffinity((term,), ())
    assert pod.pod_anti_affinity == api.PodAffinity((), (weighted(10, term),))


def test_new_scheduler_and_drain_place_pods_through_the_fake_api() -> None:
    s, fake, clock = new_scheduler()
    for i in range(2):
        s.on_node_add(make_node(f"n{i}").cap(cpu="1", memory="1Gi", pods=10).labels(zone="z").obj())
    for i in range(3):
        s.on_pod_add(make_pod(f"p{i}").req(cpu="600m").obj())
    assert drain(s) == 3
    assert sorted(fake.binds.values()) == ["n0", "n1"]  # one per node: 2 x 600m > 1 CPU
    assert set(fake.failures) == {"default/p2"} and clock() == 0.0


def test_the_conformance_suite_is_the_frameworks() -> None:
    from kubesched.framework import conformance as framework_conformance

    assert conformance.assert_conformant is framework_conformance.assert_conformant
    assert conformance.check_plugin is framework_conformance.check_plugin


def test_no_room_of_the_product_imports_the_kit() -> None:
    graph = grimp.build_graph("kubesched")
    importers = {
        m
        for kit in graph.find_children("kubesched.testing") | {"kubesched.testing"}
        for m in graph.find_modules_that_directly_import(kit)
    }
    assert {m for m in importers if not m.startswith("kubesched.testing")} == set()
