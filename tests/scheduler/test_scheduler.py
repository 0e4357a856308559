"""The serial scheduling loop: placement, failure messages, sampling, faults and requeue."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from kubesched.api import objects as api
from kubesched.framework.interface import CycleState, Handle, IntArray, Verdict
from kubesched.scheduler import num_feasible_nodes_to_find
from kubesched.scheduler.types import Diagnosis, FitError, reasons_text
from kubesched.state.cache import ClusterState
from kubesched.testing import drain, make_node, make_pod, new_scheduler


@pytest.mark.parametrize(
    ("nodes", "percentage", "expected"),
    [
        (50, None, 50),
        (99, 10, 99),
        (100, None, 100),
        (1000, None, 420),  # 50 - 1000/125 = 42 %
        (5000, None, 500),  # 10 %
        (6000, None, 300),  # 2 % -> clamped to 5 %
        (10000, None, 500),
        (1000, 10, 100),
        (1000, 50, 500),
        (200, 30, 100),  # 60 -> at least 100
        (5000, 100, 5000),
    ],
)
def test_num_feasible_nodes_to_find(nodes: int, percentage: int | None, expected: int) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


def test_fit_error_message_is_upstreams_sorted_histogram() -> None:
    s, fake, _ = new_scheduler()
    s.on_node_add(make_node("small").cap(cpu="1", memory="4Gi", pods=10).obj())
    for n in ("gpu-a", "gpu-b"):
        s.on_node_add(
            make_node(n).cap(cpu="8", memory="4Gi", pods=10).taint("dedicated", "gpu").obj()
        )
    s.on_pod_add(make_pod("big").req(cpu="2").obj())
    drain(s)
    assert fake.binds == {}
    reason, message = fake.failures["default/big"]
    assert reason == "Unschedulable"
    assert message == (
        "0/3 nodes are available: 1 Insufficient cpu, "
        "2 node(s) had untolerated taint(s). "
        "preemption: 0/3 nodes are "
        "available: 3 Preemption is not helpful for scheduling."
    )
    assert s.attempts["unschedulable"] == 1
    assert s.queue.pending_pods()["unschedulable"] == 1


def test_fit_error_reads_its_diagnosis_when_asked() -> None:
    # the message is made once, by the failure handling, after PostFilter added its part
    counts = Counter({"Insufficient cpu": 2, "node(s) had untolerated taint(s)": 1})
    diagnosis = Diagnosis(3, counts, {"NodeResourcesFit", "TaintToleration"})
    err = FitError(diagnosis)
    diagnosis.post_filter_msg = "preemption: not eligible"
    expected = (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. "
        "preemption: not eligible"
    )
    assert str(err) == expected
    # the search's kept text of the same counts reads the same
    kept = Diagnosis(3, counts, set(), post_filter_msg="preemption: not eligible")
    kept.reasons = reasons_text(counts)
    assert kept.message() == expected


def test_pods_are_bound_and_resources_accounted() -> None:
    s, fake, _ = new_scheduler()
    for i in range(3):
        s.on_node_add(make_node(f"n{i}").cap(cpu="1", memory="4Gi", pods=10).obj())
    for i in range(3):
        s.on_pod_add(make_pod(f"p{i}").req(cpu="600m").obj())
    drain(s)
    assert sorted(fake.binds.values()) == ["n0", "n1", "n2"]  # one per node: 2 x 600m > 1 CPU
    assert s.cluster.overcommitted_nodes() == []
    assert s.attempts["scheduled"] == 3


def test_round_robin_start_index_advances_by_processed_nodes() -> None:
    s, _, _ = new_scheduler(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": 10,
        }
    )
    for i in range(300):
        s.on_node_add(make_node(f"n{i:03d}").cap(cpu="4", memory="8Gi", pods=110).obj())
    s.on_pod_add(make_pod("a").req(cpu="100m").obj())
    s.on_pod_add(make_pod("b").req(cpu="100m").obj())
    s.schedule_one()
    assert s.search.next_start_node_index == 100  # 300 nodes * 10 % = 30 -> at least 100
    s.schedule_one()
    assert s.search.next_start_node_index == 200


class Faulty:
    """A filter plugin that raises for Pods labelled ``boom``."""

    name = "Faulty"

    def __init__(self, args: Any, handle: Handle) -> None:
        del args, handle

    def filter(
        self, state: CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> Verdict:
        if "boom" in pod.labels:
            raise ValueError("kaboom")
        return Verdict.all_pass(rows.size)


FAULTY_CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {"filter": {"enabled": [{"name": "Faulty"}]}},
        }
    ],
}


def test_a_plugin_that_raises_marks_error_backs_off_and_the_loop_continues() -> None:
    s, fake, clock = new_scheduler(FAULTY_CONFIG, {"Faulty": Faulty})
    s.on_node_add(make_node("n").cap(cpu="4", memory="8Gi", pods=10).obj())
    s.on_pod_add(make_pod("bad").labels(boom="1").obj())
    s.on_pod_add(make_pod("good").obj())
    drain(s)
    assert fake.binds == {"default/good": "n"}
    assert s.attempts["error"] == 1
    assert fake.failures["default/bad"][0] == "SchedulerError"
    assert "kaboom" in fake.failures["default/bad"][1]
    assert s.queue.pending_pods()["backoff"] == 1  # not lost: backing off
    clock.now = 2.5  # a 1 s backoff, released at the next 1 s window (upstream 1.33+)
    s.queue.flush_backoff_completed()
    assert s.schedule_one()
    assert s.attempts["error"] == 2


def test_bind_failure_forgets_the_pod_and_requeues_it() -> None:
    s, fake, clock = new_scheduler()
    s.on_node_add(make_node("n").cap(cpu="1", memory="8Gi", pods=10).obj())
    s.on_pod_add(make_pod("p").req(cpu="1").obj())
    fake.fail_binds = True
    drain(s)
    assert not s.cluster.pods  # forgotten: nothing held
    assert int(s.cluster.nodes.requested.sum()) == 0
    assert s.attempts["error"] == 1
    fake.fail_binds = False
    clock.now = 2.5
    s.queue.flush_backoff_completed()
    drain(s)
    assert fake.binds == {"default/p": "n"}


def test_unschedulable_pod_is_requeued_when_a_fitting_node_arrives() -> None:
    s, fake, clock = new_scheduler()
    s.on_node_add(make_node("small").cap(cpu="1", memory="8Gi", pods=10).obj())
    s.on_pod_add(make_pod("p").req(cpu="2").obj())
    drain(s)
    assert s.queue.pending_pods()["unschedulable"] == 1
    s.on_node_add(make_node("big").cap(cpu="4", memory="8Gi", pods=10).obj())
    clock.now = 20.0
    s.queue.flush_backoff_completed()
    drain(s)
    assert fake.binds == {"default/p": "big"}


def test_same_seed_same_placements() -> None:
    def run() -> dict[str, str]:
        s, fake, _ = new_scheduler()
        for i in range(20):
            s.on_node_add(make_node(f"n{i}").cap(cpu="8", memory="16Gi", pods=110).obj())
        for i in range(50):
            s.on_pod_add(make_pod(f"p{i}").req(cpu="100m", memory="100Mi").obj())
        drain(s)
        return fake.binds

    assert run() == run()


def test_node_table_rows_are_numpy_int64() -> None:
    s, _, _ = new_scheduler()
    s.on_node_add(make_node("n").cap(cpu="1").obj())
    assert s.cluster.nodes.order().dtype == np.int64


def test_processed_counts_failures_up_to_the_last_feasible_node_kept() -> None:
    s, _, _ = new_scheduler(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": 10,
        }
    )
    for i in range(300):  # every third node is too small for the Pod
        cpu = "100m" if i % 3 == 0 else "4"
        s.on_node_add(make_node(f"n{i:03d}").cap(cpu=cpu, memory="8Gi", pods=110).obj())
    s.on_pod_add(make_pod("a").req(cpu="500m").obj())
    s.schedule_one()
    # 100 feasible nodes are needed; the 100th feasible one is n149 (50 failures before it).
    assert s.search.next_start_node_index == 150


def test_no_nodes_is_unschedulable_not_an_error() -> None:
    """Upstream's ``ErrNoNodesAvailable`` is UnschedulableAndUnresolvable (retried after
    backoff), so the Pod's condition says Unschedulable, not SchedulerError."""
    s, fake, _ = new_scheduler()
    s.on_pod_add(make_pod("p").req(cpu="1").obj())
    s.schedule_one()
    assert fake.failures["default/p"] == ("Unschedulable", "no nodes available to schedule pods")
