"""NodeResourcesFit: does the node have room for the Pod, and how full would it be.

Upstream ``pkg/scheduler/framework/plugins/noderesources/fit.go`` (v1.34), answered for all
candidate nodes at once:

- PreFilter computes the Pod's request vector once (cpu, memory, ephemeral-storage and the
  scalar resources it asks for; ``ignoredResources`` / ``ignoredResourceGroups`` drop
  extended resources only).
- Filter fails a node with ``Too many pods`` and ``Insufficient <resource>`` for every
  resource that does not fit, in upstream's order (pods, cpu, memory, ephemeral-storage,
  scalar resources).  The status is UnschedulableAndUnresolvable when some request exceeds
  the node's whole allocatable (preemption cannot help), else Unschedulable.  A resource the
  node table holds sparse (few nodes have it) is read through its index of rows.
- Score uses the configured ``scoringStrategy`` (LeastAllocated, MostAllocated,
  RequestedToCapacityRatio) over non-zero cpu/memory requests; no NormalizeScore.

Deviations: upstream walks scalar resources in Go map order (random); we list them sorted by
name.  DRA-backed extended resources (DRAExtendedResource): Filter leaves a resource a
DeviceClass backs to DynamicResources on a node whose allocatable has none of it; from v1.35
Score counts such a node's devices of the class instead (``kernels.resources.
with_device_totals``, from DynamicResources' ``extended.TOTALS`` service).  An empty
``scoringStrategy.resources`` scores 0 where upstream returns an Error status.

- :mod:`.plugin`: the plugin (PreFilter, Filter over candidate rows, Score, the one-node
  paths result reuse takes) and its args' validation;
- :mod:`.kernels`: its cycle state and the array kernels (failure bitmasks, verdicts);
- :mod:`.hints`: upstream's queueing hints, and the opt-in ``retryGovernance`` hints.
"""

from kubesched.plugins.noderesources_fit.hints import node_hint, pod_hint
from kubesched.plugins.noderesources_fit.kernels import (
    TOO_MANY_PODS,
    dense_fit_masks,
    fit_masks,
    insufficient,
    node_fits,
    verdict_from_failing,
    verdict_from_masks,
)
from kubesched.plugins.noderesources_fit.plugin import NAME, NodeResourcesFit, new

__all__ = [
    "NAME",
    "TOO_MANY_PODS",
    "NodeResourcesFit",
    "dense_fit_masks",
    "fit_masks",
    "insufficient",
    "new",
    "node_fits",
    "node_hint",
    "pod_hint",
    "verdict_from_failing",
    "verdict_from_masks",
]
