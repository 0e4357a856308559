"""NodeAffinity: upstream ``node_affinity_test.go`` tables (filter, score, hints) as data."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kubesched.api import objects as api
from kubesched.api.errors import InputError
from kubesched.config.args import NodeAffinityArgs
from kubesched.framework.interface import (
    Code,
    CycleState,
    Handle,
    Status,
)
from kubesched.plugins import nodeaffinity as na
from kubesched.testing import make_cluster, make_node, make_pod

UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
POD = Status(UU, (na.ERR_REASON_POD,))
ENFORCED = Status(UU, (na.ERR_REASON_ENFORCED,))
CONFLICT = Status(UU, (na.ERR_REASON_CONFLICT,))
SKIP = Status(Code.SKIP)
OK = Status()


def req(key: str, op: str, *values: str) -> api.Requirement:
    return api.Requirement(key, op, values)


def name_in(*names: str) -> api.Requirement:
    return req(na.OBJECT_NAME_FIELD, "In", *names)


def term(*exprs: api.Requirement, fields: tuple[api.Requirement, ...] = ()) -> api.NodeSelectorTerm:
    return api.NodeSelectorTerm(tuple(exprs), fields)


def required(*terms: api.NodeSelectorTerm) -> api.NodeAffinity:
    return api.NodeAffinity(required=tuple(terms))


def preferred(*weighted: tuple[int, api.NodeSelectorTerm]) -> api.NodeAffinity:
    return api.NodeAffinity(preferred=tuple(api.PreferredSchedulingTerm(w, t) for w, t in weighted))


def pod(
    selector: dict[str, str] | None = None, affinity: api.NodeAffinity | None = None
) -> api.Pod:
    b = make_pod("p").node_selector(**(selector or {}))
    if affinity is not None:
        b = b.affinity(affinity)
    return b.obj()


def plugin(added: api.NodeAffinity | None = None) -> na.NodeAffinity:
    cluster = make_cluster([])
    return na.new(NodeAffinityArgs(added) if added else None, Handle(cluster))


FOO_IN_BAR = required(term(req("foo", "In", "bar")))
L1 = {"foo": "bar"}
L2 = {"key": "value"}
L3 = {"az": "az1"}
L4 = {"abc": "az11", "def": "az22"}
L5 = {"foo": "bar", "key": "value", "az": "az1"}


def case(
    name: str,
    the_pod: api.Pod,
    labels: dict[str, str],
    want: Status | None,
    *,
    node: str = "n",
    added: api.NodeAffinity | None = None,
    pre: Status | None = OK,
    names: set[str] | None = None,
    run_pre: bool = True,
) -> object:
    """One upstream TestNodeAffinity row; ``want`` is the Filter status (None = pass)."""
    return pytest.param(the_pod, node, labels, added, run_pre, pre, names, want, id=name)


GPU_NOT_AMD = term(req("GPU", "Exists"), req("GPU", "NotIn", "AMD", "INTER"))
FILTER_CASES = [
    case("missing labels", pod({"foo": "bar"}), {}, POD),
    case("same labels", pod({"foo": "bar"}), {"foo": "bar"}, None),
    case("node labels are superset", pod({"foo": "bar"}), {"foo": "bar", "baz": "blah"}, None),
    case("node labels are subset", pod({"foo": "bar", "baz": "blah"}), {"foo": "bar"}, POD),
    case("In", pod(affinity=required(term(req("foo", "In", "bar", "value2")))), L1, None),
    case(
        "Gt",
        pod(affinity=required(term(req("kernel-version", "Gt", "0204")))),
        {"kernel-version": "0206"},
        None,
    ),
    case(
        "NotIn",
        pod(affinity=required(term(req("mem-type", "NotIn", "DDR", "DDR2")))),
        {"mem-type": "DDR3"},
        None,
    ),
    case("Exists", pod(affinity=required(term(req("GPU", "Exists")))), {"GPU": "K1"}, None),
    case("no match", pod(affinity=required(term(req("foo", "In", "v1", "v2")))), L1, POD),
    case("empty MatchExpressions matches nothing", pod(affinity=required(term())), L1, POD),
    case("no affinity", pod(), L1, None, pre=SKIP),
    case("zero terms match nothing", pod(affinity=required()), L1, POD),
    case("affinity without required", pod(affinity=api.NodeAffinity()), L1, None, pre=SKIP),
    case("ANDed expressions match", pod(affinity=required(GPU_NOT_AMD)), {"GPU": "K1"}, None),
    case(
        "ANDed expressions don't match",
        pod(affinity=required(term(req("GPU", "Exists"), req("GPU", "In", "AMD", "INTER")))),
        {"GPU": "K1"},
        POD,
    ),
    case(
        "terms ORed",
        pod(
            affinity=required(
                term(req("foo", "In", "bar", "value2")),
                term(req("diffkey", "In", "wrong", "value2")),
            )
        ),
        L1,
        None,
    ),
    case("affinity and nodeSelector", pod(L1, required(term(req("foo", "Exists")))), L1, None),
    case(
        "affinity matches but nodeSelector doesn't",
        pod(L1, required(term(req("foo", "Exists")))),
        {"foo": "barrrrrr"},
        POD,
    ),
    case(
        "invalid value in affinity term",
        pod(affinity=required(term(req("foo", "NotIn", "invalid value: ___@#$%^")))),
        L1,
        POD,
    ),
    case(
        "matchFields In matches",
        pod(affinity=required(term(fields=(name_in("node1"),)))),
        {},
        None,
        node="node1",
        names={"node1"},
    ),
    case(
        "matchFields In doesn't match",
        pod(affinity=required(term(fields=(name_in("node1"),)))),
        {},
        POD,
        node="node2",
        names={"node1"},
    ),
    case(
        "two terms: matchFields doesn't match, matchExpressions does",
        pod(
            affinity=required(
                term(fields=(name_in("node1"), name_in("node2"))), term(req("foo", "In", "bar"))
            )
        ),
        L1,
        None,
        node="node2",
    ),
    case(
        "one term: matchFields doesn't match, matchExpressions does",
        pod(affinity=required(term(req("foo", "In", "bar"), fields=(name_in("node1"),)))),
        L1,
        POD,
        node="node2",
        names={"node1"},
    ),
    case(
        "one term: both match",
        pod(affinity=required(term(req("foo", "In", "bar"), fields=(name_in("node1"),)))),
        L1,
        None,
        node="node1",
        names={"node1"},
    ),
    case(
        "two terms: neither matches",
        pod(
            affinity=required(
                term(fields=(name_in("node1"),)), term(req("foo", "In", "not-match-to-bar"))
            )
        ),
        L1,
        POD,
        node="node2",
    ),
    case(
        "two terms of node.Name affinity",
        pod(affinity=required(term(fields=(name_in("node1"),)), term(fields=(name_in("node2"),)))),
        {},
        None,
        node="node2",
        names={"node1", "node2"},
    ),
    case(
        "two conflicting matchFields requirements",
        pod(affinity=required(term(fields=(name_in("node1"), name_in("node2"))))),
        L1,
        POD,
        node="node2",
        pre=CONFLICT,
    ),
    case(
        "matches added affinity and Pod's node affinity",
        pod(affinity=required(term(req("zone", "In", "foo")))),
        {"zone": "foo"},
        None,
        node="node2",
        added=required(term(fields=(name_in("node2"),))),
    ),
    case(
        "matches added affinity but not Pod's node affinity",
        pod(affinity=required(term(req("zone", "In", "bar")))),
        {"zone": "foo"},
        POD,
        node="node2",
        added=required(term(fields=(name_in("node2"),))),
    ),
    case(
        "doesn't match added affinity",
        pod(),
        {"zone": "foo"},
        ENFORCED,
        node="node2",
        added=required(term(req("zone", "In", "bar"))),
    ),
    case("nodeSelector without PreFilter", pod(L1), {**L1, "baz": "blah"}, None, run_pre=False),
    case(
        "affinity without PreFilter",
        pod(affinity=required(GPU_NOT_AMD)),
        {"GPU": "K1"},
        None,
        run_pre=False,
    ),
]


@pytest.mark.parametrize(
    ("pod", "node", "labels", "added", "run_pre", "want_pre", "want_names", "want"),
    FILTER_CASES,
)
def test_filter(
    pod: api.Pod,
    node: str,
    labels: dict[str, str],
    added: api.NodeAffinity | None,
    run_pre: bool,
    want_pre: Status | None,
    want_names: set[str] | None,
    want: Status | None,
) -> None:
    cluster = make_cluster([make_node(node).labels(**labels).obj()])
    p = plugin(added)
    state = CycleState()
    if run_pre:
        result, status = p.pre_filter(state, pod, cluster)
        assert status == want_pre
        got_names = None if result is None else set(result.node_names or ())
        assert got_names == want_names
    verdict = p.filter(state, pod, cluster, cluster.nodes.order())
    code = int(verdict.codes[0])
    assert (verdict.table[code] if code else None) == want


def node(name: str = "n", **labels: str) -> api.Node:
    return make_node(name).labels(**labels).obj()


# Operators over a mixed cluster: (requirement, names of nodes that match)
NODES = [
    node("a", tier="1", zone="z1"),
    node("b", tier="10", zone="z2"),
    node("c", tier="x", zone="z1"),
    node("d", zone="z3"),
    node("e", tier="0204"),
]
OPERATOR_CASES = [
    (req("tier", "Gt", "5"), {"b", "e"}),
    (req("tier", "Lt", "5"), {"a"}),
    (req("tier", "Exists"), {"a", "b", "c", "e"}),
    (req("tier", "DoesNotExist"), {"d"}),
    (req("zone", "In", "z1", "z9"), {"a", "c"}),
    (req("zone", "NotIn", "z1"), {"b", "d", "e"}),
    (req("zone", "In", "nowhere"), set()),
    (req("nolabel", "NotIn", "x"), {"a", "b", "c", "d", "e"}),
    (req("tier", "Gt", "-1"), set()),  # "-1" is not a valid label value: term invalid
    (req("tier", "Gt", "1", "2"), set()),  # exactly one value required
    (req("tier", "In"), set()),  # In needs values
    (req("tier", "Exists", "1"), set()),  # Exists takes none
    (req("tier", "Matches", "1"), set()),  # unknown operator
    (req("bad key!", "Exists"), set()),
]


@pytest.mark.parametrize(
    ("requirement", "want"),
    OPERATOR_CASES,
    ids=lambda x: str(sorted(x)) if isinstance(x, set) else str(x)[:60],
)
def test_operators_vectorised_and_scalar(requirement: api.Requirement, want: set[str]) -> None:
    cluster = make_cluster(NODES)
    p = plugin()
    the_pod = pod(affinity=required(term(requirement)))
    state = CycleState()
    p.pre_filter(state, the_pod, cluster)
    rows = cluster.nodes.order()
    verdict = p.filter(state, the_pod, cluster, rows)
    passed = {cluster.nodes.names[r] for r in rows[verdict.codes == 0]}
    assert passed == want
    scalar = {
        n.name for n in NODES if na.match_node_selector_terms([term(requirement)], n.labels, n.name)
    }
    assert scalar == want


@pytest.mark.parametrize("label", ["1" * 5000, "9" * 20, "5\n", "1_000", "\u0665", " 5", "+"])
def test_a_label_go_does_not_read_as_an_int64_matches_no_gt_or_lt(label: str) -> None:
    """``Gt``/``Lt`` read a label as Go's ``strconv.ParseInt(s, 10, 64)`` does: a number
    beyond int64 (or beyond Python's 4,300 digits: no ``ValueError``), a trailing newline,
    an underscore, another script's digit or a space is no number, so it matches neither."""
    assert api.parse_int64(label) is None
    nodes = [node("a", tier=label), node("b", tier="7")]
    cluster = make_cluster(nodes)
    for op, bound in (("Gt", "0"), ("Lt", "9")):
        requirement = req("tier", op, bound)
        the_pod = pod(affinity=required(term(requirement)))
        p = plugin()
        state = CycleState()
        p.pre_filter(state, the_pod, cluster)
        rows = cluster.nodes.order()
        verdict = p.filter(state, the_pod, cluster, rows)
        assert {cluster.nodes.names[r] for r in rows[verdict.codes == 0]} == {"b"}
        matched = {
            n.name
            for n in nodes
            if na.match_node_selector_terms([term(requirement)], n.labels, n.name)
        }
        assert matched == {"b"}
        terms = (term(requirement),)
        assert api.node_selector_matches(terms, "b", nodes[1].labels)
        assert not api.node_selector_matches(terms, "a", nodes[0].labels)


def test_match_fields_not_in_and_other_field_keys() -> None:
    cluster = make_cluster(NODES)
    terms = [term(fields=(req(na.OBJECT_NAME_FIELD, "NotIn", "a"),))]
    the_pod = pod(affinity=required(*terms))
    verdict = plugin().filter(CycleState(), the_pod, cluster, cluster.nodes.order())
    assert verdict.codes.tolist() == [2, 0, 0, 0, 0]
    other = pod(affinity=required(term(fields=(req("metadata.namespace", "In", "x"),))))
    assert (plugin().filter(CycleState(), other, cluster, cluster.nodes.order()).codes == 2).all()


def test_added_affinity_checked_before_pod_affinity() -> None:
    cluster = make_cluster([node("a", zone="z1"), node("b", zone="z2"), node("c")])
    p = plugin(required(term(req("zone", "Exists"))))
    the_pod = pod(affinity=required(term(req("zone", "In", "z1"))))
    verdict = p.filter(CycleState(), the_pod, cluster, cluster.nodes.order())
    assert verdict.codes.tolist() == [0, 2, 1]
    assert verdict.table[1] == ENFORCED and verdict.table[2] == POD


def test_rows_subset_and_order() -> None:
    cluster = make_cluster(NODES)
    rows = np.array([cluster.nodes.row_of["e"], cluster.nodes.row_of["a"]], dtype=np.int64)
    the_pod = pod(affinity=required(term(req("tier", "Gt", "100"))))
    assert plugin().filter(CycleState(), the_pod, cluster, rows).codes.tolist() == [0, 2]


def test_new_rejects_bad_args() -> None:
    cluster = make_cluster([])
    with pytest.raises(TypeError):
        na.new(object(), Handle(cluster))
    bad = required(term(req("zone", "Gt", "x")))
    with pytest.raises(InputError) as exc:
        na.new(NodeAffinityArgs(bad), Handle(cluster))
    assert exc.value.problems[0][0].startswith(
        "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
    )


def test_vectorised_filter_agrees_with_scalar_match_on_random_cases() -> None:
    rng = random.Random(7)
    keys, vals = ["a", "b", "c"], ["1", "2", "10", "x", ""]
    ops = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    nodes = [
        node(f"n{i}", **{k: rng.choice(vals) for k in keys if rng.random() < 0.7})
        for i in range(40)
    ]
    cluster = make_cluster(nodes)
    rows = cluster.nodes.order()
    for _ in range(200):
        terms = []
        for _ in range(rng.randint(0, 3)):
            exprs = []
            for _ in range(rng.randint(0, 3)):
                op = rng.choice(ops)
                n_vals = {"Exists": 0, "DoesNotExist": 0, "Gt": 1, "Lt": 1}.get(op, 2)
                exprs.append(req(rng.choice(keys), op, *rng.sample(vals, n_vals)))
            fields = (name_in(f"n{rng.randrange(40)}"),) if rng.random() < 0.2 else ()
            terms.append(term(*exprs, fields=fields))
        selector = {"a": rng.choice(vals)} if rng.random() < 0.3 else {}
        the_pod = pod(selector, required(*terms))
        verdict = plugin().filter(CycleState(), the_pod, cluster, rows)
        want = [
            all(n.labels.get(k) == v for k, v in selector.items())
            and na.match_node_selector_terms(terms, n.labels, n.name)
            for n in nodes
        ]
        assert (verdict.codes == 0).tolist() == want
