"""kubesched.explain with extenders: each extender's verdict and score per node."""

from __future__ import annotations

from typing import Any

import kubesched
from tests.scheduler.extender_server import ExtenderServer, prefer, sent_names


def node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default"},
    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
}


def config(*extenders: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "extenders": list(extenders),
    }


def licence_filter(args: dict[str, Any]) -> dict[str, Any]:
    names = sent_names(args)
    return {
        "NodeNames": [n for n in names if n != "n0"],
        "FailedAndUnresolvableNodes": {"n0": "no licence on n0"},
    }


def test_explain_shows_verdicts_scores_and_the_rejecting_extender() -> None:
    cluster = {"apiVersion": "v1", "kind": "List", "items": [node("n0"), node("n1"), node("n2")]}
    with (
        ExtenderServer(filter=licence_filter) as lic,
        ExtenderServer(prioritize=prefer({"n2": 7})) as cost,
    ):
        out = kubesched.explain(
            cluster,
            POD,
            config(
                {"urlPrefix": lic.url, "filterVerb": "filter", "nodeCacheCapable": True},
                {"urlPrefix": cost.url, "prioritizeVerb": "prioritize", "weight": 2},
            ),
        )
    assert out["result"] == "Scheduled" and out["selectedNode"] == "n2"
    n0, n1, n2 = (out["nodes"][n] for n in ("n0", "n1", "n2"))
    assert n0["feasible"] is False
    assert n0["plugin"] == "Extender" and n0["extender"] == lic.url
    assert n0["reasons"] == ["no licence on n0"]
    assert n0["extenders"] == {
        lic.url: {"verdict": "UnschedulableAndUnresolvable", "reasons": ["no licence on n0"]}
    }
    assert n1["extenders"][lic.url]["verdict"] == "Passed"
    assert n2["extenders"][cost.url] == {
        "verdict": "Passed",
        "reasons": [],
        "score": 7,
        "weightedScore": 140,
    }
    assert n2["score"] - n1["score"] == 140  # same plugin scores; the extender decides
    assert n2["scores"] == n1["scores"]
    assert len(lic.calls("filter")) == 1 and len(cost.calls("prioritize")) == 1


def test_explain_reports_a_failing_extender_as_an_error() -> None:
    cluster = {"apiVersion": "v1", "kind": "List", "items": [node("n0")]}
    with ExtenderServer() as srv:
        srv.status["f"] = 502
        out = kubesched.explain(cluster, POD, config({"urlPrefix": srv.url, "filterVerb": "f"}))
    assert out["result"] == "Error"
    assert out["message"] == f"failed f with extender at URL {srv.url}/f, code 502"


def test_without_extenders_the_node_keys_are_unchanged() -> None:
    cluster = {"apiVersion": "v1", "kind": "List", "items": [node("n0")]}
    out = kubesched.explain(cluster, POD)
    assert set(out["nodes"]["n0"]) == {"feasible", "plugin", "reasons", "score", "scores"}


def test_text_report_names_the_rejecting_extender() -> None:
    from kubesched.report.text import explain_table

    cluster = {"apiVersion": "v1", "kind": "List", "items": [node("n0"), node("n1")]}
    with ExtenderServer(filter=licence_filter) as lic:
        out = kubesched.explain(
            cluster, POD, config({"urlPrefix": lic.url, "filterVerb": "filter"})
        )
    (line,) = [ln for ln in explain_table(out).splitlines() if ln.lstrip().startswith("n0")]
    assert f"rejected by Extender {lic.url}" in line and "no licence on n0" in line
