"""``/metrics`` and ``/healthz`` over HTTP, on a thread."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from prometheus_client import generate_latest

from kubesched.metrics.catalog import (
    CONTENT_TYPE,
)

if TYPE_CHECKING:
    from kubesched.metrics import SchedulerMetrics


class MetricsServer:
    """``/metrics`` (text exposition) and ``/healthz`` on a background thread.

    ``port`` 0 picks a free port (read it back from :attr:`port`).  Loopback by default.
    """

    def __init__(self, metrics: SchedulerMetrics, address: str = "127.0.0.1", port: int = 0):
        registry = metrics.registry

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    body, ctype, code = generate_latest(registry), CONTENT_TYPE, 200
                elif path in ("/healthz", "/livez", "/readyz"):
                    body, ctype, code = b"ok", "text/plain; charset=utf-8", 200
                else:
                    body, ctype, code = b"not found\n", "text/plain; charset=utf-8", 404
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                del format, args  # scrapes are not worth a log line

        self._server = ThreadingHTTPServer((address, port), Handler)
        self._server.daemon_threads = True
        self.address = address
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="kubesched-metrics", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        """The ``/metrics`` URL."""
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> MetricsServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
