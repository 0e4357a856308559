"""``kube-oracle bench`` at v1.37 runs the ops and settings v1.37's scheduler_perf suites use
beyond the basic ones: a workload's ``featureGates`` (set before its scheduler starts,
restored after it), ``createPodGroups`` and ``createAny`` (with ``templateParams``).

Each test looks at what the op did to the run (which Pods bind), not only that the config is
accepted.  Needs v1.37's kube-oracle (``oracle/bin/v1.37``): skipped when it is not built,
required with ``ORACLE_LATER_RELEASES=required`` (``.ci/run`` builds it after the default run).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.bench.support import ROOT
from tests.oracle.conftest import later_release_binary

UPSTREAM_137 = ROOT / "benchmarks" / "upstream-1.37"

POD_GROUP = """apiVersion: scheduling.k8s.io/v1alpha3
kind: PodGroup
metadata:
  name: gang-{{.Index}}
spec:
  schedulingPolicy:
    gang:
      minCount: {{.minCount}}
"""
"""A gang of ``minCount``, written as v1alpha3 as upstream's ``templates/podgroup.yaml``
(upstream's createPodGroups decodes any file into its v1beta1 PodGroup)."""

MEMBER = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"generateName": "member-"},
    "spec": {
        "schedulingGroup": {"podGroupName": "gang-0"},
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10.1",
                "resources": {"requests": {"cpu": "100m"}},
            }
        ],
    },
}


@pytest.fixture(scope="module")
def oracle_137() -> Path:
    return later_release_binary("1.37")


def bench(oracle: Path, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(oracle), "bench", str(config), *args], capture_output=True, text=True, timeout=600
    )


def bound(stdout: str) -> dict[str, int]:
    """Pods bound per workload, from each summary line."""
    out = {}
    for line in stdout.strip().splitlines():
        m = re.match(r"(\S+), .*?(\d+) pods bound in ", line)
        assert m, line
        out[m.group(1)] = int(m.group(2))
    return out


@pytest.fixture
def gang_config(tmp_path: Path) -> Path:
    (tmp_path / "podgroup.yaml").write_text(POD_GROUP)
    (tmp_path / "member.yaml").write_text(yaml.safe_dump(MEMBER))
    on = {"GenericWorkload": True}
    case = {
        "name": "Gang",
        "workloadTemplate": [
            {"opcode": "createNodes", "count": 2},
            {
                "opcode": "createPodGroups",
                "countParam": "$groups",
                "namespace": "gangs",
                "templatePath": "podgroup.yaml",
                "templateParams": {"minCount": "$minCount"},
            },
            {
                "opcode": "createPods",
                "count": 2,
                "namespace": "gangs",
                "podTemplatePath": "member.yaml",
                "collectMetrics": True,
            },
        ],
        "workloads": [
            # in this order: gatesOff runs after a workload that turned GenericWorkload on
            {"name": "fits", "labels": ["binds"], "featureGates": on,
             "params": {"groups": 1, "minCount": 2}},
            {"name": "gatesOff", "labels": ["binds"], "params": {"groups": 0, "minCount": 2}},
            {"name": "short", "labels": ["stays"], "featureGates": on,
             "params": {"groups": 1, "minCount": 3}},
            {"name": "noGroup", "labels": ["stays"], "featureGates": on,
             "params": {"groups": 0, "minCount": 2}},
        ],
    }  # fmt: skip
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump([case]))
    return path


def test_create_pod_groups_and_feature_gates_are_run(oracle_137: Path, gang_config: Path) -> None:
    """Under GenericWorkload the two members bind once createPodGroups made their gang of two
    (a gang of three, or no group at all, keeps them waiting); without the gate, as upstream
    v1.37's default, the same members bind with no group: the gate was set for the workloads
    that name it and restored after them."""
    ok = bench(oracle_137, gang_config, "--label", "binds", "--timeout", "300")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert bound(ok.stdout) == {"Gang/fits": 2, "Gang/gatesOff": 2}
    waits = bench(oracle_137, gang_config, "--label", "stays", "--timeout", "3")
    assert waits.returncode == 1, waits.stdout + waits.stderr
    assert bound(waits.stdout) == {"Gang/short": 0, "Gang/noGroup": 0}
    assert waits.stdout.count("waiting for Pods of namespace gangs bound: 0 of 2") == 2, (
        waits.stdout
    )


def test_unknown_feature_gate_is_an_input_error(oracle_137: Path, gang_config: Path) -> None:
    cases = yaml.safe_load(gang_config.read_text())
    cases[0]["workloads"][0]["featureGates"] = {"NoSuchGate": True}
    gang_config.write_text(yaml.safe_dump(cases))
    proc = bench(oracle_137, gang_config, "--workload", "fits")
    assert proc.returncode == 2
    assert "featureGates: unknown to this release: NoSuchGate" in proc.stderr


def test_create_any_makes_the_devices_of_extended_resources(oracle_137: Path) -> None:
    """Upstream's dra/extendedresource ``fast``: Nodes without the extended resource, a
    DeviceClass mapping it (a v1beta2 file, stored as v1) and a ResourceSlice per Node made by
    createAny with templateParams; every Pod asking for the resource binds on those devices."""
    config = UPSTREAM_137 / "dra" / "extendedresource" / "performance-config.yaml"
    proc = bench(oracle_137, config, "--workload", "ExtendedResource/fast", "--timeout", "300")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert bound(proc.stdout) == {"ExtendedResource/fast": 10}
