"""Pod copies and pickles keep every field: ``__reduce__`` takes the dataclass's fields, so
a field added to :class:`Pod` is pickled automatically; ``shallow_copy`` names each slot,
and these tests fail on a copy that lacks one."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import fields

from kubesched.api import objects as api


def _full_pod() -> api.Pod:
    """A Pod whose every field differs from its default."""
    return api.Pod(
        name="web-1",
        namespace="team-a",
        uid="u-1",
        labels={"app": "web"},
        annotations={"note": "x"},
        owner_references=(api.OwnerReference("ReplicaSet", "web", "apps/v1", True),),
        creation_timestamp=12.5,
        scheduler_name="other",
        priority=7,
        priority_class_name="high",
        preemption_policy="Never",
        node_name="n1",
        node_selector={"zone": "a"},
        node_affinity=api.NodeAffinity(preferred=()),
        pod_affinity=api.PodAffinity(),
        pod_anti_affinity=api.PodAffinity(),
        tolerations=(api.Toleration(key="k", operator="Exists"),),
        topology_spread_constraints=(api.TopologySpreadConstraint(1, "zone", "DoNotSchedule"),),
        requests={"cpu": 100},
        nonzero_requests={"cpu": 100, "memory": 209715200},
        fit_score_requests={"cpu": 200, "memory": 209715200},
        resize_totals=({"cpu": 60}, {"cpu": 100, "memory": 209715200}),
        pod_level_resize=api.PodLevelResize(
            ({"cpu": 70}, {"cpu": 70, "memory": 209715200}),
            ({"cpu": 80}, {"cpu": 80, "memory": 209715200}),
        ),
        resize_deferred=True,
        host_ports=(api.HostPort(8080),),
        images=("nginx",),
        image_volumes=("gcr.io/300",),
        scheduling_gates=("gate",),
        workload_ref=api.WorkloadRef("job", "workers", "0"),
        scheduling_group="train",
        termination_grace_period_seconds=5,
        phase="Running",
        nominated_node_name="n2",
        start_time=3.0,
        deletion_timestamp=4.0,
        resource_claims=(("gpu", "", "two-gpus"),),
        resource_claim_statuses=(("gpu", "p-gpu-abcde"),),
        required_features=("RestartAllContainersOnContainerExits",),
        volumes=(api.Volume("data", api.VOLUME_PVC, claim="data-web-1"),),
        raw={"status": {}},
    )


def test_every_field_is_set_in_the_fixture() -> None:
    pod, default = _full_pod(), api.Pod(name="")
    same = [f.name for f in fields(api.Pod) if getattr(pod, f.name) == getattr(default, f.name)]
    assert same == []


def test_shallow_copy_keeps_every_field_and_shares_sub_objects() -> None:
    pod = _full_pod()
    other = pod.shallow_copy()
    assert other is not pod
    assert other == pod
    assert other.labels is pod.labels  # shallow
    other.node_name = "n9"
    assert pod.node_name == "n1"


def test_bound_to_changes_only_the_node() -> None:
    pod = _full_pod()
    bound = pod.bound_to("n7")
    assert bound.node_name == "n7" and pod.node_name == "n1"
    bound.node_name = pod.node_name
    assert bound == pod


def test_pickle_round_trip_keeps_every_field() -> None:
    pod = _full_pod()
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        back = pickle.loads(pickle.dumps(pod, protocol=protocol))
        assert back == pod and back is not pod
    assert copy.deepcopy(pod) == pod
    assert copy.deepcopy(pod).labels is not pod.labels
    assert copy.copy(pod) == pod


def test_pickled_pods_share_what_they_share() -> None:
    """Sub-objects shared by several Pods (a template's) are written once per pickle."""
    pod = _full_pod()
    many = [pod.bound_to(f"n{i}") for i in range(10)]
    back = pickle.loads(pickle.dumps(many, protocol=pickle.HIGHEST_PROTOCOL))
    assert [p.node_name for p in back] == [f"n{i}" for i in range(10)]
    assert all(p.labels is back[0].labels for p in back)


def test_key_is_kept_in_step_with_the_name() -> None:
    """``key`` is stored, not formatted on each read: every way of making a Pod sets it."""
    pod = _full_pod()
    assert pod.key == "team-a/web-1"
    assert dataclasses.replace(pod, name="web-2").key == "team-a/web-2"
    assert dataclasses.replace(pod, namespace="team-b").key == "team-b/web-1"
    other = pod.shallow_copy()
    other.rename("web-3")
    assert (other.name, other.key, pod.key) == ("web-3", "team-a/web-3", "team-a/web-1")
    back = pickle.loads(pickle.dumps(other, protocol=pickle.HIGHEST_PROTOCOL))
    assert back.key == "team-a/web-3" and copy.deepcopy(other).key == "team-a/web-3"
    assert other.bound_to("n3").key == "team-a/web-3"
    assert "key='team-a/web-1'" not in repr(pod)  # not a field one passes
