"""``kube-oracle bench`` with scheduler_perf's volume ops, as upstream's volumes suite uses
them: createNodes without a template (scheduler_perf's base Node) and with
``nodeAllocatableStrategy`` (CSINodes with an attach limit), createPods without a template
(the base Pod) and with ``persistentVolumeTemplatePath`` /
``persistentVolumeClaimTemplatePath`` (a bound claim and volume per Pod)."""

from __future__ import annotations

import subprocess
from pathlib import Path

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
