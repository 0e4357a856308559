"""InterPodAffinity: required and preferred inter-pod (anti-)affinity (upstream v1.34).

- :mod:`.terms`: Pod terms compiled once (upstream ``PodInfo`` / ``AffinityTerm``);
- :mod:`.index`: matching-Pod counts kept current by a cache observer;
- :mod:`.filtering`: PreFilter / Filter kernels; :mod:`.scoring`: PreScore / Score /
  NormalizeScore kernels;
- :mod:`.plugin`: the plugin class, its queueing hints and the factory.

Deviations from upstream: ``matchLabelKeys`` / ``mismatchLabelKeys`` are merged into the
selectors here (the API server does it upstream, so already-merged Pods are unaffected); a
namespace that holds Pods but was never declared counts as existing with no labels.

PreFilterExtensions (AddPod / RemovePod, used by preemption's dry runs and the nominated-Pod
pass) update a copy of the cycle's counts (:func:`.filtering.with_pod`).
"""

from kubesched.plugins.interpodaffinity.plugin import (
    NAME,
    InterPodAffinity,
    InterPodAffinityArgs,
    new,
)

__all__ = ["NAME", "InterPodAffinity", "InterPodAffinityArgs", "new"]
