"""Upstream's volumes suite (``benchmarks/volumes``, v1.34's scheduler_perf
``volumes/performance-config.yaml``) through the runner: ``nodeAllocatableStrategy`` (the
allocatable and a CSINode per Node), ``createPods`` with ``persistentVolumeTemplatePath``
and ``persistentVolumeClaimTemplatePath`` (each Pod's own claim, bound to its own volume).
``tests/oracle/test_bench_volumes.py`` checks the same counts against ``kube-oracle bench``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubesched.bench import params as p
from kubesched.bench import runner
from kubesched.bench.config import load_test_cases
from kubesched.bench.loop import WorkloadError
from kubesched.config.featuregates import FeatureGates

V134 = FeatureGates("1.34")
"""The suite is v1.34's: its ``SchedulerQueueingHints`` gate is gone in later releases."""
CONFIG = Path(__file__).resolve().parents[2] / "benchmarks" / "volumes" / "performance-config.yaml"
SMALL = {
    "SchedulingSecrets": 15,
    "SchedulingInTreePVs": 15,
    "SchedulingMigratedInTreePVs": 15,
    "SchedulingCSIPVs": 15,
    "PreemptionPVs": 25,
}
"""Each case's 5Nodes workload: the Pods bound (``kube-oracle bench`` binds as many)."""


def run(config: Path | str, case: str, workload: str) -> runner._WorkloadRun:
    """One workload of ``config`` through the runner, its error kept in the result."""
    ((tc, w),) = p.select(load_test_cases(str(config)), case=case, workload=workload)
    run = runner._WorkloadRun(tc, w, p.resolve(tc, w), runner.RunOptions(timeout=60.0, gates=V134))
    try:
        run.run()
    except WorkloadError as err:
        run.result.error = str(err)
    finally:
        run.finish()
    return run


@pytest.mark.parametrize("case", sorted(SMALL))
def test_the_small_workloads_bind_every_pod(case: str) -> None:
    done = run(CONFIG, case, "5Nodes")
    assert done.result.error is None
    assert done.result.pods_bound == SMALL[case] and done.result.pods_unbound == 0


def test_each_pod_gets_its_own_claim_bound_to_its_own_volume() -> None:
    done = run(CONFIG, "SchedulingMigratedInTreePVs", "5Nodes")
    objs = done.api.objects
    pvs = {k[1]: v for k, v in objs.items() if k[0] == "PersistentVolume"}
    pvcs = {k[1]: v for k, v in objs.items() if k[0] == "PersistentVolumeClaim"}
    assert len(pvs) == len(pvcs) == 15
    pv = next(v for k, v in pvs.items() if k.endswith("namespace-2-vol-3"))
    assert pv["spec"]["awsElasticBlockStore"]["volumeID"] == "vol-3"
    assert pv["spec"]["claimRef"]["name"] == "pvc-3" and pv["status"]["phase"] == "Bound"
    pvc = pvcs["namespace-2/pvc-3"]
    assert pvc["spec"]["volumeName"] == "namespace-2-vol-3" and pvc["status"]["phase"] == "Bound"
    pods = [pod for pod in done.api.pods.values() if pod.namespace == "namespace-2"]
    assert sorted(pod.volumes[0].claim for pod in pods) == sorted(f"pvc-{i}" for i in range(10))
    csinodes = [v for k, v in objs.items() if k[0] == "CSINode"]
    assert len(csinodes) == 5
    (driver,) = csinodes[0]["spec"]["drivers"]
    assert driver["name"] == "ebs.csi.aws.com" and driver["allocatable"] == {"count": 39}
    annotations = csinodes[0]["metadata"]["annotations"]
    assert annotations["storage.alpha.kubernetes.io/migrated-plugins"] == "kubernetes.io/aws-ebs"
    node = next(iter(done.api.nodes.values()))
    assert node.allocatable["attachable-volumes-csi-ebs.csi.aws.com"] == 39
    assert node.allocatable["cpu"] == 4000  # the capacity, as the API server defaults it


ATTACH_LIMITED = """- name: AttachLimited
  workloadTemplate:
  - opcode: createNodes
    countParam: $nodes
    nodeAllocatableStrategy:
      csiNodeAllocatable:
        ebs.csi.aws.com:
          count: 1
  - opcode: createPods
    countParam: $pods
    persistentVolumeTemplatePath: {templates}/pv-csi.yaml
    persistentVolumeClaimTemplatePath: {templates}/pvc.yaml
    collectMetrics: true
  workloads:
  - name: over
    params: {{nodes: 3, pods: 4}}
"""


def test_the_csinode_attach_limit_holds_the_pod_over_it(tmp_path: Path) -> None:
    """Three nodes with one attachable CSI volume each: the fourth Pod fits nowhere
    (``kube-oracle bench`` answers the same: 3 of 4)."""
    config = tmp_path / "config.yaml"
    config.write_text(ATTACH_LIMITED.format(templates=CONFIG.parent / "templates"))
    done = run(config, "AttachLimited", "over")
    assert done.result.pods_bound == 3 and "3 of 4" in (done.result.error or "")


def test_a_claim_template_needs_a_volume_template(tmp_path: Path) -> None:
    doc = yaml.safe_load(ATTACH_LIMITED.format(templates=CONFIG.parent / "templates"))
    del doc[0]["workloadTemplate"][1]["persistentVolumeTemplatePath"]
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(doc))
    with pytest.raises(Exception, match="persistentVolumeTemplatePath"):
        load_test_cases(str(config))
