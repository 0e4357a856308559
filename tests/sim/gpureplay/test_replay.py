"""The GPU trace replay: loaders, the paper's protocol, determinism, the CLI, and (slow) the
published baselines on the real trace."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from kubesched.api.errors import InputError
from kubesched.cli import main
from kubesched.devices.policies import POLICIES
from kubesched.sim.gpureplay import protocol, replay, runner, traces

NODES = """sn,cpu_milli,memory_mib,gpu,model
n0,32000,131072,8,G2
n1,16000,65536,2,T4
n2,8000,32768,1,P100
n3,32000,131072,4,V100M16
"""
PODS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos
p0,2000,4096,1,500,,LS
p1,2000,4096,1,1000,,LS
p2,4000,8192,2,1000,,LS
p3,1000,2048,1,250,T4,LS
p4,4000,8192,0,0,,BE
p5,2000,4096,1,300,,LS
p6,8000,16384,4,1000,V100M16,LS
p7,1000,1024,1,750,,LS
"""
TRACE = Path(
    os.environ.get("GPU_TRACE", Path(__file__).resolve().parents[3] / "data" / "gpu-v2023")
)
"""The public Alibaba GPU trace (cluster-trace-gpu-v2023), if downloaded: not in the repository."""


@pytest.fixture()
def tiny(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "nodes.csv").write_text(NODES)
    (tmp_path / "pods.csv").write_text(PODS)
    return tmp_path / "nodes.csv", tmp_path / "pods.csv"


def test_loaders(tiny: tuple[Path, Path]) -> None:
    nodes, pods = traces.load_nodes(tiny[0]), traces.load_pods(tiny[1])
    assert nodes.gpu_capacity_milli == 15000 and nodes.models == ("G2", "T4", "P100", "V100M16")
    assert pods.milli.tolist() == [500, 1000, 1000, 250, 0, 300, 1000, 750]
    assert pods.specs[pods.spec[3]] == ("T4",) and pods.specs[pods.spec[0]] == ()


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("name,cpu_milli\np,1\n", "missing column"),
        ("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,x,1,0,0\n", "line 2: cpu_milli"),
        ("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,2,500\n", "line 2: gpu_milli"),
    ],
)
def test_bad_pod_list(tmp_path: Path, text: str, fragment: str) -> None:
    (tmp_path / "p.csv").write_text(text)
    with pytest.raises(InputError, match=fragment):
        traces.load_pods(tmp_path / "p.csv")


def test_workload_resamples_to_ratio(tiny: tuple[Path, Path]) -> None:
    pods = traces.load_pods(tiny[1])
    req = pods.num * pods.milli
    order = protocol.workload(pods, 15000, seed=7)
    assert sorted(order[: len(pods)].tolist()) == list(range(len(pods)))  # all, shuffled
    total = int(req[order].sum())
    assert total <= 1.3 * 15000 < total + 4000  # stops before exceeding 130 %
    again = protocol.workload(pods, 15000, seed=7)
    assert np.array_equal(order, again)
    # a list above the ratio is cut at random
    cut = protocol.workload(pods, 3000, seed=7)
    assert int(req[cut].sum()) <= 1.3 * 3000 and len(set(cut.tolist())) == cut.size


@pytest.mark.parametrize("policy", POLICIES)
def test_replay_is_deterministic_and_consistent(tiny: tuple[Path, Path], policy: str) -> None:
    nodes, pods = traces.load_nodes(tiny[0]), traces.load_pods(tiny[1])
    a = replay.replay(nodes, pods, policy, seed=5)
    b = replay.replay(nodes, pods, policy, seed=5)
    assert np.array_equal(a.node, b.node) and np.array_equal(a.allocated, b.allocated)
    order = protocol.workload(pods, nodes.gpu_capacity_milli, 5)
    placed = a.node >= 0
    assert a.allocated[-1] == int((pods.num * pods.milli)[order][placed].sum())
    assert (np.diff(a.allocated) >= 0).all() and a.allocated[-1] <= 15000
    # typed tasks only ever land on their model
    for k in np.flatnonzero(placed):
        spec = pods.specs[pods.spec[order[k]]]
        assert not spec or nodes.models[nodes.model[a.node[k]]] in spec


