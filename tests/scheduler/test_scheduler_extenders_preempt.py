"""Extenders' preempt verb end to end: DefaultPreemption sends its candidates to a real HTTP
extender on loopback, which may drop nodes or change victims (upstream ``callExtenders``)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.config.load import load_config
from kubesched.framework.interface import Victims
from kubesched.plugins.registry import known_plugin_names
from kubesched.scheduler import Scheduler
from kubesched.scheduler.extenders import Extenders
from kubesched.testing import FakeApi, make_node, make_pod
from tests.scheduler.extender_server import ExtenderServer, preempt_only, sent_victims

GPU = "example.com/gpu"


def scheduler(*extenders: dict[str, Any]) -> tuple[Scheduler, FakeApi]:
    """Nodes n0..n2 (4 CPUs), each full with one Pod ``low<i>`` of priority ``10 * i``, and
    ``n2`` also running ``extra`` (no requests, priority 5): without extenders, preemption
    picks n0 (lowest victim priority)."""
    raw = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "extenders": list(extenders),
    }
    fake = FakeApi()
    cfg = load_config(raw, known_plugins=known_plugin_names())
    s = Scheduler(cfg, clock=lambda: 0.0, api_client=fake)
    for i in range(3):
        s.on_node_add(make_node(f"n{i}").cap(cpu="4", memory="8Gi", pods=20).obj())
        s.on_pod_add(make_pod(f"low{i}").req(cpu="4").priority(10 * i).node(f"n{i}").obj())
    s.on_pod_add(make_pod("extra").priority(5).node("n2").obj())
    return s, fake


def preempt(s: Scheduler) -> tuple[str, tuple[str, ...], str]:
    """Schedule ``high`` (needs a whole node): (nominated node, victims, failure message)."""
    s.on_pod_add(make_pod("high").req(cpu="4").priority(100).obj())
    s.schedule_one()
    if s.extenders is not None:
        s.extenders.close()
    node, victims = s.preemptions.get("default/high", ("", ()))
    return node, tuple(k.split("/")[1] for k in victims), s.failures["default/high"][1]


def ext(url: str, **extra: Any) -> dict[str, Any]:
    return {"urlPrefix": url, "preemptVerb": "preempt", **extra}


def test_without_a_preempt_verb_nothing_is_sent() -> None:
    with ExtenderServer(preempt=preempt_only("n2")) as srv:
        s, fake = scheduler({"urlPrefix": srv.url, "filterVerb": "filter"})
        srv.verbs["filter"] = lambda a: {"NodeNames": None, "Nodes": a["Nodes"]}
        assert preempt(s)[:2] == ("n0", ("low0",))
        assert srv.calls("preempt") == []
        assert fake.deleted == ["default/low0"]


@pytest.mark.parametrize("cache_capable", [False, True])
def test_extender_dropping_candidates_moves_the_preemption_in_one_call(
    cache_capable: bool,
) -> None:
    with ExtenderServer(preempt=preempt_only("n2")) as srv:
        s, fake = scheduler(ext(srv.url, nodeCacheCapable=cache_capable))
        node, victims, _ = preempt(s)
        assert (node, victims) == ("n2", ("low2",))
        assert fake.deleted == ["default/low2"]
        calls = srv.calls("preempt")
        assert len(calls) == 1  # one call with every candidate, not one per node
        body = calls[0]
        assert body["Pod"]["metadata"]["name"] == "high"
        assert sent_victims(body) == {f"n{i}": [f"uid-default-low{i}"] for i in range(3)}
        if cache_capable:  # MetaVictims: UIDs only
            assert body["NodeNameToVictims"] is None
            assert body["NodeNameToMetaVictims"]["n0"]["NumPDBViolations"] == 0
        else:  # full v1.Pod manifests
            assert body["NodeNameToMetaVictims"] is None
            assert body["NodeNameToVictims"]["n1"]["Pods"][0]["spec"]["priority"] == 10


def test_extender_may_change_victims_to_any_pod_on_the_node() -> None:
    more = {"n2": ["uid-default-low2", "uid-default-extra"]}
    with ExtenderServer(preempt=preempt_only("n2", victims=more)) as srv:
        s, fake = scheduler(ext(srv.url))
        assert preempt(s)[:2] == ("n2", ("low2", "extra"))
        assert fake.deleted == ["default/low2", "default/extra"]


def test_answered_pdb_violations_count_when_picking() -> None:
    """The answered ``NumPDBViolations`` replaces the scheduler's: n0 (lowest victim) now
    violates a budget, so n1 (none) wins on upstream's first criterion."""

    def answer(args: dict[str, Any]) -> dict[str, Any]:
        sent = sent_victims(args)
        return {
            "NodeNameToMetaVictims": {
                n: {"Pods": [{"UID": u} for u in sent[n]], "NumPDBViolations": int(n == "n0")}
                for n in ("n0", "n1")
            }
        }

    with ExtenderServer(preempt=answer) as srv:
        s, _ = scheduler(ext(srv.url))
        assert preempt(s)[:2] == ("n1", ("low1",))


