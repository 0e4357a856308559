"""The commit step (:mod:`kubesched.scheduler.commit`) through its public methods, as the
parallel binder and live mode's coordinator call it: assume, then Reserve / Permit and hold
or bind, each failure undone (Unreserve, forget, the Pod failed and requeued)."""

from __future__ import annotations

from typing import Any

from kubesched.api import objects as api
from kubesched.framework import interface as fw
from kubesched.framework.interface import CycleState, QueuedPodInfo
from kubesched.framework.runtime import Framework
from kubesched.testing import FakeApi, make_node, make_pod, new_scheduler


class Ledger:
    """Reserve / Permit / PreBind / PostBind plugin logging each call; a Pod labelled
    ``reserve=no`` is rejected at Reserve, ``wait=<s>`` waits at Permit."""

    name = "Ledger"

    def __init__(self, args: object, handle: fw.Handle) -> None:
        self.log: list[tuple[str, str]] = []

    def reserve(self, state: fw.CycleState, pod: api.Pod, node: str) -> fw.Status:
        self.log.append(("reserve", pod.key))
        if pod.labels.get("reserve") == "no":
            return fw.Status(fw.Code.UNSCHEDULABLE, ("no room in the ledger",), self.name)
        return fw.SUCCESS

    def unreserve(self, state: fw.CycleState, pod: api.Pod, node: str) -> None:
        self.log.append(("unreserve", pod.key))

    def permit(self, state: fw.CycleState, pod: api.Pod, node: str) -> tuple[fw.Status, float]:
        self.log.append(("permit", pod.key))
        wait = pod.labels.get("wait")
        return (fw.Status(fw.Code.WAIT), float(wait)) if wait else (fw.SUCCESS, 0.0)

    def pre_bind(self, state: fw.CycleState, pod: api.Pod, node: str) -> fw.Status:
        self.log.append(("pre_bind", pod.key))
        return fw.SUCCESS

    def post_bind(self, state: fw.CycleState, pod: api.Pod, node: str) -> None:
        self.log.append(("post_bind", pod.key))


CONFIG: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {"multiPoint": {"enabled": [{"name": "Ledger"}]}},
        }
    ],
}


def setup(pod: api.Pod) -> tuple[Any, FakeApi, Ledger, Framework, QueuedPodInfo]:
    s, fake, _clock = new_scheduler(CONFIG, {"Ledger": Ledger})
    s.on_node_add(make_node("n").cap(cpu="4", memory="8Gi", pods=10).obj())
    s.on_pod_add(pod)
    qp = s.queue.pop()
    assert qp is not None
    fwk = s.profiles["default-scheduler"]
    ledger = fwk.instances["Ledger"]
    assert isinstance(ledger, Ledger)
    return s, fake, ledger, fwk, qp


def test_a_commit_binds_after_the_committing_callback() -> None:
    s, fake, ledger, fwk, qp = setup(make_pod("p").req(cpu="1").obj())
    seen: list[dict[str, str]] = []
    assumed = s.committer.assume(qp.pod, "n")
    assert s.cluster.is_assumed("default/p")
    rejected = s.committer.commit(
        fwk, CycleState(), qp, assumed, 0.0, 1, committing=lambda: seen.append(dict(fake.binds))
    )
    assert rejected is None and seen == [{}]  # before the bind
    assert fake.binds == {"default/p": "n"} and s.in_flight_bindings == 0
    assert [point for point, _ in ledger.log] == ["reserve", "permit", "pre_bind", "post_bind"]
    assert s.attempts["scheduled"] == 1


def test_a_reserve_rejection_is_undone_and_returned() -> None:
    s, fake, ledger, fwk, qp = setup(make_pod("p").req(cpu="1").labels(reserve="no").obj())
    assumed = s.committer.assume(qp.pod, "n")
    called: list[bool] = []
    rejected = s.committer.commit(
        fwk, CycleState(), qp, assumed, 0.0, 1, committing=lambda: called.append(True)
    )
    assert rejected is not None and rejected.plugin == "Ledger" and not called
    assert ledger.log == [("reserve", "default/p"), ("unreserve", "default/p")]
    assert "default/p" not in s.cluster.pods and fake.binds == {}
    assert s.failures["default/p"] == (
        "Unschedulable",
        "0/1 nodes are available: 1 no room in the ledger.",
    )
    assert s.queue.queue_of("default/p") is not None and s.in_flight_bindings == 0


def test_a_held_pod_counts_in_flight_until_its_rejection_is_undone() -> None:
    s, fake, ledger, fwk, qp = setup(make_pod("p").req(cpu="1").labels(wait="10").obj())
    assumed = s.committer.assume(qp.pod, "n")
    assert s.committer.commit(fwk, CycleState(), qp, assumed, 0.0, 1) is None
    assert s.in_flight_bindings == 1 and s.next_waiting_deadline() == 10.0
    wp = s.handle.get_waiting_pod("default/p")
    assert wp is not None
    wp.reject("Ledger", "gang broke up")
    s.committer.drain_waiting()
    assert s.in_flight_bindings == 0 and "default/p" not in s.cluster.pods
    assert ledger.log[-1] == ("unreserve", "default/p") and fake.binds == {}
    assert s.failures["default/p"][1] == "0/1 nodes are available: 1 gang broke up."


def test_a_direct_bind_replaces_the_binding_cycle() -> None:
    s, fake, ledger, fwk, qp = setup(make_pod("p").req(cpu="1").obj())
    direct: list[str] = []

    def propose(fwk: Framework, qp: QueuedPodInfo, assumed: api.Pod) -> bool:
        direct.append(assumed.node_name)
        return True

    s.committer.direct_bind = propose
    assumed = s.committer.assume(qp.pod, "n")
    assert s.committer.commit(fwk, CycleState(), qp, assumed, 0.0, 1) is None
    assert direct == ["n"] and fake.binds == {} and s.in_flight_bindings == 0
    assert [point for point, _ in ledger.log] == ["reserve", "permit"]  # no PreBind, PostBind
    assert s.queue.queue_of("default/p") is None


def test_a_pod_deleted_in_its_binding_cycle_is_not_requeued_when_its_bind_fails() -> None:
    """Upstream ``deletePodFromSchedulingQueue`` deletes an assumed Pod from the queue too,
    and ``handleSchedulingFailure`` requeues nothing the informer no longer has: a
    preemption's victim deleted while its binding cycle runs is not tried again when its
    bind then fails (kubesched requeued it, and a v1.36 PodGroup cycle kept placing the
    ghost: seed 22363 case 11, ``group-1-1`` tried 8 times against upstream's once)."""
    s, fake, _ledger, fwk, qp = setup(make_pod("p").req(cpu="1").obj())
    later: list[Any] = []
    s.committer.submit_binding = later.append
    assumed = s.committer.assume(qp.pod, "n")
    assert s.committer.commit(fwk, CycleState(), qp, assumed, 0.0, 1) is None
    s.on_pod_delete(qp.pod)  # the API server's copy: unbound
    assert "default/p" not in s.cluster.pods
    fake.refuse.add("default/p")  # pods "p" not found
    (binding_cycle,) = later
    binding_cycle()
    assert s.failures["default/p"][0] == "SchedulerError"
    assert s.queue.queue_of("default/p") is None and s.queue.pop() is None
