"""PodTopologySpread's incrementally maintained counts, a naive-oracle check of Filter, and
an end-to-end spread through ``kubesched.schedule``."""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import kubesched
from kubesched.api import objects as api
from kubesched.framework.interface import Code, CycleState, Handle
from kubesched.plugins import podtopologyspread as pts
from kubesched.plugins.podtopologyspread.constraints import selector_from
from kubesched.plugins.podtopologyspread.counts import match_counts, recount
from kubesched.state.cache import ClusterState

NODES = [f"n{i}" for i in range(5)]
ZONES = ["z1", "z2", "z3", None]
NAMESPACES = ["default", "other"]
SELECTORS = [
    selector_from(api.LabelSelector(match_labels=(("app", "a"),))),
    selector_from(api.LabelSelector(match_expressions=(api.Requirement("tier", "Exists"),))),
    selector_from(api.LabelSelector(match_expressions=(api.Requirement("app", "NotIn", ("a",)),))),
]

labels_st = st.fixed_dictionaries(
    {}, optional={"app": st.sampled_from(["a", "b"]), "tier": st.just("x")}
)
op_st = st.one_of(
    st.tuples(st.just("node"), st.sampled_from(NODES), st.sampled_from(ZONES)),
    st.tuples(st.just("drop_node"), st.sampled_from(NODES)),
    st.tuples(
        st.just("bind"),
        st.integers(0, 7),
        st.sampled_from(NODES),
        st.sampled_from(NAMESPACES),
        labels_st,
    ),
    st.tuples(
        st.just("assume"),
        st.integers(0, 7),
        st.sampled_from(NODES),
        st.sampled_from(NAMESPACES),
        labels_st,
    ),
    st.tuples(st.just("forget"), st.integers(0, 7)),
    st.tuples(st.just("confirm"), st.integers(0, 7), labels_st),
    st.tuples(st.just("delete"), st.integers(0, 7)),
    st.tuples(st.just("terminate"), st.integers(0, 7)),
    st.tuples(st.just("track"), st.sampled_from(NAMESPACES), st.integers(0, 2)),
)


def _node(name: str, zone: str | None) -> api.Node:
    labels = {"kubernetes.io/hostname": name} | ({"zone": zone} if zone else {})
    return api.Node(name, labels=labels, allocatable={"pods": 110})


def _apply(cluster: ClusterState, op: tuple[Any, ...], pods: dict[int, api.Pod]) -> None:
    kind = op[0]
    if kind == "node":
        cluster.add_node(_node(op[1], op[2]))
    elif kind == "drop_node":
        for gone in cluster.remove_node(op[1]):
            pods.pop(int(gone.name[1:]), None)
    elif kind in ("bind", "assume"):
        i, node, ns, labels = op[1:]
        if i in pods or node not in cluster.nodes.row_of:
            return
        p = api.Pod(f"p{i}", namespace=ns, uid=f"u{i}", labels=dict(labels), node_name=node)
        if kind == "bind":
            cluster.add_pod(p)
        else:
            cluster.assume_pod(p, node)
        pods[i] = p
    elif kind == "forget":
        p = pods.get(op[1])
        if p is not None and cluster.is_assumed(p.key):
            cluster.forget_pod(p)
            del pods[op[1]]
    elif kind == "confirm":  # the API server reports the Pod bound, possibly relabelled
        p = pods.get(op[1])
        if p is not None:
            q = copy.copy(p)
            q.labels = dict(op[2])
            cluster.add_pod(q)
            pods[op[1]] = q
    elif kind == "terminate":  # graceful deletion began: bound until gone, not counted
        p = pods.get(op[1])
        if p is not None and not cluster.is_assumed(p.key):
            q = copy.copy(p)
            q.deletion_timestamp = 1.0
            cluster.add_pod(q)
            pods[op[1]] = q
    elif kind == "delete":
        p = pods.pop(op[1], None)
        if p is not None:
            cluster.remove_pod(p.key)
    elif kind == "track":
        match_counts(cluster).node_counts(cluster, op[1], SELECTORS[op[2]])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op_st, max_size=40), st.booleans())
@example(  # a counted Pod starts terminating: its count must go (upstream skips it)
    [
        ("node", "n0", "z1"),
        ("bind", 0, "n0", "default", {"app": "a"}),
        ("track", "default", 0),
        ("terminate", 0),
    ],
    False,
)
def test_maintained_counts_equal_a_recount(ops: list[tuple[Any, ...]], early: bool) -> None:
    cluster = ClusterState(capacity=2)
    pods: dict[int, api.Pod] = {}
    if early:
        match_counts(cluster)
    for op in ops:
        _apply(cluster, op, pods)
    store = match_counts(cluster)  # replays the cache when first created here
    for ns, sel in [*store.tracked(), *((n, s) for n in NAMESPACES for s in SELECTORS)]:
        got = store.node_counts(cluster, ns, sel)
        assert got.tolist() == recount(cluster, ns, sel).tolist()
        assert got.shape == (cluster.nodes.capacity,)


