"""ImageLocality: prefer nodes that already hold the Pod's container images.

Upstream ``pkg/scheduler/framework/plugins/imagelocality/image_locality.go`` (v1.34).  Each
image of the Pod (init and app containers, ``pod.images``: one entry per container) that a
node holds adds ``int64(size * numNodesWithImage / totalNumNodes)`` to the node's sum; the
sum is clamped to ``[23 MiB, 1000 MiB * numContainers]`` and mapped linearly to 0..100 with
integer division.  Image names without a tag get ``:latest`` before the lookup.  Score only;
no PreScore, no NormalizeScore.

Image volumes (``spec.volumes[].image``, ``pod.image_volumes``) count from v1.36: v1.36 adds
their images to the sum (the clamp still counts containers only), v1.37 counts them in the
clamp too.  :func:`factory` gives a release's plugin; :func:`new` is v1.34's.

Deviation: upstream takes an image's size from the first node that reported it; we use each
node's own reported size (they differ only if nodes disagree on one image's size).
"""

from __future__ import annotations

import numpy as np

from kubesched.api import objects as api
from kubesched.config import names
from kubesched.framework import interface as fw
from kubesched.state.cache import ClusterState
from kubesched.state.nodes import IntArray

NAME = names.IMAGE_LOCALITY
MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB
DEFAULT_IMAGE_TAG = "latest"


# --------------------------------------------------------------------------- plugin
class ImageLocality:
    """Scores nodes by the (spread-scaled) size of the Pod's images already on them."""

    name = NAME
    node_only = True
    """Answers depend on the node object only, not on the Pods placed on it."""

    def __init__(
        self,
        args: object | None,
        handle: fw.Handle,
        sum_image_volumes: bool = False,
        count_image_volumes: bool = False,
    ) -> None:
        self.handle = handle
        self.sum_image_volumes = sum_image_volumes
        """Image volumes' images add to the sum (v1.36+)."""
        self.count_image_volumes = count_image_volumes
        """Image volumes count in the clamp's maximum (v1.37+)."""

    def _images(self, pod: api.Pod) -> tuple[str, ...]:
        if self.sum_image_volumes and pod.image_volumes:
            return (*pod.images, *pod.image_volumes)
        return pod.images

    def sign(self, pod: api.Pod) -> object:
        """Result reuse: the answer depends on the Pod's images only."""
        return self._images(pod)

    def score(
        self, state: fw.CycleState, pod: api.Pod, cluster: ClusterState, rows: IntArray
    ) -> IntArray:
        """Raw 0..100 scores, int64 ``(n,)``."""
        nodes = cluster.nodes
        total = len(nodes)
        sums = np.zeros(rows.shape[0], dtype=np.int64)
        if total == 0:
            return sums
        found = False
        images = self._images(pod)
        for image in images:
            col = nodes.image_sizes.get(normalized_image_name(image))
            if col is None:
                continue
            found = True
            num_nodes = int(np.count_nonzero(col[nodes.alive]))
            sums += scaled_image_score(col[rows], num_nodes, total)
        if not found:  # no node has any of the images: every sum is 0, so every score is 0
            return sums
        count = len(pod.images) + (len(pod.image_volumes) if self.count_image_volumes else 0)
        return calculate_priority(sums, count)


# --------------------------------------------------------------------------- kernels
def normalized_image_name(name: str) -> str:
    """Upstream ``normalizedImageName``: append ``:latest`` when the name has no tag."""
    if name.rfind(":") <= name.rfind("/"):
        return f"{name}:{DEFAULT_IMAGE_TAG}"
    return name


def scaled_image_score(sizes: IntArray, num_nodes: int, total_nodes: int) -> IntArray:
    """``int64(float64(size) * (numNodes / totalNodes))`` per node, int64 ``(n,)``.

    ``sizes``: int64 ``(n,)``, the image's size on each node (0 where absent, scoring 0).
    """
    spread = float(num_nodes) / float(total_nodes)
    return np.trunc(sizes.astype(np.float64) * spread).astype(np.int64)


def calculate_priority(sums: IntArray, num_containers: int) -> IntArray:
    """Upstream ``calculatePriority``: clamp the sums and map them to 0..100, int64 ``(n,)``."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    clamped = np.where(sums < MIN_THRESHOLD, MIN_THRESHOLD, sums)
    clamped = np.where(clamped > max_threshold, max_threshold, clamped)
    den = max_threshold - MIN_THRESHOLD
    num = fw.MAX_NODE_SCORE * (clamped - MIN_THRESHOLD)
    if den <= 0:  # a Pod with no containers: numerator is 0 too, and Go gives 0
        return np.zeros(sums.shape[0], dtype=np.int64)
    return (num // den).astype(np.int64)


RELEASES: dict[str, tuple[bool, bool]] = {
    "1.34": (False, False),
    "1.35": (False, False),
    "1.36": (True, False),
    "1.37": (True, True),
}
"""Per release: (image volumes add to the sum, image volumes count in the clamp)."""


def factory(version: str) -> fw.PluginFactory:
    """The plugin factory of Kubernetes ``version`` (a key of :data:`RELEASES`)."""
    if version not in RELEASES:
        raise ValueError(f"{NAME}: no such release {version!r} (known: {', '.join(RELEASES)})")
    sums, counts = RELEASES[version]

    def make(args: object | None, handle: fw.Handle) -> ImageLocality:
        return ImageLocality(None, handle, sums, counts)

    return make


def new(args: object | None, handle: fw.Handle) -> ImageLocality:
    """Factory of the run's release (``handle.feature_gates.version``); ImageLocality takes
    no args (any ``pluginConfig`` args are ignored, as upstream's factory ignores them)."""
    sums, counts = RELEASES[handle.feature_gates.version]
    return ImageLocality(None, handle, sums, counts)
