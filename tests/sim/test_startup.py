"""Pod startup in four segments in the simulator: the node-side latency model, its
validation, the split in the summary and in the text output."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from kubesched.api.errors import InputError
from kubesched.cli import main
from kubesched.report.text import simulate_summary
from kubesched.sim import startup
from kubesched.sim.apiserver import SimApiServer
from kubesched.sim.engine import EventLoop
from kubesched.sim.scenario import build_scenario
from kubesched.sim.simulate import invariants_hold, run_scenario
from kubesched.testing import make_node, make_pod
from tests.sim.test_job_scenarios import doc


def scenario(workload: dict[str, Any], **timing: float) -> dict[str, Any]:
    return {
        "apiVersion": "kubesched.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "startup"},
        "spec": {
            "seed": 3,
            "durationSeconds": 5,
            "drainSeconds": 30,
            "timing": {"cycleSeconds": 0.001, "bindLatencySeconds": 0.25, **timing},
            "nodePools": [
                {
                    "name": "n",
                    "count": 2,
                    "allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"},
                }
            ],
            "workloads": [
                {
                    "name": "web",
                    "count": 5,
                    "ratePerSecond": 2,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "c", "resources": {"requests": {"cpu": "100m"}}}
                            ]
                        }
                    },
                    **workload,
                }
            ],
        },
    }


def test_the_summary_splits_startup_into_its_segments() -> None:
    s = run_scenario(build_scenario(scenario({"nodeStartupSeconds": 7})))
    assert invariants_hold(s)
    seg = s["podStartupSeconds"]
    assert {k: v["pods"] for k, v in seg.items()} == {
        "admission": 5,
        "scheduling": 5,
        "binding": 5,
        "node": 5,
        "total": 5,
    }
    assert seg["admission"]["p99"] == 0.0  # nothing gates these Pods
    assert seg["binding"]["p50"] == seg["binding"]["p99"] == 0.25  # bindLatencySeconds
    assert seg["node"]["p50"] == seg["node"]["p99"] == 7.0  # nodeStartupSeconds
    assert 0.0 <= seg["scheduling"]["p99"] < 0.01
    parts = sum(seg[k]["p50"] for k in startup.SEGMENTS)
    assert seg["total"]["p50"] == pytest.approx(parts, abs=0.002)
    # queueing time (created -> bound) is the first three segments
    assert s["queueingSeconds"]["p50"] == pytest.approx(parts - 7.0, abs=0.002)
    text = simulate_summary(s)
    assert "startup p50/p99 s     admission 0.0/0.0," in text
    assert "node 7.0/7.0" in text and "(5 pods Ready)" in text


def test_the_bind_client_rate_limit_shows_in_the_binding_segment() -> None:
    slow = run_scenario(
        build_scenario(scenario({"nodeStartupSeconds": 1}, clientQPS=1, clientBurst=1))
    )
    seg = slow["podStartupSeconds"]
    assert seg["binding"]["p99"] > 1.0  # waits for the token bucket, not the node
    assert seg["node"]["p99"] == 1.0


def test_startup_latency_changes_no_placement() -> None:
    def placed(latency: Any) -> tuple[Any, ...]:
        s = run_scenario(build_scenario(scenario({"nodeStartupSeconds": latency})))
        return s["attempts"], s["queueingSeconds"], s["utilization"]

    assert placed(0) == placed({"distribution": "exponential", "meanSeconds": 50})


def test_distributions_draw_what_they_say() -> None:
    rng = np.random.default_rng(0)
    logn = startup.parse_latency(
        {"distribution": "lognormal", "medianSeconds": 2, "p99Seconds": 20}, "x"
    )
    d = logn.draw(rng, 20000)
    assert np.percentile(d, 50) == pytest.approx(2, rel=0.05)
    assert np.percentile(d, 99) == pytest.approx(20, rel=0.1)
    uni = startup.parse_latency({"distribution": "uniform", "minSeconds": 1, "maxSeconds": 3}, "x")
    u = uni.draw(rng, 1000)
    assert u.min() >= 1 and u.max() <= 3
    assert startup.parse_latency(None, "x") == startup.DEFAULT
    assert list(startup.parse_latency(2.5, "x").draw(rng, 2)) == [2.5, 2.5]


P = "spec.workloads[0].nodeStartupSeconds"


@pytest.mark.parametrize(
    ("value", "field", "message"),
    [
        (-1, P, "finite number of seconds >= 0"),
        (float("nan"), P, "finite number of seconds >= 0"),
        (1e9, P, "at most 86400 seconds"),
        ("5s", P, "a number of seconds or a map"),
        (True, P, "a number of seconds or a map"),
        ({"distribution": "gamma"}, f"{P}.distribution", "must be one of constant"),
        ({"distribution": "constant"}, f"{P}.seconds", "required field is missing"),
        ({"distribution": "constant", "seconds": 1, "mean": 2}, f"{P}.mean", "unknown field"),
        ({"distribution": "exponential", "meanSeconds": 0}, f"{P}.meanSeconds", "positive"),
        (
            {"distribution": "uniform", "minSeconds": 3, "maxSeconds": 1},
            f"{P}.maxSeconds",
            "at least minSeconds",
        ),
        (
            {"distribution": "lognormal", "medianSeconds": 5, "p99Seconds": 1},
            f"{P}.p99Seconds",
            "at least medianSeconds",
        ),
        (
            {"distribution": "lognormal", "medianSeconds": "2", "p99Seconds": 9},
            f"{P}.medianSeconds",
            "a number of seconds",
        ),
    ],
)
def test_a_bad_startup_latency_names_its_field(value: Any, field: str, message: str) -> None:
    with pytest.raises(InputError) as e:
        build_scenario(scenario({"nodeStartupSeconds": value}))
    assert e.value.problems[0][0] == field
    assert message in e.value.problems[0][1]


def test_the_api_server_records_ungating_and_readiness() -> None:
    loop = EventLoop()
    server = SimApiServer(loop)
    server.create_node(make_node("n1").cap(cpu="4").obj())
    gated = make_pod("g").req(cpu="1").gates("example.com/gate").obj()
    server.create_pod(gated)
    server.create_pod(make_pod("free").req(cpu="1").obj())
    assert "default/g" not in server.stats.ungated_at
    assert server.stats.ungated_at["default/free"] == 0.0
    loop.call_at(3.0, lambda: server.update_pod(dataclasses.replace(gated, scheduling_gates=())))
    loop.run()
    assert server.stats.ungated_at["default/g"] == 3.0
    free = server.pods["default/free"]
    server.bind(free, "n1")
    bound = server.pods["default/free"]
    server.delete_pod(bound, grace=30)  # terminating: never Ready
    server.pod_ready(bound)
    assert "default/free" not in server.stats.ready_at
    g = server.pods["default/g"]
    server.bind(g, "n1")
    loop.call_at(10.0, lambda: server.pod_ready(server.pods["default/g"]))
    loop.run()
    assert server.stats.ready_at["default/g"] == 10.0


def test_segments_need_both_ends_in_order() -> None:
    ts = startup.Timestamps(
        created={"a": 10.0, "b": 0.0, "c": 50.0},
        ungated={"a": 14.0, "b": 0.0, "c": 50.0},
        scheduled={"a": 15.0, "c": 40.0},  # c: a stale time of an earlier incarnation
        bound={"a": 15.5, "c": 40.1},
        ready={"a": 20.5},
    )
    seg = startup.segments(ts)
    assert seg["admission"] == {"pods": 3, "p50": 0.0, "p99": 3.92}
    assert seg["scheduling"] == {"pods": 1, "p50": 1.0, "p99": 1.0}
    assert seg["binding"]["pods"] == 1 and seg["node"] == {"pods": 1, "p50": 5.0, "p99": 5.0}
    assert seg["total"] == {"pods": 1, "p50": 10.5, "p99": 10.5}


def test_simulate_refuses_a_bad_startup_latency_with_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(scenario({"nodeStartupSeconds": {"distribution": "gamma"}})))
    assert main(["simulate", "--no-progress", str(f)]) == 2
    err = capsys.readouterr().err
    assert str(f) in err and f"{P}.distribution" in err and "Traceback" not in err


def test_simulate_prints_the_segments_in_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "ok.yaml"
    f.write_text(yaml.safe_dump(scenario({"nodeStartupSeconds": 3})))
    assert main(["simulate", "--no-progress", "-o", "json", str(f)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["podStartupSeconds"]["node"] == {"pods": 5, "p50": 3.0, "p99": 3.0}
    assert "queueingSeconds" in out  # added beside the existing keys, none renamed


def test_kueue_admission_is_the_admission_segment() -> None:
    s = run_scenario(build_scenario(doc("kueue_fair_sharing")))
    seg = s["podStartupSeconds"]
    waits = [w["admissionWaitSeconds"] for w in s["workloads"].values() if w.get("admittedAt")]
    assert seg["admission"]["pods"] >= len(waits) > 0
    assert 0 < seg["admission"]["p99"] <= max(waits) + 1e-3  # gated until admitted
    assert seg["scheduling"]["p99"] < 1.0  # admitted Pods fit at once


def test_a_reclaim_s_grace_period_is_in_the_scheduling_segment() -> None:
    seg = run_scenario(build_scenario(doc("borrow_reclaim")))["podStartupSeconds"]
    assert seg["admission"]["p99"] == 0.0
    assert seg["scheduling"]["p99"] >= 30.0  # waiting for the victims' default grace


def test_the_sharded_scheduler_splits_startup_the_same_way() -> None:
    serial = run_scenario(build_scenario(scenario({"nodeStartupSeconds": 2})))
    sharded = run_scenario(build_scenario(scenario({"nodeStartupSeconds": 2})), shards=2)
    for key in ("binding", "node"):
        assert sharded["podStartupSeconds"][key] == serial["podStartupSeconds"][key]
