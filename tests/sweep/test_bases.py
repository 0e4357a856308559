"""The other bases: a scheduler_perf workload and a GPU trace replay, varied and measured."""

from __future__ import annotations

from pathlib import Path

import yaml

from kubesched.sweep.run import run_sweep
from kubesched.sweep.spec import load_sweep
from tests.bench.support import basic_case, write_config


def sweep(tmp: Path, base: dict[str, object], vary: dict[str, list[object]]) -> Path:
    doc = {
        "apiVersion": "kubesched.io/v1alpha1",
        "kind": "Sweep",
        "spec": {"base": base, "seeds": [1, 2], "vary": vary},
    }
    path = tmp / "sweep.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_bench_base_with_a_configuration_path_and_client_settings(tmp_path: Path) -> None:
    case = basic_case(params={"nodes": 20, "pods": 40})
    case["schedulerConfigPath"] = "sched.yaml"
    (tmp_path / "sched.yaml").write_text(
        yaml.safe_dump(
            {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
        )
    )
    write_config(tmp_path, [case])
    base = {"bench": {"config": "config.yaml", "workload": "Basic/w"}}
    vary = {"percentageOfNodesToScore": [0, 50]}
    result = run_sweep(load_sweep(str(sweep(tmp_path, base, vary))), workers=0)
    rows = result["rows"]
    assert len(rows) == 4 and not any(r.get("skipped") for r in rows)
    assert all(r["podsScheduled"] == 40 and r["invariantsHold"] for r in rows)
    assert all(r["podsPerSecond"] for r in rows)
    assert result["variants"]["percentageOfNodesToScore=50"]["attempts.scheduled"]["mean"] == 40


def test_replay_base_compares_policies(tmp_path: Path) -> None:
    nodes = ["sn,cpu_milli,memory_mib,gpu,model"]
    nodes += [f"n{i},96000,786432,8,V100M32" for i in range(12)]
    pods = ["name,cpu_milli,memory_mib,num_gpu,gpu_milli"]
    shapes = [(1, 1000), (1, 500), (2, 1000), (1, 250), (4, 1000), (0, 0)]
    pods += [f"p{i},4000,16384,{n},{m}" for i, (n, m) in enumerate(shapes * 10)]
    (tmp_path / "nodes.csv").write_text("\n".join(nodes) + "\n")
    (tmp_path / "pods.csv").write_text("\n".join(pods) + "\n")
    base = {"replay": {"nodes": "nodes.csv", "pods": "pods.csv"}}
    result = run_sweep(
        load_sweep(str(sweep(tmp_path, base, {"policy": ["random", "bestfit", "fgd"]}))),
        workers=0,
    )
    assert result["class"] == "policy"
    assert not any(r.get("skipped") for r in result["rows"]), result["rows"]
    assert result["denominators"]["sameForEveryVariant"]
    for name in ("policy=random", "policy=bestfit", "policy=fgd"):
        v = result["variants"][name]
        assert v["fragmentationPercent"]["mean"] is not None
        assert v["podsScheduled"]["mean"] > 0
