"""The incrementally maintained counts of InterPodAffinity: upstream's count tables, a
property test against a from-scratch recount, and an end-to-end run."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kubesched
from kubesched.api import objects as api
from kubesched.plugins.interpodaffinity.index import KINDS, AffinityIndex, Counts
from kubesched.plugins.interpodaffinity.terms import matcher, pod_terms
from kubesched.state.cache import ClusterState
from kubesched.testing import DoesNotExist, Exists, In, NotIn
from tests.plugins._interpodaffinity import N, P, T, cluster_of

Map = dict[tuple[str, str], int]


def _as_map(index: AffinityIndex, counts: Counts, key: str, into: Map) -> None:
    dom = counts.domain(key, index.table)
    for value, code in index.table.label_values.get(key, {}).items():
        if dom[code]:
            into[(key, value)] = into.get((key, value), 0) + int(dom[code])


def incoming_maps(index: AffinityIndex, c: ClusterState, pod: api.Pod) -> tuple[Map, Map]:
    """Upstream's (affinityCounts, antiAffinityCounts) for ``pod``, read from the index."""
    terms = pod_terms(pod)
    ns = c.namespaces.labels
    aff: Map = {}
    if terms.required_affinity:
        key = tuple(matcher(t, ns, index.pod_namespaces) for t in terms.required_affinity)
        for t in terms.required_affinity:
            _as_map(index, index.counter(key), t.topology_key, aff)
    anti: Map = {}
    for t in terms.required_anti:
        _as_map(index, index.counter((matcher(t, ns, index.pod_namespaces),)), t.topology_key, anti)
    return aff, anti


def normal(name: str, *labels: str) -> api.Pod:
    return P(name, labels=dict.fromkeys(labels, ""), node="nodeA")


NODE_A = N("nodeA", hostname="nodeA")
AFF_A = T("hostname", Exists("aaa"))
AFF_B = T("hostname", Exists("bbb"))
AFF_C = T("hostname", Exists("ccc"))

INCOMING = [
    ("nil", [], P(), {}, {}),
    ("pod without terms", [normal("a", "aaa")], P(), {}, {}),
    ("no matching pod", [normal("b", "bbb")], P(aff=[AFF_A], anti=[AFF_A]), {}, {}),
    (
        "single term",
        [normal("a", "aaa")],
        P(aff=[AFF_A], anti=[AFF_A]),
        {("hostname", "nodeA"): 1},
        {("hostname", "nodeA"): 1},
    ),
    (
        "multiple terms",
        [normal("ab", "aaa", "bbb")],
        P(aff=[AFF_A, AFF_B], anti=[AFF_A]),
        {("hostname", "nodeA"): 2},
        {("hostname", "nodeA"): 1},
    ),
    (
        "affinity needs all terms",
        [normal("a", "aaa")],
        P(aff=[AFF_A, AFF_B], anti=[AFF_A, AFF_B]),
        {},
        {("hostname", "nodeA"): 1},
    ),
    (
        "partial anti match 1",
        [normal("ab", "aaa", "bbb")],
        P(aff=[AFF_A, AFF_C], anti=[AFF_A, AFF_C]),
        {},
        {("hostname", "nodeA"): 1},
    ),
    (
        "partial anti match 2",
        [normal("b", "bbb")],
        P(aff=[AFF_A, AFF_B], anti=[AFF_A, AFF_B]),
        {},
        {("hostname", "nodeA"): 1},
    ),
]


@pytest.mark.parametrize(
    ("pods", "pod", "aff", "anti"), [c[1:] for c in INCOMING], ids=[c[0] for c in INCOMING]
)
def test_incoming_affinity_anti_affinity_counts(
    pods: list[api.Pod], pod: api.Pod, aff: Map, anti: Map
) -> None:
    c = cluster_of([NODE_A], pods)
    assert incoming_maps(AffinityIndex(c), c, pod) == (aff, anti)


