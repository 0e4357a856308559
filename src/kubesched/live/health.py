"""``/metrics``, ``/healthz``, ``/livez`` and ``/readyz`` for ``kubesched run``.

:class:`kubesched.metrics.MetricsServer` with the live scheduler's checks: ``/healthz`` and
``/livez`` fail when the scheduling loop stopped or the leader has not renewed its Lease for
too long (upstream's leader-election health check); ``/readyz`` succeeds once every informer
has synced.  Loopback (127.0.0.1) unless another address is configured.
"""

from __future__ import annotations

from kubesched.metrics import MetricsServer
from kubesched.metrics.server import Check, probe

__all__ = ["Check", "HealthServer", "probe"]


class HealthServer(MetricsServer):
    """Serves metrics and probes on a daemon thread; ``port`` 0 picks a free port."""

    @property
    def url(self) -> str:
        """Base URL (no path)."""
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{self.port}"