# ------------------------------------------------------------------ naive Filter oracle
def _naive_filter(cluster: ClusterState, pod: api.Pod, sel: Any, skew: int) -> dict[str, Code]:
    nodes = [cluster.node(n) for n in cluster.nodes.row_of]
    counts: Counter[str] = Counter()
    for node in nodes:
        assert node is not None
        if "zone" not in node.labels:
            continue
        counts[node.labels["zone"]] += sum(
            1
            for k in cluster.pods_on_node[node.name]
            if cluster.pods[k].pod.namespace == pod.namespace
            and sel.matches(cluster.pods[k].pod.labels)
        )
    low = min(counts.values()) if counts else 0
    out = {}
    for node in nodes:
        assert node is not None
        zone = node.labels.get("zone")
        if zone is None:
            out[node.name] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        elif counts[zone] + int(sel.matches(pod.labels)) - low > skew:
            out[node.name] = Code.UNSCHEDULABLE
        else:
            out[node.name] = Code.SUCCESS
    return out


@settings(max_examples=80, deadline=None)
@given(st.lists(op_st, max_size=40), st.integers(0, 2), st.integers(1, 3), labels_st)
def test_filter_equals_a_naive_per_node_count(
    ops: list[tuple[Any, ...]], which: int, skew: int, labels: dict[str, str]
) -> None:
    cluster = ClusterState(capacity=2)
    pods: dict[int, api.Pod] = {}
    match_counts(cluster)
    for op in ops:
        _apply(cluster, op, pods)
        if op[0] == "bind" and op[1] % 3 == 0:  # filter mid-sequence too (warm trackers)
            _check_filter(cluster, which, skew, labels)
    _check_filter(cluster, which, skew, labels)


def _check_filter(cluster: ClusterState, which: int, skew: int, labels: dict[str, str]) -> None:
    if not cluster.nodes.row_of:
        return
    ls = [
        api.LabelSelector(match_labels=(("app", "a"),)),
        api.LabelSelector(match_expressions=(api.Requirement("tier", "Exists"),)),
        api.LabelSelector(match_expressions=(api.Requirement("app", "NotIn", ("a",)),)),
    ][which]
    c = api.TopologySpreadConstraint(skew, "zone", "DoNotSchedule", ls)
    pod = api.Pod("incoming", labels=dict(labels), topology_spread_constraints=(c,))
    plugin = pts.new(None, Handle(cluster))
    state = CycleState()
    plugin.pre_filter(state, pod, cluster)
    rows = cluster.nodes.order()
    verdict = plugin.filter(state, pod, cluster, rows)
    got = {
        cluster.nodes.names[int(r)]: (verdict.table[k].code if k else Code.SUCCESS)
        for r, k in zip(rows.tolist(), verdict.codes.tolist(), strict=True)
    }
    assert got == _naive_filter(cluster, pod, SELECTORS[which], skew)


# ------------------------------------------------------------------ end to end
def _manifest_node(name: str, zone: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"topology.kubernetes.io/zone": zone, "kubernetes.io/hostname": name},
        },
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }


def _manifest_pod(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"web-{i}", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "nginx",
                    "resources": {"requests": {"cpu": "100m", "memory": "100Mi"}},
                }
            ],
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "web"}},
                }
            ],
        },
    }


def test_schedule_spreads_across_three_zones() -> None:
    # zone a has 3 nodes, b and c one each: without the constraint the spread would follow
    # the node count; with maxSkew 1 every zone gets 4 of the 12 Pods.
    nodes = [_manifest_node(f"a{i}", "a") for i in range(3)]
    nodes += [_manifest_node("b0", "b"), _manifest_node("c0", "c")]
    cluster = {"apiVersion": "v1", "kind": "List", "items": nodes}
    result = kubesched.schedule(cluster, [_manifest_pod(i) for i in range(12)])
    assert result["summary"]["scheduled"] == 12
    zone_of = {
        n["metadata"]["name"]: n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes
    }
    per_zone = Counter(zone_of[e["node"]] for e in result["pods"].values())
    assert per_zone == {"a": 4, "b": 4, "c": 4}


def test_unsatisfiable_spread_reports_the_upstream_reasons() -> None:
    # b0 is in zone b but too small, c0 has no zone: the second Pod fits nowhere.
    small = _manifest_node("b0", "b")
    small["status"]["allocatable"]["cpu"] = "50m"
    unzoned = _manifest_node("c0", "c")
    unzoned["metadata"]["labels"] = {"kubernetes.io/hostname": "c0"}
    cluster = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [_manifest_node("a0", "a"), small, unzoned],
    }
    result = kubesched.schedule(cluster, [_manifest_pod(0), _manifest_pod(1)])
    entries = result["pods"]
    assert entries["default/web-0"]["node"] == "a0"
    assert entries["default/web-1"]["result"] == "Unschedulable"
    assert entries["default/web-1"]["message"] == (
        "0/3 nodes are available: 1 Insufficient cpu, "
        f"1 {pts.ERR_REASON_CONSTRAINTS_NOT_MATCH}, 1 {pts.ERR_REASON_NODE_LABEL_NOT_MATCH}."
        # DefaultPreemption's part, with upstream's double period:
        " preemption: 0/3 nodes are available: "
        "1 No preemption victims found for incoming pod,"
        " 2 Preemption is not helpful for scheduling."
    )
