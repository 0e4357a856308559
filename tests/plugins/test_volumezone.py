"""VolumeZone, the cases of upstream's ``volume_zone_test.go``: bound PVs' zone and region
labels against the node's, beta and GA keys, multi-zone values, unbound claims."""

from __future__ import annotations

import numpy as np
import pytest

from kubesched.api import pods as podparse
from kubesched.explainer.cycle import build_cluster
from kubesched.framework.interface import Code, CycleState, Handle
from kubesched.plugins import volumezone as vz
from tests.plugins._storage import (
    claim_volume,
    explain,
    node,
    pod,
    pv,
    pvc,
    storage_class,
    verdicts,
)

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
GA_ZONE = "topology.kubernetes.io/zone"
CONFLICT = vz.ERR_REASON_CONFLICT


def cluster_with(pv_labels: dict[str, str], *nodes: dict) -> list[dict]:
    return [
        *nodes,
        pvc("c", volume="vol"),
        pv("vol", claim="c", labels=pv_labels),
    ]


@pytest.mark.parametrize(
    ("pv_labels", "node_labels", "ok"),
    [
        ({BETA_ZONE: "us-west1-a"}, {BETA_ZONE: "us-west1-a"}, True),
        ({BETA_ZONE: "us-west1-a"}, {BETA_ZONE: "us-west1-b"}, False),
        ({GA_ZONE: "us-west1-a"}, {GA_ZONE: "us-west1-a"}, True),
        ({BETA_ZONE: "us-west1-a"}, {GA_ZONE: "us-west1-a"}, True),  # the GA twin
        ({BETA_ZONE: "us-west1-a__us-west1-b"}, {BETA_ZONE: "us-west1-b"}, True),
        ({BETA_ZONE: "us-west1-a"}, {"uselessLabel": "none"}, True),  # no topology label
        (
            {"failure-domain.beta.kubernetes.io/region": "r1"},
            {GA_ZONE: "z", "topology.kubernetes.io/region": "r2"},
            False,
        ),
    ],
)
def test_zone_labels(pv_labels: dict[str, str], node_labels: dict[str, str], ok: bool) -> None:
    got = verdicts(
        explain(cluster_with(pv_labels, node("n1", **node_labels)), pod("p", claim_volume("c")))
    )
    if ok:
        assert got["n1"] == (None, [])
    else:
        assert got["n1"] == (vz.NAME, [CONFLICT])


def _pre_filter(items: list[dict]) -> tuple[Code, tuple[str, ...]]:
    cluster, _ = build_cluster([node("n1"), *items])
    plugin = vz.new(None, Handle(cluster))
    _, status = plugin.pre_filter(
        CycleState(), podparse.parse_pod(pod("p", claim_volume("c"))), cluster
    )
    return status.code, status.reasons


@pytest.mark.parametrize(
    ("items", "want"),
    [
        ([], (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ('persistentvolumeclaim "c" not found',))),
        (
            [pvc("c", klass=None)],
            (
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                ("PersistentVolumeClaim had no pv name and storageClass name",),
            ),
        ),
        (
            [pvc("c", klass="gone")],
            (
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                ('storageclass.storage.k8s.io "gone" not found',),
            ),
        ),
        ([pvc("c", klass="wait"), storage_class("wait")], (Code.SKIP, ())),
        (
            [pvc("c", klass="now"), storage_class("now", mode="Immediate")],
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("PersistentVolume had no name",)),
        ),
        (
            [pvc("c", volume="vol")],
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ('persistentvolume "vol" not found',)),
        ),
        ([pvc("c", volume="vol"), pv("vol", claim="c")], (Code.SKIP, ())),
    ],
)
def test_pre_filter(items: list[dict], want: tuple[Code, tuple[str, ...]]) -> None:
    assert _pre_filter(items) == want


def test_filter_only_rows_asked() -> None:
    items = cluster_with({GA_ZONE: "a"}, node("n1", **{GA_ZONE: "a"}), node("n2", **{GA_ZONE: "b"}))
    cluster, _ = build_cluster(items)
    plugin = vz.new(None, Handle(cluster))
    state = CycleState()
    p = podparse.parse_pod(pod("p", claim_volume("c")))
    plugin.pre_filter(state, p, cluster)
    verdict = plugin.filter(state, p, cluster, np.asarray([1, 0], dtype=np.int64))
    assert verdict.codes.tolist() == [1, 0]
