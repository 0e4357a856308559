"""PodTopologySpread defaults (System / List defaulting with Service selectors), PreScore
Skip cases (upstream TestPreScoreSkip, TestPreScoreStateEmptyNodes) and the numeric helpers."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import kubesched
from kubesched.api import objects as api
from kubesched.framework.interface import Code, CycleState, Handle
from kubesched.plugins import podtopologyspread as pts
from kubesched.plugins.podtopologyspread import scoring
from kubesched.plugins.podtopologyspread.plugin import _PRE_SCORE_KEY
from kubesched.testing import make_cluster
from tests.explainer.test_explain import as_list
from tests.explainer.test_explain import node as explain_node
from tests.explainer.test_explain import pod as explain_pod
from tests.plugins.test_podtopologyspread_filtering import BAR, FOO, pod, tsc
from tests.plugins.test_podtopologyspread_scoring import (
    ABCD,
    HOST,
    P2103,
    P4321,
    SA,
    hn,
    hz,
    run_score,
)


def test_system_defaulting_with_a_service_and_no_zone_labels() -> None:
    """Nodes without a zone are not ignored under system defaults; hostname spreads."""
    services = {"default/svc": ("default", {"foo": ""})}
    status, got, _ = run_score(pod({"foo": ""}), ABCD, [], P4321, services=services)
    assert status.is_success()
    assert got == {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100}


def test_system_default_weights_count_missing_zone_as_a_domain() -> None:
    """TestPreScoreStateEmptyNodes 'system default constraints': weights log(4+2), log(2+2)."""
    nodes = [
        hn("node-a", **{"topology.kubernetes.io/zone": "mars"}),
        hn("node-b", **{"topology.kubernetes.io/zone": "mars"}),
        hn("node-c"),
        hn("node-d"),
    ]
    services = {"default/svc": ("default", {"foo": "tar"})}
    p = pod({"foo": "tar", "baz": "sup"})
    status, _, state = run_score(p, nodes, [], [], services=services)
    assert status.is_success()
    pre = state[_PRE_SCORE_KEY]
    assert [sc.constraint.max_skew for sc in pre.constraints] == [3, 5]
    assert [sc.weight for sc in pre.constraints] == [math.log(6), math.log(4)]


def test_issue_16_example_through_explain_matches_upstream_v1_34() -> None:
    """Zones a, a, b and a node without a zone; Service app=web with 2 Pods on n1, 1 on n3.

    Under the system defaults (hostname maxSkew 3, zone maxSkew 5) upstream's
    ``initPreScoreState`` does not require every key, so the zoneless n4 is the domain ""
    (upstream's own case: "Nodes with no zone are not excluded. They are considered a
    separate zone."): zone weight log(3+2), hostname weight log(4+2); raw 13/9/9/2,
    normalized 15/46/46/100.  Upstream v1.34.4's plugin run on this cluster gives exactly
    these numbers; issue 16's 16/41/41/100 would need the zoneless node left out."""
    zone = "topology.kubernetes.io/zone"
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}},
    }

    def web(name: str, node_name: str | None = None) -> dict[str, Any]:
        p = explain_pod(name, node_name=node_name)
        p["metadata"]["labels"] = {"app": "web"}
        return p

    cluster = as_list(
        explain_node("n1", **{zone: "a"}),
        explain_node("n2", **{zone: "a"}),
        explain_node("n3", **{zone: "b"}),
        explain_node("n4"),
        service,
        web("w1", "n1"),
        web("w2", "n1"),
        web("w3", "n3"),
    )
    out = kubesched.explain(cluster, web("new"))
    got = {n: info["scores"]["PodTopologySpread"] for n, info in out["nodes"].items()}
    assert got == {"n1": 15, "n2": 46, "n3": 46, "n4": 100}


def test_weights_and_ignored_nodes() -> None:
    """TestPreScoreStateEmptyNodes 'node-x doesn't have label zone'."""
    p = pod({"foo": ""}, tsc(1, "zone", FOO, SA), tsc(1, HOST, BAR, SA))
    nodes = [hz("node-a", "zone1"), hz("node-b", "zone1"), hn("node-x")]
    _, got, state = run_score(p, nodes, [], [])
    pre = state[_PRE_SCORE_KEY]
    assert [sc.weight for sc in pre.constraints] == [math.log(3), math.log(4)]
    assert got == {"node-a": 100, "node-b": 100, "node-x": 0}


@pytest.mark.parametrize(
    ("p", "args", "services"),
    [
        (pod({"foo": ""}), {"defaultingType": "List"}, None),
        (pod({"foo": ""}, tsc(1, "zone", FOO)), None, None),  # only hard constraints
        (pod({"foo": "bar"}), None, {"default/s": ("default", {"foo": "other"})}),
        (pod({"foo": "bar"}), None, {"ns/s": ("ns", {"foo": "bar"})}),  # other namespace
        (
            pod({"foo": "bar"}),
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": "ScheduleAnyway"}
                ],
            },
            None,  # default constraints but no Service selects the Pod
        ),
    ],
)
def test_pre_score_skip(p: api.Pod, args: Any, services: Any) -> None:
    status, _, _ = run_score(p, [hn("node-a", zone="z")], [], [], args, services)
    assert status.code == Code.SKIP


