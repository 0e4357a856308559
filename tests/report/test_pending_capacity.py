"""Pods still Pending at the end of a simulation: the summary and the HTML report say, per
Unschedulable Pod, whether the cluster is short of capacity or fragmented (explain's
``capacity`` object)."""

from __future__ import annotations

import json
from pathlib import Path

from kubesched.cli import main
from kubesched.sim import timeline
from tests.sim.test_dra_schedule import claiming, run, twelve_gpus

SCENARIO = """
apiVersion: kubesched.io/v1alpha1
kind: Scenario
metadata: {name: fragmented}
spec:
  seed: 5
  durationSeconds: 6
  drainSeconds: 4
  nodePools:
  - name: dgx
    count: 2
    allocatable: {cpu: "64", memory: 256Gi, pods: "110", nvidia.com/gpu: "8"}
  workloads:
  - name: five
    count: 2
    ratePerSecond: 4
    template:
      spec:
        containers:
        - {name: c, image: t, resources: {requests: {cpu: "1", nvidia.com/gpu: "5"}}}
  - name: whole
    count: 1
    ratePerSecond: 1
    startSeconds: 3
    template:
      spec:
        containers:
        - {name: c, image: t, resources: {requests: {cpu: "1", nvidia.com/gpu: "6"}}}
"""


def test_the_report_says_the_pending_pod_meets_fragmentation(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO)
    args = ["simulate", str(tmp_path / "s.yaml"), "--no-progress"]
    rc = main([*args, "--json-out", str(tmp_path / "r.json"), "--report", str(tmp_path / "r")])
    assert rc == 0
    waiting = json.loads((tmp_path / "r.json").read_text())["waiting"]
    (entry,) = waiting["capacity"]  # two nodes with 3 GPUs free each; 6 needed on one
    assert entry["pod"] == "default/whole-000000"
    assert entry["message"] == waiting["oldest"]["message"]
    cap = entry["capacity"]
    assert (cap["verdict"], cap["eligibleNodes"]) == ("fragmented", 2)
    assert cap["message"] == (
        "enough free in total but fragmented: 6 nvidia.com/gpu free in the cluster, at most 3 "
        "on any of the 2 nodes that pass the other filters; the Pod needs 6 on one node"
    )
    page = (tmp_path / "r" / "index.html").read_text()
    assert "Short of capacity or fragmented" in page
    assert "<td>default/whole-000000</td><td>fragmented</td>" in page


def test_a_pending_pod_whose_claim_finds_no_free_device_is_short() -> None:
    sim = run(twelve_gpus(), [claiming(f"p{i}") for i in range(7)])  # 12 GPUs, 7 x 2 asked
    pending = [k for k, p in sim.api.pods.items() if not p.node_name]
    assert len(pending) == 1
    observers = len(sim.scheduler.cluster.observers)
    (entry,) = timeline.pending_capacity(sim, [(pending[0], "")])
    assert len(sim.scheduler.cluster.observers) == observers  # the run's cache is left as is
    cap = entry["capacity"]
    assert (cap["verdict"], cap["eligibleNodes"]) == ("short", 3)
    (dev,) = [e for e in cap["resources"] if e["resource"] == "devices"]
    assert (dev["needed"], dev["freeTotal"], dev["maxCapacityOnEligibleNode"]) == (2, 0, 4)
