"""Sweeps end to end: a local process pool, this process and a real local Ray head give the
same numbers for the same seeds; the command prints the table and writes the report."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesched.cli import main
from kubesched.sweep.run import run_sweep
from kubesched.sweep.spec import load_sweep
from tests.sweep.support import PCT, write_sweep

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sweep_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_sweep(tmp_path_factory.mktemp("sweep"))


@pytest.fixture(scope="module")
def local(sweep_file: Path) -> dict[str, Any]:
    return run_sweep(load_sweep(str(sweep_file)), workers=2)


def test_local_pool_runs_every_variant_on_the_same_inputs(local: dict[str, Any]) -> None:
    assert local["backend"] == "local"
    assert len(local["rows"]) == len(PCT) * 3
    assert all(r["invariantsHold"] and "skipped" not in r for r in local["rows"])
    d = local["denominators"]
    assert d["sameForEveryVariant"]
    assert set(d["podsSubmittedPerSeed"]) == {"1", "2", "3"}
    assert sorted(local["ranking"]) == sorted(f"percentageOfNodesToScore={p}" for p in PCT)
    for v in local["variants"].values():
        assert v["podsPerSecond"]["n"] == 3


def test_pool_and_this_process_give_identical_numbers(
    sweep_file: Path, local: dict[str, Any]
) -> None:
    serial = run_sweep(load_sweep(str(sweep_file)), workers=0)
    assert serial["fingerprints"] == local["fingerprints"]


def test_command_prints_the_table_and_writes_json_and_report(
    sweep_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, report = tmp_path / "r.json", tmp_path / "report"
    code = main(
        ["sweep", str(sweep_file), "--workers", "0", "--local", "-o", str(out), "--report",
         str(report), "--no-progress"]
    )  # fmt: skip
    assert code == 0
    text = capsys.readouterr().out
    assert "percentageOfNodesToScore=0 (baseline)" in text
    assert "same for every variant: yes" in text
    saved = json.loads(out.read_text())
    assert saved["ranking"] and saved["class"] == "search"
    page = (report / "index.html").read_text()
    assert "Comparison" in page and "percentageOfNodesToScore=100" in page
    assert json.loads((report / "sweep.json").read_text())["fingerprints"] == saved["fingerprints"]


def test_bad_sweep_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_sweep(tmp_path, vary={"percentageOfNodesToScore": [0], "parallelism": [4]})
    assert main(["sweep", str(path), "--workers", "0"]) == 2
    assert "spec.vary" in capsys.readouterr().err


def test_ray_address_without_ray_installed_exits_2(
    sweep_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    assert main(["sweep", str(sweep_file), "--ray-address", "127.0.0.1:1"]) == 2
    assert "kubesched[ray]" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("vary", "check"),
    [
        ({"client.qps": [15, 1000]}, lambda a, b: a["queueP99"]["mean"] > b["queueP99"]["mean"]),
        (
            {"api.latencySeconds": [1.0, 0.005]},
            lambda a, b: a["queueP99"]["mean"] > b["queueP99"]["mean"],
        ),
        ({"shards": [2, 1]}, lambda a, b: a["podsScheduled"] == b["podsScheduled"]),
    ],
    ids=["client", "apiLatency", "shards"],
)
def test_run_variables_change_the_run(tmp_path: Path, vary: dict[str, Any], check: Any) -> None:
    spec = load_sweep(str(write_sweep(tmp_path, vary=vary, seeds=[1])))
    result = run_sweep(spec, workers=0)
    assert not any(r.get("skipped") for r in result["rows"]), result["rows"]
    assert all(r["invariantsHold"] for r in result["rows"])
    first, second = (result["variants"][v.name] for v in spec.variants)
    assert check(first, second)


# ---------------------------------------------------------------------- a real Ray head
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def ray_head() -> Iterator[str]:
    """A Ray head on loopback, started by ``ray start --block`` (stopped with SIGTERM).

    Ray is not imported here: it reads its environment on first import, and the client
    side (:mod:`kubesched.sweep.ray_backend`) must see the loopback settings below first.
    """
    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed (pip install 'kubesched[ray]')")
    port = _free_port()
    tmp = tempfile.mkdtemp(prefix="ksray-", dir="/tmp")  # short: Ray's socket paths
    env = {
        **os.environ,
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # keep the head on 127.0.0.1
        "RAY_AUTH_MODE": "disabled",  # a throwaway loopback cluster
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    cmd = [
        str(Path(sys.executable).parent / "ray"), "start", "--head", "--block",
        f"--port={port}", "--node-ip-address=127.0.0.1", "--num-cpus=2",
        "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={tmp}",
    ]  # fmt: skip
    log = open(os.path.join(tmp, "start.log"), "w")  # noqa: SIM115 - closed at teardown
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 40
        while "Ray runtime started" not in Path(tmp, "start.log").read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("ray head did not start:\n" + Path(tmp, "start.log").read_text())
            time.sleep(0.2)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("RAY_AUTH_MODE", "disabled")
            mp.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
            yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


def sweep_on_ray(sweep: Path, address: str, out: Path, timeout: float) -> dict[str, Any]:
    """``kubesched sweep SWEEP --ray-address ADDRESS -o OUT`` in a fresh process (bounded:
    a Ray client that cannot reach its head retries for minutes)."""
    cmd = [str(Path(sys.executable).parent / "kubesched"), "sweep", str(sweep), "--ray-address",
           address, "-o", str(out), "--no-progress"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "runs on ray" in done.stdout
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def test_ray_head_gives_the_local_numbers(
    ray_head: str, sweep_file: Path, local: dict[str, Any], tmp_path: Path
) -> None:
    on_ray = sweep_on_ray(sweep_file, ray_head, tmp_path / "ray.json", timeout=90)
    assert on_ray["backend"] == "ray"
    assert on_ray["fingerprints"] == local["fingerprints"]
    assert on_ray["ranking"] and on_ray["denominators"] == local["denominators"]


# ---------------------------------------------------------------------- the 5,000-node sweep
@pytest.fixture(scope="module")
def local_5000() -> dict[str, Any]:
    """The acceptance sweep: percentageOfNodesToScore {0,10,20,50,100} x 3 seeds on the
    5,000-node example cluster, on local workers."""
    spec = load_sweep(str(REPO / "examples/sweeps/percentage-of-nodes-to-score.yaml"))
    return run_sweep(spec, workers=2)


@pytest.mark.slow
def test_5000_node_percentage_sweep_locally(local_5000: dict[str, Any]) -> None:
    assert {r["nodes"] for r in local_5000["rows"]} == {5000}
    assert len(local_5000["rows"]) == 15
    assert all(r["invariantsHold"] for r in local_5000["rows"])
    assert local_5000["denominators"]["sameForEveryVariant"]


@pytest.mark.slow
def test_5000_node_percentage_sweep_on_ray(
    ray_head: str, local_5000: dict[str, Any], tmp_path: Path
) -> None:
    sweep = REPO / "examples/sweeps/percentage-of-nodes-to-score.yaml"
    on_ray = sweep_on_ray(sweep, ray_head, tmp_path / "ray.json", timeout=600)
    assert on_ray["fingerprints"] == local_5000["fingerprints"]
