"""``/metrics``, ``/healthz``, ``/livez`` and ``/readyz`` for ``kubesched run``.

Like :class:`kubesched.metrics.MetricsServer` (which answers ``ok`` to every probe), but the
probes here ask the live scheduler: ``/healthz`` and ``/livez`` fail when the scheduling loop
stopped or the leader has not renewed its Lease for too long (upstream's leader-election
health check); ``/readyz`` succeeds once every informer has synced.  A failing probe answers
500 with the failed check's name, as kube-scheduler's ``[-]name failed`` lines.
Loopback (127.0.0.1) unless another address is configured.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kubesched.metrics import CONTENT_TYPE, SchedulerMetrics

Check = Callable[[], bool]
TEXT = "text/plain; charset=utf-8"


def probe(checks: Mapping[str, Check]) -> tuple[int, bytes]:
    """(HTTP code, body) of a health endpoint over named checks."""
    lines, ok = [], True
    for name, check in checks.items():
        try:
            passed = bool(check())
        except Exception:  # a broken check is a failed check
            passed = False
        ok &= passed
        lines.append(f"[{'+' if passed else '-'}]{name} {'ok' if passed else 'failed'}")
    if ok:
        return 200, b"ok"
    return 500, ("\n".join(lines) + "\nhealthz check failed\n").encode()


class HealthServer:
    """Serves metrics and probes on a daemon thread; ``port`` 0 picks a free port."""

    def __init__(
        self,
        metrics: SchedulerMetrics,
        address: str = "127.0.0.1",
        port: int = 0,
        *,
        health: Mapping[str, Check] | None = None,
        ready: Mapping[str, Check] | None = None,
    ) -> None:
        health_checks = dict(health or {})
        ready_checks = {**health_checks, **(ready or {})}

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                ctype = TEXT
                if path == "/metrics":
                    code, body, ctype = 200, metrics.exposition(), CONTENT_TYPE
                elif path in ("/healthz", "/livez"):
                    code, body = probe(health_checks)
                elif path == "/readyz":
                    code, body = probe(ready_checks)
                else:
                    code, body = 404, b"not found\n"
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                del format, args

        self._server = ThreadingHTTPServer((address, port), Handler)
        self._server.daemon_threads = True
        self.address = address
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="kubesched-health", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        """Base URL (no path)."""
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{self.port}"

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
