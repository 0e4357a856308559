"""Bad input on every command: exit code 2, one clear message naming the file (or flag) and
the field path, a short escaped excerpt at most, and no traceback without ``--debug``.

One table (:data:`TABLE`): every hostile file (:data:`badinput_files.HOSTILE`) in every input
slot of every command (:data:`SLOTS`), then the rows for quantities, sizes, scenario
semantics, flags and the one configuration loader.  A new command adds its slots and flags
here and gets the same treatment.  Hypothesis fuzzes the input files on top.
"""

from __future__ import annotations

import json
import math
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.cli import main
from tests import badinput_files as bf
from tests.badinput_files import (
    cluster_with,
    pod_doc,
    pod_with,
    pool,
    scenario,
    scenario_json,
    workload,
)

SIM = ["simulate", "{scenario}", "--no-progress", "-o", "json"]
EXPLAIN = ["explain", "--cluster", "{cluster}", "--pod", "{pod}"]
SCHEDULE = ["schedule", "--cluster", "{cluster}", "--pods", "{pod}"]
RUN = ["run", "--config", "{config}", "--kubeconfig", "{kubeconfig}"]

SLOTS: dict[str, tuple[list[str], bool]] = {
    # slot: (argv with {BAD} in the slot, the slot is a CSV file)
    "explain --cluster": (["explain", "--cluster", "{BAD}", "--pod", "{pod}"], False),
    "explain --pod": (["explain", "--cluster", "{cluster}", "--pod", "{BAD}"], False),
    "explain --config": ([*EXPLAIN, "--config", "{BAD}"], False),
    "schedule --cluster": (["schedule", "--cluster", "{BAD}", "--pods", "{pod}"], False),
    "schedule --pods": (["schedule", "--cluster", "{cluster}", "--pods", "{BAD}"], False),
    "schedule --config": ([*SCHEDULE, "--config", "{BAD}"], False),
    "simulate SCENARIO": (["simulate", "{BAD}", "--no-progress"], False),
    "bench CONFIG": (["bench", "{BAD}", "--no-progress"], False),
    "sweep SWEEP": (["sweep", "{BAD}", "--workers", "0", "--local", "--no-progress"], False),
    "report RESULTS": (["report", "{BAD}", "--out", "{dir}/r"], False),
    "pools --cluster": (["pools", "check", "--cluster", "{BAD}", "--config", "{config}"], False),
    "pools --config": (["pools", "check", "--cluster", "{cluster}", "--config", "{BAD}"], False),
    "run --config": (["run", "--config", "{BAD}", "--kubeconfig", "{kubeconfig}"], False),
    "run --kubeconfig": (["run", "--config", "{config}", "--kubeconfig", "{BAD}"], False),
    "replay --nodes": (["replay", "--nodes", "{BAD}", "--pods", "{pods_csv}"], True),
    "replay --pods": (["replay", "--nodes", "{nodes_csv}", "--pods", "{BAD}"], True),
}
"""Every argument of every command that names an input file."""


@dataclass(frozen=True)
class Row:
    """One bad input: the command line, files replacing good ones, what must be printed."""

    argv: list[str]
    expect: list[str]
    files: dict[str, str | bytes] = field(default_factory=dict)
    hostile: str | None = None
    code: int = 2


def _slot_rows() -> Iterator[tuple[str, Row]]:
    for slot, (argv, csv) in SLOTS.items():
        for name, (_, message, for_csv) in bf.HOSTILE.items():
            expect = ["{BAD}"] + ([message] if message and (for_csv or not csv) else [])
            yield f"{slot} <- {name}", Row(argv, expect, hostile=name)


