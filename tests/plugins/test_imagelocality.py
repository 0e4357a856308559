"""ImageLocality: upstream v1.34 ``image_locality_test.go`` cases, exact expected scores."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from kubesched.api import objects as api
from kubesched.config.featuregates import FeatureGates
from kubesched.framework import interface as fw
from kubesched.plugins import imagelocality as il
from kubesched.testing import make_cluster, make_node

MB = 1024 * 1024
Images = list[tuple[int, tuple[str, ...]]]

NODE_40_300_2000: Images = [
    (40 * MB, ("gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1")),
    (300 * MB, ("gcr.io/300:latest", "gcr.io/300:v1")),
    (2000 * MB, ("gcr.io/2000:latest",)),
]
NODE_250_10: Images = [
    (250 * MB, ("gcr.io/250:latest",)),
    (10 * MB, ("gcr.io/10:latest", "gcr.io/10:v1")),
]
NODE_600_40_900: Images = [
    (600 * MB, ("gcr.io/600:latest",)),
    (40 * MB, ("gcr.io/40:latest",)),
    (900 * MB, ("gcr.io/900:latest",)),
]
NODE_300_600_900: Images = [
    (300 * MB, ("gcr.io/300:latest",)),
    (600 * MB, ("gcr.io/600:latest",)),
    (900 * MB, ("gcr.io/900:latest",)),
]
NODE_4000_30: Images = [(4000 * MB, ("gcr.io/4000:latest",)), (30 * MB, ("gcr.io/30:latest",))]
NODE_20_30_40: Images = [
    (20 * MB, ("gcr.io/20:latest",)),
    (30 * MB, ("gcr.io/30:latest",)),
    (40 * MB, ("gcr.io/40:latest",)),
]
NO_IMAGES: Images = []


def _node(name: str, images: Images) -> api.Node:
    b = make_node(name)
    for size, names in images:
        b.image(size, *names)
    return b.obj()


CASES = [
    (
        "two images spread on two nodes, prefer the larger image one",
        ("gcr.io/40", "gcr.io/250"),
        [NODE_40_300_2000, NODE_250_10],
        [0, 5],
    ),
    (
        "two images on one node, prefer this node",
        ("gcr.io/40", "gcr.io/300"),
        [NODE_40_300_2000, NODE_250_10],
        [7, 0],
    ),
    (
        "if exceed limit, use limit",
        ("gcr.io/10", "gcr.io/4000"),
        [NODE_4000_30, NODE_250_10],
        [100, 0],
    ),
    (
        "if exceed limit, use limit (with node which has no images present)",
        ("gcr.io/10", "gcr.io/4000"),
        [NODE_4000_30, NODE_250_10, NO_IMAGES],
        [66, 0, 0],
    ),
    (
        "pod with multiple large images, node2 is preferred",
        ("gcr.io/300", "gcr.io/600", "gcr.io/900"),
        [NODE_600_40_900, NODE_300_600_900, NO_IMAGES],
        [32, 36, 0],
    ),
    (
        "pod with multiple small images",
        ("gcr.io/30", "gcr.io/40"),
        [NODE_20_30_40, NODE_4000_30],
        [1, 0],
    ),
    # pod.images lists init-container images first: InitContainers gcr.io/300, Containers gcr.io/30
    (
        "include InitContainers: two images spread on two nodes, prefer the larger image one",
        ("gcr.io/300", "gcr.io/30"),
        [NODE_40_300_2000, NODE_20_30_40],
        [6, 0],
    ),
    (
        "tagged name matches exactly, digest-less name gets :latest",
        ("gcr.io/300:v1", "gcr.io/2000:latest"),
        [NODE_40_300_2000, NODE_250_10],
        [57, 0],
    ),
    ("a pod without containers scores 0", (), [NODE_40_300_2000], [0]),
]


@pytest.mark.parametrize(("name", "images", "nodes", "want"), CASES, ids=[c[0] for c in CASES])
def test_image_locality(
    name: str, images: tuple[str, ...], nodes: list[Images], want: list[int]
) -> None:
    cluster = make_cluster([_node(f"node{i + 1}", imgs) for i, imgs in enumerate(nodes)])
    pl = il.new(None, fw.Handle(cluster))
    pod = api.Pod(name="p", images=images)
    got = pl.score(fw.CycleState(), pod, cluster, cluster.nodes.order())
    assert got.dtype == np.int64
    assert got.tolist() == want


def test_spread_counts_live_nodes_only() -> None:
    img: Images = [(600 * MB, ("gcr.io/600:latest",))]
    cluster = make_cluster([_node("node1", img), _node("node2", img), _node("node3", NO_IMAGES)])
    pl = il.new(None, fw.Handle(cluster))
    pod = api.Pod(name="p", images=("gcr.io/600",))

    def scores() -> list[int]:
        return [int(x) for x in pl.score(fw.CycleState(), pod, cluster, cluster.nodes.order())]

    assert scores() == [38, 38, 0]  # 100 * (600M * 2/3 - 23M) // (1000M - 23M)
    cluster.remove_node("node3")
    assert scores() == [59, 59]  # 100 * (600M * 2/2 - 23M) // (1000M - 23M)
    cluster.remove_node("node2")
    assert scores() == [59]  # 600M * 1/1


def _digest(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode()).hexdigest()


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("root", "root:latest"),
        ("gcr.io:5000/root", "gcr.io:5000/root:latest"),
        ("root:tag", "root:tag"),
        ("root@" + _digest("root"), "root@" + _digest("root")),
    ],
)
def test_normalized_image_name(name: str, want: str) -> None:
    assert il.normalized_image_name(name) == want


def test_ignores_args_as_upstreams_factory_does() -> None:
    """A ``pluginConfig`` entry for ImageLocality is accepted and its args never read
    (issue 30: upstream's ``New`` takes no args)."""
    plugin = il.new({"any": "thing"}, fw.Handle(make_cluster([])))
    assert plugin.name == "ImageLocality"


# --------------------------------------------------------------------------- image volumes
IMAGE_VOLUME_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p"},
    "spec": {
        "containers": [{"name": "c", "image": "gcr.io/30"}],
        "volumes": [
            {"name": "config", "configMap": {"name": "cm"}},
            {"name": "imageVolume", "image": {"reference": "gcr.io/300"}},
        ],
    },
}


