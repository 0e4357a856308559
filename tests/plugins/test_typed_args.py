"""Plugins whose configuration args were raw mappings take typed args too, and the raw form
decodes to the same typed value."""

from __future__ import annotations

import numpy as np

from kubesched.framework.interface import Handle
from kubesched.plugins import gpu_random, interpodaffinity
from kubesched.state.cache import ClusterState


def test_inter_pod_affinity_args() -> None:
    raw = {"hardPodAffinityWeight": 7, "ignorePreferredTermsOfExistingPods": True}
    typed = interpodaffinity.InterPodAffinityArgs(7, True)
    assert interpodaffinity.InterPodAffinityArgs.from_raw(raw) == typed
    for args in (raw, typed):
        p = interpodaffinity.new(args, Handle(ClusterState()))
        assert p.hard_pod_affinity_weight == 7
        assert p.ignore_preferred_terms_of_existing_pods
    p = interpodaffinity.new(None, Handle(ClusterState()))
    assert (p.hard_pod_affinity_weight, p.ignore_preferred_terms_of_existing_pods) == (1, False)


def test_gpu_random_args() -> None:
    a = gpu_random.new({"seed": 3}, Handle(ClusterState()))
    b = gpu_random.new(gpu_random.GpuRandomArgs(3), Handle(ClusterState()))
    assert a.rng.integers(1 << 30) == b.rng.integers(1 << 30)
    shared = np.random.default_rng(5)
    assert gpu_random.new({"seed": 3}, Handle(ClusterState(), rng=shared)).rng is shared