QUANTITIES: dict[str, Row] = {
    # 8. Quantities beyond int64 (and CSV integers); only ASCII digits are digits.
    "cpu 9E": Row(EXPLAIN, ["{pod}", "requests.cpu", "too large"], {"pod": pod_with("9E")}),
    "schedule cpu 9E": Row(
        SCHEDULE, ["{pod}", "requests.cpu", "too large"], {"pod": pod_with("9E")}
    ),
    "memory 2^64": Row(
        EXPLAIN,
        ["{pod}", "requests.memory", "too large"],
        {"pod": pod_with("1").replace("cpu: '1'", f"memory: '{2**64}'")},
    ),
    "allocatable 2^63": Row(
        EXPLAIN,
        ["{cluster}", "status.allocatable.memory", "too large"],
        {"cluster": cluster_with(memory=str(2**63))},
    ),
    "allocatable 2^63-1 fits": Row(
        EXPLAIN, [], {"cluster": cluster_with(memory=str(2**63 - 1))}, code=0
    ),
    "priority 2^63": Row(
        EXPLAIN, ["{pod}", "spec.priority", "32-bit"], {"pod": pod_with("1", priority=2**63)}
    ),
    "PriorityClass 2^31": Row(
        EXPLAIN,
        ["{cluster}", "items[1].value", "32-bit"],
        {
            "cluster": cluster_with().replace(
                "]}",
                ', {"apiVersion": "scheduling.k8s.io/v1", '
                '"kind": "PriorityClass", "metadata": {"name": "x"}, '
                f'"value": {2**31}}}]}}',
            )
        },
    ),
    "fullwidth digit": Row(EXPLAIN, ["{pod}", "requests.cpu", "\\uff11"], {"pod": pod_with("１")}),
    "scenario pool cpu 9E": Row(
        SIM,
        ["{scenario}", "spec.nodePools[0].status.allocatable.cpu", "too large"],
        {"scenario": scenario(nodePools=pool(allocatable={"cpu": "9E"}))},
    ),
    "replay int64 overflow": Row(
        ["replay", "--nodes", "{nodes_csv}", "--pods", "{pods_csv}"],
        ["{nodes_csv}", "line 2: cpu_milli", str(2**63 - 1)],
        {"nodes_csv": bf.NODES_CSV.replace("32000", str(2**63))},
    ),
    "replay 5000 digits": Row(
        ["replay", "--nodes", "{nodes_csv}", "--pods", "{pods_csv}"],
        ["{nodes_csv}", "line 2: cpu_milli", "a number of 5000 digits"],
        {"nodes_csv": bf.NODES_CSV.replace("32000", "9" * 5000)},
    ),
    "replay fullwidth": Row(
        ["replay", "--nodes", "{nodes_csv}", "--pods", "{pods_csv}"],
        ["{pods_csv}", "line 2: cpu_milli", "not an integer"],
        {"pods_csv": bf.PODS_CSV.replace("1000,1024", "１000,1024")},
    ),
}
BIG = 10**30
NODE_IMAGES = json.dumps(
    {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                **bf.NODE,
                "status": {
                    "allocatable": {"cpu": "4", "pods": "9"},
                    "images": [{"names": ["nginx"], "sizeBytes": 2**63}],
                },
            }
        ],
    }
)
LONG = "1" * 5000
BEYOND_64_BITS: dict[str, Row] = {
    # Integers beyond 64 bits and numbers beyond Python's 4,300 digits, anywhere in a Pod:
    # refused with their field path where the API server refuses them, else taken.
    "memory 10^120": Row(
        EXPLAIN,
        ["{pod}", "requests.memory", "too large"],
        {"pod": pod_with("1").replace("cpu: '1'", f"memory: {10**120}")},
    ),
    "schedule memory 10^120": Row(
        SCHEDULE,
        ["{pod}", "requests.memory", "too large"],
        {"pod": pod_with("1").replace("cpu: '1'", f"memory: {10**120}")},
    ),
    "tolerationSeconds 10^30": Row(
        EXPLAIN,
        ["{pod}", "spec.tolerations[0].tolerationSeconds", "64-bit"],
        {
            "pod": pod_with(
                "1",
                tolerations=[
                    {
                        "key": "k",
                        "operator": "Exists",
                        "effect": "NoExecute",
                        "tolerationSeconds": BIG,
                    }
                ],
            )
        },
    ),
    "affinity weight 10^30": Row(
        EXPLAIN,
        ["{pod}", "preferredDuringSchedulingIgnoredDuringExecution[0].weight"],
        {
            "pod": pod_with(
                "1",
                affinity={
                    "podAntiAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": BIG, "podAffinityTerm": {"topologyKey": "zone"}}
                        ]
                    }
                },
            )
        },
    ),
    "owner reference 10^30": Row(
        EXPLAIN,
        ["{pod}", "metadata.ownerReferences[0].uid", "must be a string"],
        {"pod": json.dumps(pod_doc({"ownerReferences": [{"kind": "ReplicaSet", "uid": BIG}]}))},
    ),
    "hostPort 10^30": Row(
        SCHEDULE,
        ["{pod}", "spec.containers[0].ports[0].hostPort"],
        {
            "pod": json.dumps(
                pod_doc(
                    containers=[{"name": "c", "ports": [{"containerPort": 80, "hostPort": BIG}]}]
                )
            )
        },
    ),
    "10^30 in a field the API server drops is taken": Row(
        EXPLAIN, [], {"pod": json.dumps(pod_doc(notAField=BIG))}, code=0
    ),
    "Node image sizeBytes 2^63": Row(
        EXPLAIN, ["{cluster}", "status.images[0].sizeBytes", "64-bit"], {"cluster": NODE_IMAGES}
    ),
    "5000 digits in JSON": Row(
        EXPLAIN,
        ["{pod}", "line 1", "5000 digits", "4300"],
        {"pod": json.dumps(pod_doc()).replace('"name": "web"', f'"name": "web", "x": {LONG}')},
    ),
    "5000 digits in YAML": Row(
        SCHEDULE, ["{pod}", "line", "5000 digits", "4300"], {"pod": pod_with("1") + f"x: {LONG}\n"}
    ),
    "5000-digit quantity": Row(
        EXPLAIN, ["{pod}", "requests.cpu", "too large"], {"pod": pod_with(LONG)}
    ),
    "5000-digit quantity below a millicore is taken": Row(
        EXPLAIN, [], {"pod": pod_with("0." + "0" * 5000 + "1")}, code=0
    ),
    "unpaired surrogate in a Pod name and image": Row(
        EXPLAIN,
        [],
        {
            "pod": json.dumps(
                pod_doc({"name": "web\ud800"}, containers=[{"name": "c", "image": "\udc00"}])
            )
        },
        code=0,
    ),
}
SIZES: dict[str, Row] = {
    # 9. Scenario sizes have documented limits, checked before allocating.
    "nodePools.count 10**12": Row(
        SIM,
        ["spec.nodePools[0].count", "at most"],
        {"scenario": scenario(nodePools=pool(count=10**12))},
    ),
    "nodes over the total": Row(
        SIM,
        ["spec.nodePools[1].count", "at most"],
        {"scenario": scenario(nodePools=pool(count=60_000) + pool(name="b", count=60_000))},
    ),
    "workloads.count 10**15": Row(
        SIM,
        ["spec.workloads[0].count", "at most"],
        {"scenario": scenario(workloads=workload(count=10**15))},
    ),
    "100,001 literal Nodes without pools": Row(
        SIM,
        ["{scenario}", "spec.objects", "100001 literal nodes", "at most 100000"],
        {
            "scenario": scenario_json(
                nodePools=None,
                objects=[
                    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"}}
                    for i in range(100_001)
                ],
            )
        },
    ),
    "400,000 distinct gpuChoices": Row(
        SIM,
        ["{scenario}", "spec.workloads[0].gpuChoices", "400000 distinct values", "at most 256"],
        {"scenario": scenario_json(workloads=workload(gpuChoices=list(range(400_000))))},
    ),
    "calibration outside the scenario's folder": Row(
        SIM,
        ["{scenario}", "spec.timing.calibration", "is outside the scenario's folder"],
        {"scenario": scenario(timing={"costModel": "upstream", "calibration": "../pod.yaml"})},
    ),
    "durationSeconds 10**18": Row(
        SIM, ["spec.durationSeconds", "at most"], {"scenario": scenario(durationSeconds=10**18)}
    ),
}
SEMANTICS: dict[str, Row] = {
    # 10. Scenario semantics.
    "negative seed": Row(SIM, ["spec.seed", ">= 0"], {"scenario": scenario(seed=-1)}),
    "negative lifetime": Row(
        SIM,
        ["spec.workloads[0].lifetimeSeconds", ">= 0"],
        {"scenario": scenario(workloads=workload(lifetimeSeconds=-5))},
    ),
    "workload count -5": Row(
        SIM,
        ["spec.workloads[0].count", ">= 0"],
        {"scenario": scenario(workloads=workload(count=-5))},
    ),
    "pool count -5": Row(
        SIM, ["spec.nodePools[0].count", ">= 0"], {"scenario": scenario(nodePools=pool(count=-5))}
    ),
    "duplicate pool": Row(
        SIM,
        ["spec.nodePools[1].name", "duplicate"],
        {"scenario": scenario(nodePools=pool() + pool())},
    ),
    "duplicate workload": Row(
        SIM,
        ["spec.workloads[1].name", "duplicate"],
        {"scenario": scenario(workloads=workload() + workload())},
    ),
    "NaN rate": Row(
        SIM,
        ["spec.workloads[0].ratePerSecond", "finite"],
        {"scenario": scenario(workloads=workload(ratePerSecond=math.nan))},
    ),
    "inf duration": Row(
        SIM, ["spec.durationSeconds", "finite"], {"scenario": scenario(durationSeconds=math.inf)}
    ),
    "negative timing": Row(
        SIM,
        ["spec.timing.cycleSeconds", ">= 0"],
        {"scenario": scenario(timing={"cycleSeconds": -1})},
    ),
    "negative start": Row(
        SIM,
        ["spec.workloads[0].startSeconds", ">= 0"],
        {"scenario": scenario(workloads=workload(startSeconds=-3))},
    ),
    "unknown spec field": Row(
        SIM, ["spec.nodepools", "unknown field"], {"scenario": scenario(nodepools=[])}
    ),
    "unknown workload field": Row(
        SIM,
        ["spec.workloads[0].lifetime", "unknown field"],
        {"scenario": scenario(workloads=workload(lifetime=5))},
    ),
    "fault NaN time": Row(
        SIM,
        ["spec.faults[0].atSeconds"],
        {"scenario": scenario(faults=[{"kind": "leaderFailover", "atSeconds": math.nan}])},
    ),
    "zoneLoss of no zone": Row(
        SIM,
        ["spec.faults[0].zone", "matches no node"],
        {"scenario": scenario(faults=[{"kind": "zoneLoss", "atSeconds": 1, "zone": "nowhere"}])},
    ),
    "nodeLoss of no node": Row(
        SIM,
        ["spec.faults[0].nodes[0]", "no node"],
        {"scenario": scenario(faults=[{"kind": "nodeLoss", "atSeconds": 1, "nodes": ["ghost"]}])},
    ),
    "bulkRelease of no Pod": Row(
        SIM,
        ["spec.faults[0].selector", "matches no"],
        {
            "scenario": scenario(
                faults=[
                    {"kind": "bulkRelease", "atSeconds": 1, "count": 1, "selector": {"app": "none"}}
                ]
            )
        },
    ),
}
FLAGS: dict[str, Row] = {
    # 11. Flags.
    "--seed -1": Row([*SIM, "--seed", "-1"], ["--seed", ">= 0"]),
    "--shards 0": Row([*SIM, "--shards", "0"], ["--shards", ">= 1"]),
    "bench --shards 0": Row(["bench", "{bench}", "--shards", "0"], ["--shards", ">= 1"]),
    "--metrics-port 99999": Row([*SIM, "--metrics-port", "99999"], ["--metrics-port", "65535"]),
    "schedule --metrics-port -1": Row([*SCHEDULE, "--metrics-port", "-1"], ["--metrics-port"]),
    "run --metrics-port 99999": Row([*RUN, "--metrics-port", "99999"], ["--metrics-port", "65535"]),
    "port in use": Row([*SIM, "--metrics-port", "{busy_port}"], ["--metrics-port", "in use"]),
    "bad --metrics-address": Row(
        [*SIM, "--metrics-port", "0", "--metrics-address", "no such host!"], ["--metrics-address"]
    ),
    "--pace -1": Row([*SIM, "--pace", "-1"], ["--pace", ">= 0"]),
    "--pace nan": Row([*SIM, "--pace", "nan"], ["--pace"]),
    "--metrics-hold -1": Row([*SIM, "--metrics-hold", "-1"], ["--metrics-hold"]),
    "--json-out a directory": Row([*SIM, "--json-out", "{dir}"], ["--json-out", "directory"]),
    "--json-out unwritable": Row(
        [*SIM, "--json-out", "{missing}"], ["--json-out", "/nonexistent-dir"]
    ),
    "--report a file": Row([*SIM, "--report", "{pod}"], ["--report", "not a directory"]),
    "--report unwritable": Row([*SIM, "--report", "/proc/kubesched-report"], ["--report"]),
    "--metrics-file a directory": Row([*SCHEDULE, "--metrics-file", "{dir}"], ["--metrics-file"]),
    "--metrics-file unwritable": Row([*SIM, "--metrics-file", "{missing}"], ["--metrics-file"]),
    "bench -o a directory": Row(["bench", "{bench}", "-o", "{dir}"], ["--output", "directory"]),
    "sweep -o unwritable": Row(["sweep", "{sweep}", "-o", "{missing}"], ["--output"]),
    "replay -o a directory": Row(
        ["replay", "--nodes", "{nodes_csv}", "--pods", "{pods_csv}", "-o", "{dir}"], ["--output"]
    ),
    "replay --jobs 0": Row(
        ["replay", "--nodes", "{nodes_csv}", "--pods", "{pods_csv}", "--jobs", "0"], ["--jobs"]
    ),
    "report --out a file": Row(
        ["report", "{results}", "--out", "{pod}"], ["--out", "not a directory"]
    ),
    "bench --profile a directory": Row(["bench", "{bench}", "--profile", "{dir}"], ["--profile"]),
    "run --resync -1": Row([*RUN, "--resync", "-1"], ["--resync"]),
    "run --kubeconfig garbage bytes": Row(
        RUN, ["{kubeconfig}", "not UTF-8"], {"kubeconfig": b"\x00\xff\xfe garbage \x80"}
    ),
    "run --kubeconfig not a kubeconfig": Row(RUN, ["{kubeconfig}", "credentials"]),
}
LOADER: dict[str, Row] = {
    # 12. One loader: every command judges a configuration file alike.
    **{
        f"{cmd} --config duplicate key": Row(
            argv,
            ["{config}", 'key "kind" already set in map'],
            {"config": bf.GOOD["config"] + "kind: Other\n"},
        )
        for cmd, argv in (
            ("explain", [*EXPLAIN, "--config", "{config}"]),
            ("schedule", [*SCHEDULE, "--config", "{config}"]),
            ("pools", ["pools", "check", "--cluster", "{cluster}", "--config", "{config}"]),
            ("run", RUN),
        )
    },
    "scenario spec.config duplicate key": Row(
        SIM,
        ["{scenario}", "already set in map"],
        {
            "scenario": bf.GOOD["scenario"].replace(
                "spec:\n", "spec:\n  config: {kind: A, kind: B}\n", 1
            )
        },
    ),
}