FOO_BAR_ANTI = [T("region", In("foo", "bar"))]
COMPLEX = [
    T("region", In("foo", "bar", "buzz")),
    T("zone", NotIn("service", "bar", "security", "test")),
]
NODES3 = [
    N("nodeA", region="r1", zone="z11"),
    N("nodeB", region="r1", zone="z12"),
    N("nodeC", region="r2", zone="z21"),
]
SEL1 = {"foo": "bar"}

# (name, pending pod, existing pods, added pod, expected anti counts, expected affinity counts)
ADD_REMOVE = [
    (
        "anti-affinity counts after adding a pod",
        P("pending", labels=SEL1, anti=FOO_BAR_ANTI),
        [P("p1", labels=SEL1, node="nodeA"), P("p2", node="nodeC", anti=FOO_BAR_ANTI)],
        P("added", labels=SEL1, node="nodeB", anti=FOO_BAR_ANTI),
        {("region", "r1"): 2},
        {},
    ),
    (
        "complex anti-affinity counts",
        P("pending", labels=SEL1, anti=COMPLEX),
        [P("p1", labels=SEL1, node="nodeA"), P("p2", node="nodeC", anti=FOO_BAR_ANTI)],
        P("added", labels=SEL1, node="nodeA", anti=COMPLEX),
        {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1},
        {},
    ),
    (
        "affinity counts after adding a pod",
        P("pending", labels=SEL1, aff=COMPLEX),
        [P("p1", labels=SEL1, node="nodeA"), P("p2", node="nodeC", aff=COMPLEX, anti=FOO_BAR_ANTI)],
        P("added", labels=SEL1, node="nodeA", anti=COMPLEX),
        {},
        {("region", "r1"): 2, ("zone", "z11"): 2},
    ),
]


@pytest.mark.parametrize(
    ("pending", "pods", "added", "anti", "aff"),
    [c[1:] for c in ADD_REMOVE],
    ids=[c[0] for c in ADD_REMOVE],
)
def test_counts_follow_added_and_removed_pods(
    pending: api.Pod, pods: list[api.Pod], added: api.Pod, anti: Map, aff: Map
) -> None:
    c = cluster_of(NODES3, pods)
    index = AffinityIndex(c)
    before = incoming_maps(index, c, pending)
    c.add_pod(added)
    assert incoming_maps(index, c, pending) == (aff, anti)
    assert incoming_maps(AffinityIndex(c), c, pending) == (aff, anti)  # a from-scratch count
    c.remove_pod(added.key)
    assert incoming_maps(index, c, pending) == before


# --------------------------------------------------------------------------- property test
KEYS = ("zone", "region", "kubernetes.io/hostname")
TERM_POOL = [
    T("zone", Exists("app")),
    T("kubernetes.io/hostname", In("app", "a")),
    T("region", In("app", "a", "b"), namespaces=["ns1", "ns2"]),
    T("zone", NotIn("tier", "web"), ns_selector=api.LabelSelector()),
    T("region", Exists("tier"), ns_selector=api.LabelSelector((("team", "t1"),))),
    T("zone", labels={"app": "b"}, match_keys=["tier"]),
]
OPS = st.lists(
    st.tuples(st.integers(0, 9), st.integers(0, 7), st.integers(0, 7), st.integers(0, 63)),
    max_size=40,
)


def _node(i: int, bits: int) -> api.Node:
    labels = {"kubernetes.io/hostname": f"n{i}"}
    if bits & 1:
        labels["zone"] = f"z{(bits >> 1) % 3}"
    if bits & 8:
        labels["region"] = f"r{(bits >> 4) % 2}"
    return N(f"n{i}", **labels)


def _pod(i: int, bits: int, node: str) -> api.Pod:
    labels = {}
    if bits & 1:
        labels["app"] = "ab"[(bits >> 1) & 1]
    if bits & 4:
        labels["tier"] = "web" if bits & 8 else "db"
    t1, t2 = TERM_POOL[bits % 6], TERM_POOL[(bits >> 2) % 6]
    kind = (bits >> 4) & 3
    aff: dict[str, Any] = [
        {},
        {"anti": [t1]},
        {"aff": [t1, t2]},
        {
            "paff": [api.WeightedPodAffinityTerm(3, t1)],
            "panti": [api.WeightedPodAffinityTerm(2, t2)],
        },
    ][kind]
    return P(f"q{i}", ns=f"ns{bits % 3}", labels=labels, node=node, **aff)


