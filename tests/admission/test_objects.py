"""Job-layer objects: parsing, and bad input named by object and field."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.admission import objects as o
from kubesched.admission import references
from kubesched.api.errors import InputError
from kubesched.testing import make_pod

SCHED = "scheduling.x-k8s.io/v1alpha1"
KUEUE = "kueue.x-k8s.io/v1beta1"


def pod_group(name: str, min_member: Any = 2, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": SCHED,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"minMember": min_member, **spec},
    }


def quota(name: str, lo: str = "2", hi: str = "4", parent: str = "") -> dict[str, Any]:
    labels = {o.QUOTA_PARENT_LABEL: parent} if parent else {}
    return {
        "apiVersion": SCHED,
        "kind": "ElasticQuota",
        "metadata": {"name": name, "namespace": name, "labels": labels},
        "spec": {"min": {"nvidia.com/gpu": lo, "cpu": "1"}, "max": {"nvidia.com/gpu": hi}},
    }


def cluster_queue(name: str, flavor: str = "f", **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu", "cpu"],
                    "flavors": [
                        {
                            "name": flavor,
                            "resources": [
                                {"name": "nvidia.com/gpu", "nominalQuota": 8, "lendingLimit": 2},
                                {"name": "cpu", "nominalQuota": "4", "borrowingLimit": "500m"},
                            ],
                        }
                    ],
                }
            ],
            **extra,
        },
    }


def flavor(name: str = "f") -> dict[str, Any]:
    return {
        "apiVersion": KUEUE,
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {"nodeLabels": {"pool": "gpu"}},
    }


def local_queue(name: str, cq: str) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"clusterQueue": cq},
    }


def test_parse_everything() -> None:
    objs = o.collect(
        [
            pod_group("pg", 3, scheduleTimeoutSeconds=10, minResources={"cpu": "2"}),
            quota("team"),
            cluster_queue("cq", cohort="pool", queueingStrategy="StrictFIFO"),
            flavor(),
            local_queue("lq", "cq"),
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ignored"}},
        ]
    )
    pg = objs.pod_groups["ns/pg"]
    assert (pg.min_member, pg.schedule_timeout_seconds, pg.min_resources) == (3, 10, {"cpu": 2000})
    assert objs.quotas["team"].min == {"nvidia.com/gpu": 2, "cpu": 1000}
    cq = objs.cluster_queues["cq"]
    assert cq.cohort == "pool" and cq.queueing_strategy == "StrictFIFO"
    fq = cq.resource_groups[0].flavors[0][1]
    assert fq["nvidia.com/gpu"] == o.FlavorQuota(8, None, 2)
    assert fq["cpu"] == o.FlavorQuota(4000, 500, None)
    assert objs.flavors["f"].node_labels == {"pool": "gpu"}
    assert objs.local_queues["ns/lq"].cluster_queue == "cq"
    assert objs.admission_enabled()


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        (pod_group("pg", 0), "PodGroup/pg.spec.minMember"),
        ({**pod_group("pg"), "apiVersion": "v9"}, "PodGroup/pg.apiVersion"),
        (quota("q", lo="5", hi="4"), "ElasticQuota/q.spec.min[nvidia.com/gpu]"),
        (
            {**quota("q"), "spec": {"min": {"cpu": "lots"}}},
            "ElasticQuota/q.spec.min.cpu",
        ),
        (
            {
                **cluster_queue("cq"),
                "spec": {
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [
                                {"name": "f", "resources": [{"name": "memory", "nominalQuota": 1}]}
                            ],
                        }
                    ]
                },
            },
            "ClusterQueue/cq.spec.resourceGroups[0].flavors[0].resources[0].name",
        ),
        ({**local_queue("lq", "cq"), "spec": {}}, "LocalQueue/lq.spec.clusterQueue"),
    ],
)
def test_malformed_objects(obj: dict[str, Any], path: str) -> None:
    with pytest.raises(InputError) as err:
        o.collect([obj])
    assert err.value.problems[0][0] == path


@pytest.mark.parametrize(
    ("objects", "pods", "known", "path", "message"),
    [
        (
            [quota("a", parent="nope")],
            [],
            False,
            "ElasticQuota/a.metadata.labels[quota.scheduling.koordinator.sh/parent]",
            "not found",
        ),
        ([quota("a", parent="b"), quota("b", parent="a")], [], False, "ElasticQuota/", "cycle"),
        (
            [quota("p", lo="2"), quota("c1", lo="2", parent="p"), quota("c2", lo="1", parent="p")],
            [],
            False,
            "ElasticQuota/p.spec.min[nvidia.com/gpu]",
            "more than the parent's 2",
        ),
        (
            [cluster_queue("cq", flavor="nope")],
            [],
            False,
            "ClusterQueue/cq.spec.resourceGroups[0].flavors[0].name",
            'ResourceFlavor "nope"',
        ),
        ([pod_group("lonely")], [], True, "PodGroup/ns/lonely.metadata.name", "no Pod carries"),
    ],
)
def test_bad_job_layer_input(
    objects: list[dict[str, Any]], pods: list[Any], known: bool, path: str, message: str
) -> None:
    with pytest.raises(InputError) as err:
        references.check(objects, pods, all_pods_known=known)
    assert any(p.startswith(path) and message in m for p, m in err.value.problems)


@pytest.mark.parametrize(
    ("objects", "labels", "kind", "key", "referrer"),
    [
        ([local_queue("lq", "missing")], {}, "ClusterQueue", "missing", "LocalQueue/ns/lq"),
        ([], {o.POD_GROUP_LABEL: "gone"}, "PodGroup", "ns/gone", "Pod/ns/p"),
        ([], {o.POD_GROUP_LABEL_KOORDINATOR: "gone"}, "PodGroup", "ns/gone", "Pod/ns/p"),
        ([], {o.QUEUE_NAME_LABEL: "lq"}, "LocalQueue", "ns/lq", "Pod/ns/p"),
        ([], {o.QUOTA_NAME_LABEL: "q"}, "ElasticQuota", "q", "Pod/ns/p"),
    ],
)
def test_missing_references_are_facts_warned_once(
    objects: list[dict[str, Any]],
    labels: dict[str, str],
    kind: str,
    key: str,
    referrer: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A reference to an object the input lacks is no input error: one warning per missing
    object, however many Pods name it (docs/design.md section 5)."""
    pods = [make_pod(name, "ns").labels(**labels).obj() for name in ("p", "q", "r")]
    with caplog.at_level("WARNING", logger="kubesched.admission.references"):
        references.check(objects, pods, all_pods_known=False)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1
    assert lines[0].startswith(f'{kind} "{key}" not found (named by {referrer}')
    found = references.dangling(o.collect(objects), pods)
    assert [(d.kind, d.key, d.referrer) for d in found] == [(kind, key, referrer)]
    assert found[0].count == (1 if kind == "ClusterQueue" else 3)


def test_check_without_warn_is_silent(caplog: pytest.LogCaptureFixture) -> None:
    pods = [make_pod("p", "ns").labels(**{o.POD_GROUP_LABEL: "gone"}).obj()]
    with caplog.at_level("WARNING"):
        references.check([], pods, warn=False)
    assert not caplog.records


def test_inadmissible_messages_are_kueues() -> None:
    """Kueue's workload controller: ``LocalQueue %s doesn't exist`` (the queue's name, not
    namespaced), ``ClusterQueue %s doesn't exist``."""
    objs = o.collect([local_queue("lq", "missing")])
    assert references.inadmissible_message(objs, "ns", "other") == "LocalQueue other doesn't exist"
    assert references.inadmissible_message(objs, "ns", "lq") == "ClusterQueue missing doesn't exist"


def test_consistent_objects_pass() -> None:
    pods = [make_pod("p", "ns").labels(**{o.POD_GROUP_LABEL: "pg", o.QUEUE_NAME_LABEL: "lq"}).obj()]
    objs = references.check(
        [pod_group("pg"), cluster_queue("cq"), flavor(), local_queue("lq", "cq")],
        pods,
        all_pods_known=True,
    )
    assert set(objs.pod_groups) == {"ns/pg"}