@pytest.mark.parametrize(
    ("version", "want"),
    # upstream image_locality_test.go "pod with ImageVolume": v1.36 sums the volume's image
    # but clamps by one container (12), v1.37 clamps by two images (6); v1.34 ignores it.
    [("1.34", [0, 0]), ("1.35", [0, 0]), ("1.36", [12, 0]), ("1.37", [6, 0])],
)
def test_image_volumes_per_release(version: str, want: list[int]) -> None:
    from kubesched.api.parse import parse_pod

    pod = parse_pod(IMAGE_VOLUME_POD)
    assert pod.image_volumes == ("gcr.io/300",)
    cluster = make_cluster([_node("node1", NODE_300_600_900), _node("node2", NODE_4000_30)])
    pl = il.factory(version)(None, fw.Handle(cluster))
    assert isinstance(pl, il.ImageLocality)
    assert pl.score(fw.CycleState(), pod, cluster, cluster.nodes.order()).tolist() == want
    # the registered factory follows the run's release
    handle = fw.Handle(cluster, feature_gates=FeatureGates(version))
    assert (
        il.new(None, handle).score(fw.CycleState(), pod, cluster, cluster.nodes.order()).tolist()
        == want
    )


def test_the_quick_pod_path_leaves_image_volumes_to_the_full_parse() -> None:
    from kubesched.api.podquick import quick_pod

    assert quick_pod(IMAGE_VOLUME_POD) is None
    plain = {**IMAGE_VOLUME_POD, "spec": {**IMAGE_VOLUME_POD["spec"], "volumes": [{"name": "v"}]}}
    quick = quick_pod(plain)
    assert quick is not None and quick.pod.image_volumes == ()


def test_unknown_release_is_refused() -> None:
    with pytest.raises(ValueError, match=r"no such release '1\.33'"):
        il.factory("1.33")
