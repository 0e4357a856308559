"""The elastic quota tree: validation, what it allows, reclaim eligibility, invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.admission import objects as o
from kubesched.admission.quota import QuotaTree, check_tree
from kubesched.api.errors import InputError
from kubesched.testing import make_pod

GPU = "nvidia.com/gpu"


def q(
    name: str, lo: int, hi: int | None = None, parent: str = "", weight: int = 1
) -> o.ElasticQuotaSpec:
    return o.ElasticQuotaSpec(
        name, name, {GPU: lo}, {} if hi is None else {GPU: hi}, parent=parent, weight=weight
    )


@pytest.mark.parametrize(
    ("specs", "path", "message"),
    [
        (
            [q("a", 1, parent="ghost")],
            "ElasticQuota/a.metadata.labels[quota.scheduling.koordinator.sh/parent]",
            'parent quota "ghost" not found',
        ),
        (
            [q("a", 1, parent="b"), q("b", 1, parent="a")],
            "ElasticQuota/",
            "cycle in the quota tree",
        ),
        (
            [q("p", 4), q("a", 3, parent="p"), q("b", 2, parent="p")],
            "ElasticQuota/p.spec.min[nvidia.com/gpu]",
            "children's min sum to 5, more than the parent's 4",
        ),
    ],
)
def test_bad_trees_name_object_and_field(
    specs: list[o.ElasticQuotaSpec], path: str, message: str
) -> None:
    problems = check_tree(specs)
    assert problems and problems[0][0].startswith(path) and message in problems[0][1]
    with pytest.raises(InputError):
        QuotaTree(specs)


def test_good_tree_has_no_problems() -> None:
    assert check_tree([q("p", 4), q("a", 2, parent="p"), q("b", 2, parent="p")]) == []


def flat() -> QuotaTree:
    return QuotaTree([q("a", 8, 16), q("b", 8, 16)])


@pytest.mark.parametrize(
    ("used_a", "used_b", "quota", "req", "why"),
    [
        (0, 0, "a", 8, None),
        (0, 0, "a", 16, None),  # borrows b's idle min
        (0, 0, "a", 17, "ElasticQuota a is more than Max"),
        (0, 16, "a", 1, "total ElasticQuota used is more than min"),  # b borrowed everything
        (0, 8, "a", 8, None),
        (8, 8, "b", 1, "total ElasticQuota used is more than min"),
        (4, 4, "b", 8, None),
        (4, 4, "b", 9, "total ElasticQuota used is more than min"),
    ],
)
def test_check_flat(used_a: int, used_b: int, quota: str, req: int, why: str | None) -> None:
    t = flat()
    t.add("x/a", t.index["a"], t.vector({GPU: used_a}))
    t.add("x/b", t.index["b"], t.vector({GPU: used_b}))
    assert t.check(t.index[quota], t.vector({GPU: req})) == why


def test_runtime_quota_in_a_tree_shares_idle_min_by_weight() -> None:
    t = QuotaTree(
        [q("root", 12), q("x", 2, parent="root", weight=1), q("y", 2, parent="root", weight=3)]
    )
    t.add("p/x", t.index["x"], t.vector({GPU: 12}))
    t.add("p/y", t.index["y"], t.vector({GPU: 12}))
    rt = t.runtime()
    # both guarantees (2 + 2), the other 8 shared 1:3
    assert rt[t.index["x"], 0] == 4 and rt[t.index["y"], 0] == 8
    assert rt[t.index["root"], 0] == 12


def test_child_cannot_exceed_its_parents_runtime() -> None:
    t = QuotaTree([q("p", 4, 4), q("a", 2, parent="p"), q("b", 2, parent="p"), q("r", 4)])
    t.add("k/a", t.index["a"], t.vector({GPU: 4}))
    assert t.check(t.index["b"], t.vector({GPU: 1})) == "ElasticQuota p is more than Max"
    assert t.used[t.index["p"], 0] == 4  # charged along the path


def test_pod_to_quota_by_label_then_namespace() -> None:
    t = QuotaTree([q("team-a", 1), q("team-b", 1)])
    assert t.quota_of(make_pod("p", "team-a").obj()) == t.index["team-a"]
    labelled = make_pod("p", "team-a").labels(**{o.QUOTA_NAME_LABEL: "team-b"}).obj()
    assert t.quota_of(labelled) == t.index["team-b"]
    assert t.quota_of(make_pod("p", "other").obj()) is None


@pytest.mark.parametrize(
    ("used_b", "allowed"),
    [
        (16, True),
        (9, True),  # even a victim of 2 GPUs, taking b below its min (upstream)
        (8, False),  # b does not borrow
    ],
)
def test_victims_while_their_quota_is_over_min(used_b: int, allowed: bool) -> None:
    t = flat()
    used = t.used.copy()
    used[t.index["b"], 0] = used_b
    assert t.victim_eligible(t.index["b"], used, t.index["a"]) is allowed


def test_siblings_reclaim_below_a_parent_within_its_min() -> None:
    t = QuotaTree([q("p", 16, 16), q("a", 8, parent="p"), q("b", 8, parent="p")])
    t.add("k/b", t.index["b"], t.vector({GPU: 16}))
    assert t.victim_eligible(t.index["b"], t.used, t.index["a"])


@settings(max_examples=60, deadline=None)
@given(
    mins=st.lists(st.integers(0, 6), min_size=2, max_size=4),
    extra=st.lists(st.integers(0, 6), min_size=4, max_size=4),
    ops=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5), st.booleans()), max_size=40),
)
def test_usage_never_exceeds_what_the_tree_allows(
    mins: list[int], extra: list[int], ops: list[tuple[int, int, bool]]
) -> None:
    """Admit through ``check`` only; usage stays within every max and the pool, and each
    admitted Pod's path stays within its runtime quota at admission."""
    parent_min = sum(mins)
    specs = [q("root", parent_min, parent_min + extra[0])]
    specs += [q(f"c{i}", m, m + extra[i % 4] or None, parent="root") for i, m in enumerate(mins)]
    specs.append(q("solo", extra[1], extra[1] + extra[2]))
    t = QuotaTree(specs)
    leaves = [t.index[s.name] for s in specs if s.name != "root"]
    live: list[str] = []
    for n, (leaf, amount, remove) in enumerate(ops):
        if remove and live:
            t.remove(live.pop(0))
        else:
            lq = leaves[leaf % len(leaves)]
            vec = t.vector({GPU: amount})
            if t.check(lq, vec) is None:
                t.add(f"p/{n}", lq, vec)
                live.append(f"p/{n}")
                rt = t.runtime()
                for a in t.path(lq):
                    assert (t.used[a] <= rt[a]).all()
        assert t.invariant_problems() == []
        total = np.zeros_like(t.used)
        for qi, vec in t.pods.values():
            for a in t.path(qi):
                total[a] += vec
        assert (total == t.used).all()


def test_victims_of_a_quota_over_min_on_one_resource_only() -> None:
    """Upstream ``usedOverMin`` is true when *some* resource exceeds min: b borrows GPUs while
    far below its cpu min, and its Pods are still victims (issue 16)."""
    mins, maxs = {GPU: 8, "cpu": 64_000}, {GPU: 16, "cpu": 128_000}
    t = QuotaTree([o.ElasticQuotaSpec(n, n, mins, maxs) for n in ("a", "b")])
    t.add("b/p", t.index["b"], t.vector({GPU: 9, "cpu": 2_000}))
    assert t.victim_eligible(t.index["b"], t.used, t.index["a"])
    t.remove("b/p")
    t.add("b/p", t.index["b"], t.vector({GPU: 8, "cpu": 2_000}))
    assert not t.victim_eligible(t.index["b"], t.used, t.index["a"])