def test_extenders_run_in_order_each_seeing_the_previous_answer() -> None:
    with (
        ExtenderServer(preempt=preempt_only("n1", "n2")) as first,
        ExtenderServer(preempt=preempt_only("n0", "n1")) as second,
    ):
        s, _ = scheduler(ext(first.url), ext(second.url))
        assert preempt(s)[:2] == ("n1", ("low1",))
        assert set(sent_victims(second.calls("preempt")[0])) == {"n1", "n2"}


def test_extender_dropping_every_candidate_stops_preemption() -> None:
    with (
        ExtenderServer(preempt=lambda a: {"NodeNameToMetaVictims": {}}) as first,
        ExtenderServer(preempt=preempt_only()) as second,
    ):
        s, fake = scheduler(ext(first.url), ext(second.url))
        node, _, msg = preempt(s)
        assert node == "" and fake.deleted == []
        assert "preemption: no candidate node for preemption" in msg
        assert second.calls("preempt") == []  # an empty map ends the loop


def test_uninterested_extender_is_not_called() -> None:
    with ExtenderServer(preempt=preempt_only("n2")) as srv:
        s, _ = scheduler(ext(srv.url, managedResources=[{"name": GPU}]))
        assert preempt(s)[0] == "n0"
        assert srv.calls("preempt") == []


def _bad_status(srv: ExtenderServer) -> None:
    srv.status["preempt"] = 500


def _unknown_uid(srv: ExtenderServer) -> None:
    srv.verbs["preempt"] = preempt_only("n1", victims={"n1": ["uid-default-low0"]})


def _no_victims(srv: ExtenderServer) -> None:
    srv.verbs["preempt"] = preempt_only("n1", "n2", victims={"n1": []})


def _unknown_node(srv: ExtenderServer) -> None:
    srv.verbs["preempt"] = lambda a: {"NodeNameToMetaVictims": {"nx": {"Pods": []}}}


@pytest.mark.parametrize(
    ("breaks", "error", "ignored_node"),
    [
        (_bad_status, "failed preempt with extender at URL {url}/preempt, code 500", "n0"),
        (
            _unknown_uid,
            "extender: {url} claims to preempt pod (UID: &{{uid-default-low0}}) on node: n1, "
            "but the pod is not found on that node",
            "n0",
        ),
        (_no_victims, 'expected at least one victim pod on node "n1"', "n2"),
        (_unknown_node, 'nodeinfo not found for node name "nx"', "n0"),
    ],
)
@pytest.mark.parametrize("ignorable", [False, True])
def test_failing_extender_fails_preemption_unless_ignorable(
    breaks: Any, error: str, ignored_node: str, ignorable: bool
) -> None:
    """Non-ignorable: the preemption fails with the error (no victims, no nomination).
    Ignorable: the extender is skipped, or (no victims on a node) only that node dropped."""
    with ExtenderServer(preempt=preempt_only()) as srv:
        breaks(srv)
        s, fake = scheduler(ext(srv.url, ignorable=ignorable))
        node, _, msg = preempt(s)
        assert len(srv.calls("preempt")) == 1
        if ignorable:
            assert node == ignored_node
            assert fake.deleted == [f"default/low{ignored_node[1]}"]
        else:
            assert node == "" and fake.deleted == []
            assert "preemption: " + error.format(url=srv.url) in msg


def test_preempt_errors_are_counted_with_the_preempt_verb() -> None:
    with ExtenderServer(preempt=preempt_only()) as srv:
        srv.status["preempt"] = 500
        s, _ = scheduler(ext(srv.url, ignorable=True))
        preempt(s)
        labels = {"extender": srv.url, "verb": "preempt", "reason": "error", "ignored": "true"}
        key = ("scheduler_extender_errors_total", tuple(sorted(labels.items())))
        assert s.metrics.samples().get(key) == 1.0


def test_runner_passes_candidates_through_without_preempting_extenders() -> None:
    pod = make_pod("p").obj()
    cands = {"n0": Victims([make_pod("v").obj()], 2)}
    assert Extenders([]).process_preemption(pod, cands, lambda n: None) is cands