def test_list_defaulting_uses_default_constraints_with_the_service_selector() -> None:
    args = {
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway"},
            {"maxSkew": 2, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule"},
        ],
    }
    services = {"default/s": ("default", {"foo": ""})}
    cluster = make_cluster([hn("node-a", rack="r1"), hn("node-b")], P2103[:3])
    cluster.services = services  # type: ignore[attr-defined]
    plugin = pts.new(args, Handle(cluster))
    state = CycleState()
    _, status = plugin.pre_filter(state, pod({"foo": ""}), cluster)
    assert status.is_success()
    verdict = plugin.filter(state, pod({"foo": ""}), cluster, cluster.nodes.order())
    assert [verdict.table[c].code if c else 0 for c in verdict.codes.tolist()] == [
        0,
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ]
    status, got, _ = run_score(
        pod({"foo": ""}), [hn("node-a", rack="r1"), hn("node-b")], [], P2103[:3], args, services
    )
    assert got == {"node-a": 33, "node-b": 100}  # 2 vs 1 matching Pods, weight log(4)


@pytest.mark.parametrize(
    ("x", "want"),
    [(0.5, 1), (1.5, 2), (2.5, 3), (2.4999999, 2), (-0.5, -1), (0.49999999999999994, 0), (7.0, 7)],
)
def test_go_round_is_half_away_from_zero(x: float, want: int) -> None:
    assert scoring.go_round(np.asarray([x]))[0] == want


def test_normalize_all_ignored_and_all_zero() -> None:
    scores = np.asarray([5, 0, 7], dtype=np.int64)
    scoring.normalize(scores, np.asarray([True, True, True]))
    assert scores.tolist() == [0, 0, 0]
    scores = np.asarray([0, 0, 3], dtype=np.int64)
    scoring.normalize(scores, np.asarray([False, False, True]))
    assert scores.tolist() == [100, 100, 0]


# ------------------------------------------------------------------ owning controllers
def _owned(kind: str, api_version: str = "apps/v1", controller: bool = True) -> api.Pod:
    p = pod({"foo": "", "app": "web"})
    p.owner_references = (api.OwnerReference(kind, "web", api_version, controller),)
    return p


def _objects(kind: str, selector: Any) -> dict[tuple[str, str], dict[str, Any]]:
    obj = {"kind": kind, "metadata": {"name": "web", "namespace": "default"}}
    obj["spec"] = {"selector": selector}
    return {(kind, "default/web"): obj}


RS_SELECTOR = {
    "matchLabels": {"app": "web"},
    "matchExpressions": [{"key": "foo", "operator": "Exists"}],
}


@pytest.mark.parametrize(
    ("owner", "objects", "want"),
    [
        (
            "ReplicaSet",
            _objects("ReplicaSet", RS_SELECTOR),
            (("app", "In", ("web",)), ("foo", "Exists", ())),
        ),
        (
            "StatefulSet",
            _objects("StatefulSet", {"matchLabels": {"app": "web"}}),
            (("app", "In", ("web",)),),
        ),
        (
            ("ReplicationController", "v1"),
            _objects("ReplicationController", {"app": "web"}),
            (("app", "In", ("web",)),),
        ),
        # not the controller, a kind or group upstream does not look up, or not in the cluster
        (("ReplicaSet", "apps/v1", False), _objects("ReplicaSet", RS_SELECTOR), ()),
        (("ReplicaSet", "extensions/v1beta1"), _objects("ReplicaSet", RS_SELECTOR), ()),
        ("Deployment", _objects("Deployment", RS_SELECTOR), ()),
        ("ReplicaSet", {}, ()),
        # an invalid selector is ignored, as upstream ignores LabelSelectorAsSelector errors
        (
            "ReplicaSet",
            _objects("ReplicaSet", {"matchExpressions": [{"key": "a", "operator": "In"}]}),
            (),
        ),
    ],
)
def test_default_selector_merges_the_controlling_owner(owner: Any, objects: Any, want: Any) -> None:
    """Upstream helper.DefaultSelector: a controlling RC / ReplicaSet / StatefulSet adds its
    selector to the Services' (here none)."""
    args = owner if isinstance(owner, tuple) else (owner,)
    sel = pts.constraints.default_selector(_owned(*args), {}, objects)
    assert sel.reqs == want


def test_default_selector_adds_the_owner_to_the_service_selector() -> None:
    services = {"default/svc": ("default", {"foo": ""})}
    objects = _objects("ReplicaSet", {"matchLabels": {"app": "web"}})
    sel = pts.constraints.default_selector(_owned("ReplicaSet"), services, objects)
    assert sel.reqs == (("app", "In", ("web",)), ("foo", "In", ("",)))


def test_system_defaults_spread_a_replicaset_pod_without_any_service() -> None:
    """A Pod controlled by a ReplicaSet gets the system default constraints with the
    ReplicaSet's selector: hostname spreading over the matching Pods (as the Service case)."""
    p = _owned("ReplicaSet")
    existing = [
        api.Pod(name=f"w{i}", uid=f"w{i}", labels={"app": "web", "foo": ""}, node_name=n)
        for i, n in enumerate(["node-a", "node-a", "node-a", "node-b", "node-b", "node-c"])
    ]
    cluster = make_cluster(ABCD, existing)
    cluster.apply_object(
        _objects("ReplicaSet", {"matchLabels": {"app": "web"}})[("ReplicaSet", "default/web")]
    )
    plugin = pts.new(None, Handle(cluster))
    assert plugin.sign(p) is None  # default constraints apply: not reusable
    rows = np.asarray([cluster.nodes.row_of[n.name] for n in ABCD], dtype=np.int64)
    state = CycleState()
    assert plugin.pre_score(state, p, cluster, rows).is_success()
    scores = plugin.score(state, p, cluster, rows)
    plugin.normalize_score(state, p, scores)
    got = dict(zip([n.name for n in ABCD], scores.tolist(), strict=True))
    assert got["node-d"] == 100 and got["node-a"] < got["node-b"] < got["node-c"] < 100
    plain = pod({"foo": "", "app": "web"})  # the same Pod without its owner: nothing to spread
    assert plugin.pre_score(CycleState(), plain, cluster, rows).code == Code.SKIP
