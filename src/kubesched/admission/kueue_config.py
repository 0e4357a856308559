"""Kueue's own configuration (``Configuration``, ``config.kueue.x-k8s.io/v1beta1``): the parts
the admission layer honours.

- ``fairSharing``: ``enable`` (default false) and ``preemptionStrategies`` (default
  ``[LessThanOrEqualToFinalShare, LessThanInitialShare]``; Kueue accepts exactly these
  three lists: either one alone, or both in that order);
- ``waitForPodsReady``: ``enable`` (default false), ``timeout`` (Go duration, default
  ``5m``) and ``requeuingStrategy``: ``timestamp`` (``Eviction``, the default, or
  ``Creation``), ``backoffLimitCount`` (default null: unlimited), ``backoffBaseSeconds``
  (default 60) and ``backoffMaxSeconds`` (default 3600).

As in Kueue, ``requeuingStrategy`` applies to workloads evicted because their Pods were not
ready in time (reason ``PodsReadyTimeout``): they wait ``backoffBaseSeconds * 2^(n-1)``
seconds (capped at ``backoffMaxSeconds``) before the n-th requeue, are ordered by their
eviction time under ``timestamp: Eviction``, and are deactivated once evicted more than
``backoffLimitCount`` times.  Workloads evicted by preemption go back to their queue at
once, ordered by their creation time (Kueue's ``workload.Ordering``).

Deviations: Kueue adds a random jitter of 0.01 % to the backoff; we leave it out so runs
stay deterministic.  "Pods ready" is "every member bound" in the simulator (no container
start-up is modelled).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.api import fields as f
from kubesched.config.decode import parse_go_duration

API_VERSION = "config.kueue.x-k8s.io/v1beta1"
KIND = "Configuration"

LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"
DEFAULT_STRATEGIES = (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE)
VALID_STRATEGIES = (
    (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,),
    (LESS_THAN_INITIAL_SHARE,),
    DEFAULT_STRATEGIES,
)
EVICTION_TIMESTAMP = "Eviction"
CREATION_TIMESTAMP = "Creation"


@dataclass(frozen=True, slots=True)
class KueueConfig:
    """What the admission layer reads from Kueue's ``Configuration``."""

    fair_sharing: bool = False
    """``fairSharing.enable``: order and preempt across a cohort by dominant resource share."""
    preemption_strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    """``fairSharing.preemptionStrategies``, tried in order."""
    wait_for_pods_ready: bool = False
    """``waitForPodsReady.enable``: evict admitted workloads whose Pods are not all ready."""
    pods_ready_timeout: float = 300.0
    """``waitForPodsReady.timeout`` in seconds (default 5 minutes)."""
    requeuing_timestamp: str = EVICTION_TIMESTAMP
    """``waitForPodsReady.requeuingStrategy.timestamp``: ``Eviction`` or ``Creation``."""
    backoff_limit_count: int | None = None
    """``requeuingStrategy.backoffLimitCount``: requeues before deactivation (None: no limit)."""
    backoff_base_seconds: int = 60
    """``requeuingStrategy.backoffBaseSeconds``."""
    backoff_max_seconds: int = 3600
    """``requeuingStrategy.backoffMaxSeconds``."""

    def backoff_seconds(self, count: int) -> float:
        """Seconds before the ``count``-th requeue after a PodsReady timeout (count >= 1):
        ``backoffBaseSeconds * 2^(count-1)``, at most ``backoffMaxSeconds``."""
        if count < 1:
            return 0.0
        return float(
            min(self.backoff_base_seconds * 2 ** min(count - 1, 62), self.backoff_max_seconds)
        )


def _non_negative(obj: Mapping[str, Any], key: str, path: str, default: int | None) -> int | None:
    value = f.integer(obj, key, path)
    if value is None:
        return default
    if value < 0:
        f.fail(f.join(path, key), "must be greater than or equal to 0")
    return value


def parse_configuration(obj: Mapping[str, Any], path: str = "Configuration") -> KueueConfig:
    """A Kueue ``Configuration`` object (``apiVersion`` and ``kind`` may be left out);
    errors name the field under ``path``."""
    version = obj.get("apiVersion")
    if version is not None and version != API_VERSION:
        f.fail(f.join(path, "apiVersion"), f"must be {API_VERSION}")
    kind = obj.get("kind")
    if kind is not None and kind != KIND:
        f.fail(f.join(path, "kind"), f"must be {KIND}")
    fair = f.mapping(obj, "fairSharing", path)
    fp = f.join(path, "fairSharing")
    strategies = f.string_list(fair, "preemptionStrategies", fp) or DEFAULT_STRATEGIES
    if strategies not in VALID_STRATEGIES:
        f.fail(
            f.join(fp, "preemptionStrategies"),
            "must be one of " + "; ".join("[" + ", ".join(s) + "]" for s in VALID_STRATEGIES),
        )
    ready = f.mapping(obj, "waitForPodsReady", path)
    rp = f.join(path, "waitForPodsReady")
    timeout = 300.0
    if ready.get("timeout") is not None:
        text = ready["timeout"]
        parsed = parse_go_duration(text) if isinstance(text, str) else None
        if parsed is None or parsed <= 0:
            f.fail(f.join(rp, "timeout"), f"must be a positive duration such as 5m, got {text!r}")
        timeout = parsed
    rq = f.mapping(ready, "requeuingStrategy", rp)
    qp = f.join(rp, "requeuingStrategy")
    base = _non_negative(rq, "backoffBaseSeconds", qp, 60)
    cap = _non_negative(rq, "backoffMaxSeconds", qp, 3600)
    assert base is not None and cap is not None
    return KueueConfig(
        fair_sharing=f.boolean(fair, "enable", fp),
        preemption_strategies=strategies,
        wait_for_pods_ready=f.boolean(ready, "enable", rp),
        pods_ready_timeout=timeout,
        requeuing_timestamp=f.one_of(
            rq, "timestamp", qp, (EVICTION_TIMESTAMP, CREATION_TIMESTAMP), EVICTION_TIMESTAMP
        ),
        backoff_limit_count=_non_negative(rq, "backoffLimitCount", qp, None),
        backoff_base_seconds=base,
        backoff_max_seconds=cap,
    )
