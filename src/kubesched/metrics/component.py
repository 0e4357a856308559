"""What every Kubernetes component exports besides its own metrics: process metrics, the
leader-election gauge and the API client's request metrics.

Upstream (v1.34) registers these in component-base's legacy registry, beside the scheduler's:

- ``process_*``: client_golang's process collector (``process_cpu_seconds_total``,
  ``process_resident_memory_bytes``, ...).  Here prometheus_client's process collector, with
  its platform and garbage-collector collectors (``python_info``, ``python_gc_*``) where Go has
  ``go_*``: the community dashboards (kubernetes-mixin) pick instances by
  ``process_cpu_seconds_total`` and plot CPU and memory from them.
- ``leader_election_master_status{name}`` (component-base
  ``metrics/prometheus/clientgo/leaderelection``): 1 while this process holds the Lease
  ``name`` (``leaderElection.resourceName``), 0 otherwise; set to 0 when the elector is
  created, 1 on acquiring, 0 on losing or releasing the Lease.
- ``rest_client_requests_total{code, method, host}`` and
  ``rest_client_request_duration_seconds{verb, host}`` (component-base
  ``metrics/prometheus/restclient``): one count per answer, ``code`` the HTTP status or
  ``<error>`` when none came back, ``method`` / ``verb`` the HTTP method, ``host`` the API
  server's ``host:port``; the duration, as client-go's ``request()``, runs from before the
  client-side rate limiter to the end of reading the answer, and is observed for requests,
  not for watches (a watch open is counted, as client-go counts it).
"""

from __future__ import annotations

import threading
import urllib.parse

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)

REST_CLIENT_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
"""Upstream ``requestLatency`` buckets (component-base ``restclient/metrics.go``)."""

NO_ANSWER = "<error>"
"""Upstream's ``code`` label when no HTTP answer came back (client-go ``sanitize``)."""

COMPONENT_METRICS: dict[str, tuple[str, tuple[str, ...], tuple[float, ...] | None]] = {
    "leader_election_master_status": ("gauge", ("name",), None),
    "rest_client_requests_total": ("counter", ("code", "method", "host"), None),
    "rest_client_request_duration_seconds": ("histogram", ("verb", "host"), REST_CLIENT_BUCKETS),
}
"""component-base metrics we export: full name -> (type, label names, buckets)."""


def register_process_collectors(registry: CollectorRegistry) -> None:
    """``process_*``, ``python_info`` and ``python_gc_*`` on ``registry``."""
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)


def host_label(url: str) -> str:
    """``host[:port]`` of the API server URL, as Go's ``url.URL.Host`` (``none`` if empty)."""
    return urllib.parse.urlsplit(url).netloc or "none"


class LeaderElectionMetrics:
    """``leader_election_master_status{name}`` (upstream ``leaderAdapter``)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.gauge = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease. "
            "Please make sure to group by name.",
            ["name"],
            registry=registry,
        )

    def on(self, name: str) -> None:
        """This process holds the Lease ``name``."""
        self.gauge.labels(name=name).set(1.0)

    def off(self, name: str) -> None:
        """This process does not hold the Lease ``name``."""
        self.gauge.labels(name=name).set(0.0)


class RestClientMetrics:
    """``rest_client_requests_total`` and ``rest_client_request_duration_seconds``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "method", "host"],
            registry=registry,
        )
        self.duration = Histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            ["verb", "host"],
            registry=registry,
            buckets=REST_CLIENT_BUCKETS,
        )
        self._lock = threading.Lock()
        self._children: dict[tuple[str, str, str], Counter] = {}
        self._durations: dict[tuple[str, str], Histogram] = {}
        """The duration histogram's children by (verb, host): a ``labels()`` lookup costs
        more than the observation, and every request makes one."""

    def answered(self, method: str, host: str, code: int | None) -> None:
        """One answer (``code`` None: no answer came back)."""
        label = NO_ANSWER if code is None or code <= 0 else str(code)
        key = (label, method, host)
        child = self._children.get(key)
        if child is None:
            with self._lock:
                child = self._children.setdefault(
                    key, self.requests.labels(code=label, method=method, host=host)
                )
        child.inc()

    def took(self, verb: str, host: str, seconds: float) -> None:
        """One request (not a watch) took ``seconds``, rate limiter wait included."""
        key = (verb, host)
        child = self._durations.get(key)
        if child is None:
            with self._lock:
                child = self._durations.setdefault(key, self.duration.labels(verb=verb, host=host))
        child.observe(max(0.0, seconds))