def _snapshot(index: AffinityIndex, fresh: AffinityIndex) -> None:
    """Every counter and group of ``index`` equals a from-scratch count in ``fresh``."""
    for key, counts in index.counters.items():
        again = fresh.counter(key)
        assert counts.rows == again.rows and counts.total == again.total
        for k in KEYS:
            dom = counts.domain(k, index.table)
            assert dom.tolist() == again.domain(k, fresh.table).tolist()
            assert counts.labelled[k] == int(dom.sum())  # kept, as the array is
    for kind in KINDS:
        assert index.groups[kind].keys() == fresh.groups[kind].keys()
        for gkey, counts in index.groups[kind].items():
            again = fresh.groups[kind][gkey]
            assert counts.rows == again.rows
            k = gkey[1].topology_key
            dom = counts.domain(k, index.table)
            assert dom.tolist() == again.domain(k, fresh.table).tolist()
            assert counts.labelled[k] == int(dom.sum())


@settings(max_examples=60, deadline=None)
@given(OPS)
def test_maintained_counts_equal_a_recount(ops: list[tuple[int, int, int, int]]) -> None:
    c = ClusterState()
    c.namespaces.labels.update({"ns1": {"team": "t1"}, "ns2": {"team": "t2"}})
    index = AffinityIndex(c)
    for n in range(3):
        c.add_node(_node(n, n * 5))
    for op, a, b, bits in ops:
        names = sorted(c.nodes.row_of)
        keys = sorted(c.pods)
        if op == 0:
            c.add_node(_node(a, bits))  # add or relabel
        elif op == 1 and names:
            c.remove_node(names[a % len(names)])
        elif op in (2, 3) and names:
            p = _pod(b, bits, names[a % len(names)])
            if p.key in c.pods:
                c.remove_pod(p.key)
            if op == 2:
                c.add_pod(p)
            else:
                c.assume_pod(p, p.node_name)
        elif op == 4 and keys:
            rec = c.pods[keys[a % len(keys)]]
            if rec.assumed:
                c.forget_pod(rec.pod)
            else:
                c.remove_pod(rec.pod.key)
        elif op == 5 and keys:  # confirm an assumed Pod, or change a bound Pod's labels
            rec = c.pods[keys[a % len(keys)]]
            new = P(rec.pod.name, ns=rec.pod.namespace, node=rec.node, labels=rec.pod.labels)
            new.pod_affinity, new.pod_anti_affinity = (
                rec.pod.pod_affinity,
                rec.pod.pod_anti_affinity,
            )
            if not rec.assumed:
                new.labels = {"app": "ab"[bits & 1]}
            c.add_pod(new)
        elif op >= 6:  # ask, so that counters and domain arrays exist mid-sequence
            t = TERM_POOL[bits % 6]
            counts = index.counter(
                (
                    matcher(
                        pod_terms(P(labels={"tier": "db"}, aff=[t])).required_affinity[0],
                        c.namespaces.labels,
                        index.pod_namespaces,
                    ),
                )
            )
            counts.domain(t.topology_key, c.nodes)
    fresh = AffinityIndex(c, attach=False)
    for rec in c.pods.values():
        fresh.pod_added(rec)
    _snapshot(index, fresh)
    assert sum(index.pod_namespaces.values()) == len(c.pods)


# --------------------------------------------------------------------------- end to end
def _node_manifest(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
    }


def _pod_manifest(i: int) -> dict[str, Any]:
    term = {
        "labelSelector": {"matchLabels": {"color": "green"}},
        "topologyKey": "kubernetes.io/hostname",
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"anti-{i}", "namespace": "default", "labels": {"color": "green"}},
        "spec": {
            "affinity": {
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            },
            "containers": [
                {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "100m"}}}
            ],
        },
    }


