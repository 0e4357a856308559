"""``kube-oracle bench`` with scheduler_perf's volume ops, as upstream's volumes suite uses
them: createNodes without a template (scheduler_perf's base Node) and with
``nodeAllocatableStrategy`` (CSINodes with an attach limit), createPods without a template
(the base Pod) and with ``persistentVolumeTemplatePath`` /
``persistentVolumeClaimTemplatePath`` (a bound claim and volume per Pod)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

# upstream's test/integration/scheduler_perf/templates/pv-csi.yaml and pvc.yaml
PV_CSI = """apiVersion: v1
kind: PersistentVolume
spec:
  accessModes:
  - ReadOnlyMany
  capacity:
    storage: 1Gi
  csi:
    driver: ebs.csi.aws.com
  persistentVolumeReclaimPolicy: Retain
"""
PVC = """apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  annotations:
    pv.kubernetes.io/bind-completed: "true"
spec:
  accessModes:
  - ReadOnlyMany
  resources:
    requests:
      storage: 1Gi
"""
CONFIG = """- name: AttachLimited
  workloadTemplate:
  - opcode: createNodes
    countParam: $nodes
    nodeAllocatableStrategy:
      nodeAllocatable:
        attachable-volumes-csi-ebs.csi.aws.com: "1"
      csiNodeAllocatable:
        ebs.csi.aws.com:
          count: 1
  - opcode: createPods
    countParam: $pods
    persistentVolumeTemplatePath: pv-csi.yaml
    persistentVolumeClaimTemplatePath: pvc.yaml
    collectMetrics: true
  workloads:
  - name: fits
    params: {nodes: 3, pods: 3}
  - name: over
    params: {nodes: 3, pods: 4}
"""


def _bench(kube_oracle: Path, tmp_path: Path, workload: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "pv-csi.yaml").write_text(PV_CSI)
    (tmp_path / "pvc.yaml").write_text(PVC)
    (tmp_path / "config.yaml").write_text(CONFIG)
    args = [str(kube_oracle), "bench", str(tmp_path / "config.yaml"), "--workload", workload]
    return subprocess.run([*args, "--timeout", "3"], capture_output=True, text=True, timeout=120)


def test_each_pod_gets_a_bound_csi_volume_within_the_attach_limit(
    kube_oracle: Path, tmp_path: Path
) -> None:
    run = _bench(kube_oracle, tmp_path, "fits")
    assert run.returncode == 0, run.stderr + run.stdout
    assert "3 pods bound" in run.stdout


def test_the_csinode_attach_limit_holds_the_pod_over_it(kube_oracle: Path, tmp_path: Path) -> None:
    """Three nodes with one attachable volume each: the fourth Pod's volume fits nowhere."""
    run = _bench(kube_oracle, tmp_path, "over")
    assert run.returncode == 1
    assert "3 pods bound" in run.stdout and "3 of 4" in run.stdout, run.stdout


def test_kubesched_bench_holds_the_same_pod_over_the_attach_limit(
    kube_oracle: Path, tmp_path: Path
) -> None:
    """The same workload through ``kubesched bench``: 3 of 4 Pods bound, as upstream."""
    _bench(kube_oracle, tmp_path, "over")  # writes the config and templates
    rc, out = ours(str(tmp_path / "config.yaml"), "over")
    assert rc == 1 and "3 pods bound" in out


def ours(config: str, workload: str, *args: str) -> tuple[int, str]:
    """``kubesched bench`` in a subprocess (its summary lines on stdout)."""
    cmd = [sys.executable, "-m", "kubesched", "bench", config, "--workload", workload]
    run = subprocess.run(
        [*cmd, "--no-progress", "--timeout", "10", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return run.returncode, run.stdout


VOLUMES = Path(__file__).resolve().parents[2] / "benchmarks" / "volumes"


@pytest.mark.parametrize(
    "case",
    [
        "SchedulingSecrets",
        "SchedulingInTreePVs",
        "SchedulingMigratedInTreePVs",
        "SchedulingCSIPVs",
        "PreemptionPVs",
    ],
)
def test_upstreams_volumes_suite_binds_as_many_pods_as_upstream(
    kube_oracle: Path, tmp_path: Path, case: str
) -> None:
    """Each case's 5Nodes workload of ``benchmarks/volumes`` through both benches: the same
    Pods bound.  kube-oracle bench takes no ``featureGates``, so both run a copy without
    them (``SchedulerQueueingHints`` changes no decision of these workloads)."""
    doc = yaml.safe_load((VOLUMES / "performance-config.yaml").read_text())
    for tc in doc:
        for w in tc["workloads"]:
            w.pop("featureGates", None)
    text = yaml.safe_dump(doc, sort_keys=False).replace("templates/", f"{VOLUMES}/templates/")
    config = tmp_path / "volumes.yaml"
    config.write_text(text)
    args = [str(config), "--case", case, "--workload", "5Nodes"]
    up = subprocess.run(  # a stuck run fails, saying what it waited for, before 300 s
        [str(kube_oracle), "bench", *args, "--timeout", "60", "--deadline", "240"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert up.returncode == 0, up.stderr + up.stdout
    rc, out = ours(str(config), "5Nodes", "--case", case, "--kubernetes-version", "1.34")
    assert rc == 0, out
    bound = [re.search(r", (\d+) pods bound in ", s.splitlines()[-1]) for s in (up.stdout, out)]
    assert bound[0] and bound[1] and bound[0].group(1) == bound[1].group(1)


def test_a_workload_past_its_deadline_fails_saying_what_it_waited_for(
    kube_oracle: Path, tmp_path: Path
) -> None:
    """``kube-oracle bench --deadline S``: the whole workload's bound (an op's own wait is
    ``--timeout``); past it the run stops with an error instead of waiting on."""
    _bench(kube_oracle, tmp_path, "fits")  # writes the config and templates
    args = [str(kube_oracle), "bench", str(tmp_path / "config.yaml"), "--workload", "fits"]
    run = subprocess.run(
        [*args, "--deadline", "0.001"], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 1
    assert "ERROR: op 0: deadline passed (kube-oracle bench --deadline) waiting for" in run.stdout