def test_curve_and_document(tiny: tuple[Path, Path]) -> None:
    res = runner.run_seeds(*tiny, "fgd", [1, 2])
    doc = runner.replay_document(res)
    assert set(doc) == {
        "policy",
        "seeds",
        "gpuCapacity",
        "curve",
        "at",
        "failedPods",
        "failedForWholeNode",
    }
    assert len(doc["failedForWholeNode"]) == 2
    assert doc["seeds"] == [1, 2] and doc["gpuCapacity"] == 15 and len(doc["failedPods"]) == 2
    assert set(doc["at"]) == {"100", "130"}
    point = doc["curve"][0]
    assert set(point) == {
        "arrivedPercent",
        "unallocatedGpuPercent",
        "fragmentationPercent",
        "idleWholeGpuNodes",
    }


@pytest.mark.parametrize(("num", "counted"), [(2, True), (4, False)])
def test_failed_for_lack_of_a_whole_node(tmp_path: Path, num: int, counted: bool) -> None:
    # three 1-GPU nodes: 2 GPUs are idle in all but on no one node; 4 are not idle at all
    (tmp_path / "n.csv").write_text(
        "sn,cpu_milli,memory_mib,gpu,model\n" + "".join(f"n{i},8000,8192,1,T4\n" for i in range(3))
    )
    (tmp_path / "p.csv").write_text(
        f"name,cpu_milli,memory_mib,num_gpu,gpu_milli\nz,1000,1024,{num},1000\n"
    )
    nodes, pods = traces.load_nodes(tmp_path / "n.csv"), traces.load_pods(tmp_path / "p.csv")
    res = replay.replay(nodes, pods, "kubesched", seed=1, ratio=2.0)
    assert res.failed >= 1 and res.waited_whole == (res.failed if counted else 0)


def test_curve_discretisation() -> None:
    cap = 1000
    arrived = np.array([100, 200, 990, 1000, 1004])
    allocated = np.array([100, 200, 900, 900, 904])
    curve = protocol.curve(arrived, allocated, np.zeros(5), np.zeros(5, dtype=np.int64), cap)
    pts = {p.arrived_percent: p for p in curve}
    assert pts[100].unallocated_gpu_percent == pytest.approx(100 - (90 + 90.4) / 2)
    assert pts[99].unallocated_gpu_percent == pytest.approx(10.0)  # 99.0 % rounds to 99
    assert 50 not in pts and pts[21].unallocated_gpu_percent == pytest.approx(80.0)


def test_cli_replay(tiny: tuple[Path, Path], tmp_path: Path) -> None:
    out, png = tmp_path / "out.json", tmp_path / "fig.png"
    argv = ["replay", "--nodes", str(tiny[0]), "--pods", str(tiny[1]), "--policy", "fgd"]
    more = ["--policy", "kubesched", "--seed", "1", "-o", str(out), "--plot", str(png)]
    assert main([*argv, *more]) == 0
    docs = json.loads(out.read_text())
    assert [d["policy"] for d in docs] == ["fgd", "kubesched"]
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert main([*argv[:5], "--policy", "nope"]) == 2


@pytest.mark.slow
@pytest.mark.skipif(not TRACE.exists(), reason="trace data not present")
@pytest.mark.parametrize(("policy", "low", "high"), [("bestfit", 6.3, 7.9), ("fgd", 4.2, 5.3)])
def test_published_baselines_on_default_trace(policy: str, low: float, high: float) -> None:
    nodes = traces.load_nodes(TRACE / "openb_node_list_gpu_node.csv")
    pods = traces.load_pods(TRACE / "openb_pod_list_default.csv")
    # no wall-clock bound here: speed is benchmarks/gpu_replay_all.py's (seconds per replay)
    res = replay.replay(nodes, pods, policy, seed=42)
    at = {p.arrived_percent: p for p in res.curve()}
    assert low <= at[100].unallocated_gpu_percent <= high
    assert at[0].fragmentation_percent == pytest.approx(13.9, abs=0.3)  # paper: ~14 %