def test_anti_affinity_on_hostname_puts_one_pod_per_node() -> None:
    cluster = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [_node_manifest(f"n{i}") for i in range(3)],
    }
    out = kubesched.schedule(cluster, [_pod_manifest(i) for i in range(4)])
    results = [out["pods"][f"default/anti-{i}"] for i in range(4)]
    placed = [r["node"] for r in results if r["result"] == "Scheduled"]
    assert sorted(placed) == ["n0", "n1", "n2"]
    failed = [r for r in results if r["result"] == "Unschedulable"]
    assert len(failed) == 1
    assert failed[0]["message"].startswith(
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."
    )


def test_resolved_namespace_selector_is_kept_until_namespaces_change() -> None:
    """The index keeps a term's resolved ``namespaceSelector`` and resolves it again when a
    namespace's labels change or a namespace gets its first Pod or loses its last."""
    c = cluster_of([N("n1")], namespaces={"a": {"team": "x"}, "b": {"team": "y"}})
    index = AffinityIndex(c)
    by_team = api.LabelSelector((("team", "x"),))
    no_team = api.LabelSelector((), (DoesNotExist("team"),))
    [x] = pod_terms(P(anti=[T("zone", In("app", "web"), ns_selector=by_team)])).required_anti
    [none] = pod_terms(P(anti=[T("zone", In("app", "web"), ns_selector=no_team)])).required_anti
    first = index.matcher(x, c.namespaces.labels)
    assert first.namespaces == {"a"} and index.matcher(x, c.namespaces.labels) is first
    c.namespaces.labels["b"] = {"team": "x"}
    assert index.matcher(x, c.namespaces.labels).namespaces == {"a", "b"}
    c.apply_object({"kind": "Namespace", "metadata": {"name": "a"}}, deleted=True)
    assert index.matcher(x, c.namespaces.labels).namespaces == {"b"}
    assert index.matcher(none, c.namespaces.labels).namespaces == set()
    pod = P("q", ns="undeclared", node="n1")
    c.add_pod(pod)  # a namespace that holds a Pod has no labels unless declared
    assert index.matcher(none, c.namespaces.labels).namespaces == {"undeclared"}
    c.remove_pod(pod.key)
    assert index.matcher(none, c.namespaces.labels).namespaces == set()
    for term in (x, none):
        want = matcher(term, c.namespaces.labels, index.pod_namespaces)
        assert index.matcher(term, c.namespaces.labels) == want


def test_matched_groups_are_kept_by_the_label_values_terms_read() -> None:
    """The groups selecting a Pod are remembered per namespace and the values of the label
    keys the groups' selectors read: Pods that differ in other labels only (a unique label
    per Pod, as upstream's scheduler_perf gives) share one answer, and each answer is the
    one matching every group's term against the Pod gives."""
    c = cluster_of([N("n1", hostname="n1"), N("n2", hostname="n2")])
    index = AffinityIndex(c)
    c.add_pod(P("web", ns="subteam1.team1", node="n1", anti=[T("hostname", In("app", "web"))]))
    c.add_pod(P("db", ns="subteam1.team1", node="n2", aff=[T("hostname", NotIn("tier", "x"))]))
    answers = []
    for i in range(12):
        app = ("web", "db", None)[i % 3]
        tier = None if i % 2 else "x"
        labels = {
            "unique": f"u{i}",
            **({"app": app} if app else {}),
            **({"tier": tier} if tier else {}),
        }
        pod = P(f"q{i}", ns="subteam1.team1", labels=labels)
        got = index.matching_groups(pod)
        own = c.namespaces.labels.get(pod.namespace) or {}
        want = tuple(
            (kind, gkey)
            for kind, groups in enumerate(index.groups)
            for gkey in groups
            if gkey[1].matches(pod.namespace, pod.labels, own)
        )
        assert got == want
        answers.append(got)
    assert len(set(answers)) == 4  # app=web or not, tier=x or not
    assert len(index._matched) == 6  # app: web, db, absent; tier: x, absent (the pairs met)
