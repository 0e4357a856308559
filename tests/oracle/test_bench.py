"""``kube-oracle bench`` (upstream's scheduler on scheduler_perf workloads) against
``kubesched bench``: the same arguments, the same perf-dash JSON shape, the same workload.

Small workloads of the public set, so they run in the default suite when the oracle is built
(skipped otherwise, a failure in CI, as the other oracle tests).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kubesched.cli import main
from tests.bench.support import BENCHMARKS


def config() -> str:
    return str(BENCHMARKS / "performance-config.yaml")


def upstream(binary: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary), "bench", *args], capture_output=True, text=True, timeout=300
    )


def ours(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    rc = main(["bench", *args, "--no-progress"])
    return rc, capsys.readouterr().out


def items(path: Path) -> dict[str, dict[str, Any]]:
    doc = json.loads(path.read_text())
    assert doc["version"] == "v1"
    return {
        i["labels"]["Metric"] + "/" + i["labels"].get("result", ""): i for i in doc["dataItems"]
    }


def pods_bound(line: str) -> int:
    m = re.search(r", (\d+) pods bound in ", line)
    assert m, line
    return int(m.group(1))


@pytest.mark.parametrize(
    ("case", "workload"), [("SchedulingBasic", "5Nodes"), ("PreemptionBasic", "5Nodes")]
)
def test_same_workload_same_shape(
    kube_oracle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, workload: str
) -> None:
    args = [config(), "--case", case, "--workload", workload]
    up = upstream(kube_oracle, *args, "-o", str(tmp_path / "up.json"))
    assert up.returncode == 0, up.stderr
    rc, out = ours(capsys, *args, "-o", str(tmp_path / "ours.json"))
    assert rc == 0
    up_line, our_line = up.stdout.strip().splitlines()[-1], out.strip().splitlines()[-1]
    name = f"{case}/{workload}"
    for line in (up_line, our_line):
        assert line.startswith(name + ", ") and " pods/s (p50 " in line
        assert "attempt p50 " in line
    # the same workload: every Pod of it bound once (PreemptionBasic: 20 low, then 5 high
    # that each preempt the 4 of a node)
    assert pods_bound(up_line) == pods_bound(our_line) == {"SchedulingBasic": 15}.get(case, 25)
    up_items, our_items = items(tmp_path / "up.json"), items(tmp_path / "ours.json")
    for key in ("SchedulingThroughput/", "SchedulingAttemptDuration/"):
        a, b = up_items[key], our_items[key]
        assert a["unit"] == b["unit"] and a["labels"] == b["labels"]
        assert a["labels"]["Name"] == name
        assert (
            set(a["data"]) == set(b["data"]) >= {"Average", "Perc50", "Perc90", "Perc95", "Perc99"}
        )
        assert all(v > 0 for v in a["data"].values())
    assert up_items["SchedulingThroughput/"]["unit"] == "pods/s"
    assert up_items["SchedulingAttemptDuration/"]["unit"] == "ms"
    assert up_items["scheduler_scheduling_attempt_duration_seconds/scheduled"]["unit"] == "ms"


def test_unsupported_op_is_an_input_error(kube_oracle: Path, tmp_path: Path) -> None:
    # an op kube-oracle bench does not model: exit 2, op and name given
    cfg = tmp_path / "c.yaml"
    text = Path(config()).read_text()
    cfg.write_text(text.replace("opcode: churn", "opcode: startCollectingProfile", 1))
    (tmp_path / "templates").symlink_to(Path(config()).parent / "templates")
    up = upstream(kube_oracle, str(cfg), "--case", "Unschedulable", "--label", "integration-test")
    assert up.returncode == 2 and up.stdout == ""
    assert "Unschedulable/5Nodes/1Init/10Pods: workloadTemplate[2].opcode" in up.stderr
    assert '"startCollectingProfile" is not supported' in up.stderr


def test_churn_creates_pods_beside_the_workload(
    kube_oracle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Unschedulable's churn op (a too-large high-priority Pod every 200 ms) runs in
    kube-oracle bench as in kubesched bench: the measured Pods all bind beside it."""
    args = [config(), "--case", "Unschedulable", "--workload", "5Nodes/1Init/10Pods"]
    up = upstream(kube_oracle, *args, "-o", str(tmp_path / "up.json"))
    assert up.returncode == 0, up.stderr
    rc, out = ours(capsys, *args, "-o", str(tmp_path / "ours.json"))
    assert rc == 0
    up_line, our_line = up.stdout.strip().splitlines()[-1], out.strip().splitlines()[-1]
    assert pods_bound(up_line) == pods_bound(our_line) == 11


def test_threshold_and_no_match(kube_oracle: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    text = (
        Path(config())
        .read_text()
        .replace(
            "initPods: 5\n      measurePods: 10",
            "initPods: 5\n      measurePods: 10\n    threshold: 1000000",
            1,
        )
    )
    cfg.write_text(text)
    (tmp_path / "templates").symlink_to(Path(config()).parent / "templates")
    up = upstream(kube_oracle, str(cfg), "--case", "SchedulingBasic", "--workload", "5Nodes")
    assert up.returncode == 1
    assert (
        "FAIL: SchedulingBasic/5Nodes: expected SchedulingThroughput Average to be higher"
        in up.stdout
    )
    none = upstream(kube_oracle, config(), "--case", "SchedulingBasic", "--workload", "nope")
    assert none.returncode == 1 and "no workload matches" in none.stderr