TABLE: dict[str, Row] = {
    **dict(_slot_rows()),
    **QUANTITIES,
    **BEYOND_64_BITS,
    **SIZES,
    **SEMANTICS,
    **FLAGS,
    **LOADER,
}


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port something else is listening on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def run_row(row: Row, tmp: Path, busy_port: int) -> tuple[int, dict[str, str]]:
    """Run one row; (exit code, the paths its placeholders stand for)."""
    paths = bf.write_good(tmp, **row.files)
    paths["busy_port"] = str(busy_port)
    if row.hostile:
        paths["BAD"] = bf.HOSTILE[row.hostile][0](tmp)
    argv = [a.format(**paths) for a in row.argv]
    return main(argv), paths


@pytest.mark.parametrize("row", TABLE.values(), ids=list(TABLE))
def test_bad_input(
    row: Row, tmp_path: Path, busy_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    code, paths = run_row(row, tmp_path, busy_port)
    err = capsys.readouterr().err
    assert code == row.code, err
    for want in row.expect:
        assert want.format(**paths) in err
    assert "Traceback" not in err
    assert "secret-line-2" not in err  # at most a short excerpt of a file (its first line)
    assert "hunter2" not in err  # nothing of a file that is not the kind expected
    assert len(err.splitlines()) <= 12
    assert all(len(line) <= 400 for line in err.splitlines())


FUZZ_SLOTS = ["explain --pod", "explain --config", "schedule --pods", "report RESULTS"]
_leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
_docs = st.recursive(
    _leaf,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    slot=st.sampled_from(FUZZ_SLOTS),
    content=st.binary(max_size=200) | _docs.map(lambda d: json.dumps(d).encode()),
)
def test_fuzzed_inputs_never_trace_back(
    slot: str, content: bytes, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp = tmp_path_factory.mktemp("fuzz")
    bad = tmp / "fuzzed"
    bad.write_bytes(content)
    paths = bf.write_good(tmp)
    paths["BAD"] = str(bad)
    argv = [a.format(**paths) for a in SLOTS[slot][0]]
    assert main(argv) in (0, 1, 2)
