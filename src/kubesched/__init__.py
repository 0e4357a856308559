"""kubesched: a Kubernetes-compatible pod scheduler for large clusters, and its lab.

The public Python API (docs/design.md section 5)::

    import kubesched
    kubesched.explain(cluster, pod, config=None)     # why is it Pending / why that node
    kubesched.schedule(cluster, pods, config=None)   # offline what-if in virtual time

Both take Kubernetes objects as dicts (a ``List`` snapshot as printed by
``kubectl get nodes,pods -A -o json``) and return JSON-ready dicts.  Both also take
``kubernetes_version="1.34"`` (default the newest supported, ``docs/versions.md``) and
``feature_gates={"Name": True}`` (refused as kube-scheduler's ``--feature-gates`` refuses).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "explain", "schedule"]


def explain(
    cluster: Mapping[str, Any] | list[Any],
    pod: Mapping[str, Any],
    config: Mapping[str, Any] | None = None,
    *,
    preemption: bool = False,
    kubernetes_version: str | None = None,
    feature_gates: Mapping[str, bool] | None = None,
    pool_seed: int | None = None,
) -> dict[str, Any]:
    """Every node's filter verdict and reasons, every plugin's score, and the chosen node;
    ``result`` is ``Scheduled``, ``Unschedulable``, ``Gated`` (schedulingGates) or ``Error``.
    ``preemption=True`` adds what preemption would do for an Unschedulable Pod (a dry run).
    An Unschedulable answer says whether the cluster is short of capacity or fragmented
    (``capacity``, see docs/dra.md).

    ``pool_seed`` draws the order in which DynamicResources searches each node's device
    pools (upstream: Go's map order, different call to call; None: by driver and pool
    name): where that order decides (v1.34 and v1.35 keep a device's counters reserved
    after a constraint passes it over), each seed gives one of upstream's possible answers
    (``docs/fidelity.md``)."""
    from kubesched.explainer import explain as _explain

    gates = _gates(kubernetes_version, feature_gates)
    return _explain(cluster, pod, config, preemption=preemption, gates=gates, pool_seed=pool_seed)


def schedule(
    cluster: Mapping[str, Any] | Sequence[Any],
    pods: Mapping[str, Any] | Sequence[Any],
    config: Mapping[str, Any] | None = None,
    *,
    kubernetes_version: str | None = None,
    feature_gates: Mapping[str, bool] | None = None,
    release_seed: int | None = None,
    volume_faults: Mapping[str, str] | None = None,
    claim_faults: Mapping[str, str] | None = None,
    bind_faults: Mapping[str, str] | None = None,
    pool_seed: int | None = None,
) -> dict[str, Any]:
    """Schedule ``pods`` onto ``cluster`` in virtual time; one result per Pod plus a summary.

    ``release_seed`` draws the order in which the Pods one event releases from the
    unschedulable pool are requeued (upstream: Go's map order, different run to run; None:
    the pool's order): each seed gives one of upstream's possible answers where that order
    decides (``docs/fidelity.md``).  ``volume_faults`` asks what if VolumeBinding's PreBind
    writes go wrong: per object (``PersistentVolume/NAME`` or
    ``PersistentVolumeClaim/NAMESPACE/NAME``) one of ``refuseUpdate``, ``resetClaimRef``,
    ``failProvisioning`` or ``bindLater`` (:data:`kubesched.sim.apiserver.VOLUME_FAULTS`).
    ``claim_faults`` asks the same of DynamicResources' ResourceClaim writes: per claim
    (``ResourceClaim/NAMESPACE/NAME``) one of ``refuseStatus``, ``refuseUpdate``,
    ``conflict``, ``allocatedElsewhere`` or ``deleted``
    (:data:`kubesched.plugins.dynamicresources.faults.CLAIM_FAULTS`).
    ``bind_faults`` asks what if a Pod's binding is refused: per Pod (``Pod/NAMESPACE/NAME``)
    ``refuseBinding`` (:data:`kubesched.sim.apiserver.BIND_FAULTS`).
    ``pool_seed`` draws the order DynamicResources searches each node's device pools in, as
    :func:`explain`'s does (which devices an allocation takes, and so where a Pod sharing
    the claim may go, can depend on it)."""
    from kubesched.sim.whatif import schedule as _schedule

    return _schedule(
        cluster,
        pods,
        config,
        gates=_gates(kubernetes_version, feature_gates),
        release_seed=release_seed,
        volume_faults=volume_faults,
        claim_faults=claim_faults,
        bind_faults=bind_faults,
        pool_seed=pool_seed,
    )


def _gates(version: str | None, settings: Mapping[str, bool] | None) -> Any:
    """The :class:`~kubesched.config.featuregates.FeatureGates` of the API's keywords."""
    from kubesched.config import featuregates

    return featuregates.from_spec(version, settings, "")
