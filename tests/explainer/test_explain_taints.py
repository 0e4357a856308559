"""Taints and tolerations end to end: manifests as kubectl prints them, through ``explain``.

A second, independent guard of two TaintToleration rules that its unit table
(tests/plugins/test_tainttoleration.py) also checks on built objects: a ``NoExecute``
taint filters nodes like ``NoSchedule`` (upstream filters both hard effects), and a
toleration with ``operator: Exists`` and no key tolerates every taint -- of every effect
when it names no effect, only its own effect when it does (upstream
``Toleration.ToleratesTaint``).
"""

from __future__ import annotations

from typing import Any

import kubesched
from tests.explainer.test_explain import as_list, node, pod

TT = "TaintToleration"
UNTOLERATED = "node(s) had untolerated taint(s)"  # v1.34 names no taint


def taint(key: str, value: str, effect: str) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def _cluster() -> dict[str, Any]:
    return as_list(
        node("evict", taints=[taint("maintenance", "now", "NoExecute")]),
        node("hard", taints=[taint("dedicated", "gpu", "NoSchedule")]),
        node("soft", taints=[taint("maintenance", "now", "PreferNoSchedule")]),
        node("small", cpu="1"),
    )


def _explain(*tolerations: dict[str, Any]) -> dict[str, Any]:
    return kubesched.explain(_cluster(), pod("p", cpu="2", tolerations=list(tolerations)))


def test_a_noexecute_taint_filters_the_node() -> None:
    out = _explain()
    evict = out["nodes"]["evict"]
    assert not evict["feasible"] and evict["plugin"] == TT and evict["reasons"] == [UNTOLERATED]
    assert out["selectedNode"] == "soft"  # a PreferNoSchedule taint only scores
    full = kubesched.explain(_cluster(), pod("p", cpu="5"))  # fits nowhere: the summary
    assert "2 node(s) had untolerated taint(s)" in full["message"]  # evict and hard


def test_a_noschedule_toleration_does_not_tolerate_noexecute() -> None:
    no_schedule = {"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}
    assert _explain(no_schedule)["nodes"]["evict"]["reasons"] == [UNTOLERATED]
    no_execute = {
        "key": "maintenance",
        "operator": "Equal",
        "value": "now",
        "effect": "NoExecute",
        "tolerationSeconds": 60,  # how long it may stay once tainted; it schedules all the same
    }
    assert _explain(no_execute)["nodes"]["evict"]["feasible"]


def test_exists_with_an_empty_key_tolerates_every_taint_of_every_effect() -> None:
    out = _explain({"operator": "Exists"})
    nodes = out["nodes"]
    assert [n for n, v in nodes.items() if v["feasible"]] == ["evict", "hard", "soft"]
    # the PreferNoSchedule taint is tolerated as well: no node scores lower for its taints
    assert {nodes[n]["scores"][TT] for n in ("evict", "hard", "soft")} == {100}


def test_exists_with_an_empty_key_and_an_effect_tolerates_only_that_effect() -> None:
    nodes = _explain({"operator": "Exists", "effect": "NoSchedule"})["nodes"]
    assert nodes["hard"]["feasible"] and nodes["soft"]["feasible"]
    assert nodes["evict"]["reasons"] == [UNTOLERATED]
    nodes = _explain({"operator": "Exists", "effect": "NoExecute"})["nodes"]
    assert nodes["evict"]["feasible"]
    assert nodes["hard"]["reasons"] == [UNTOLERATED]
