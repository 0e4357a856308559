"""``/metrics`` and the health probes (``/healthz``, ``/livez``, ``/readyz``) over HTTP, on a
thread.

Probes run named checks: with none (the default, as in ``simulate`` or ``bench``) they answer
``ok``; ``kubesched run`` passes checks of the live scheduler.  A failing probe answers 500
with the failed check's name, as kube-scheduler's ``[-]name failed`` lines.
"""

from __future__ import annotations

import errno
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from prometheus_client import generate_latest

from kubesched.api.errors import InputError, excerpt
from kubesched.metrics.catalog import (
    CONTENT_TYPE,
)

if TYPE_CHECKING:
    from kubesched.metrics.scheduler_metrics import SchedulerMetrics

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


def _bind(address: str, port: int, handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    """The HTTP server on ``address:port``; a port in use, out of range or an address that
    cannot be served is an :class:`InputError` naming the flag (exit code 2)."""
    try:
        return ThreadingHTTPServer((address, port), handler)
    except OverflowError:
        raise InputError([("--metrics-port", f"must be 0..65535, got {port}")]) from None
    except (OSError, UnicodeError) as err:
        if isinstance(err, OSError) and err.errno == errno.EADDRINUSE:
            problem = ("--metrics-port", f"port {port} on {excerpt(address)} is already in use")
        else:
            why = getattr(err, "strerror", None) or str(err)
            problem = ("--metrics-address", f"cannot serve on {excerpt(address)}: {why}")
        raise InputError([problem]) from None


class MetricsServer:
    """``/metrics`` (text exposition) and the probes on a background thread.

    ``health`` checks back ``/healthz`` and ``/livez``; ``/readyz`` runs those and ``ready``.
    ``port`` 0 picks a free port (read it back from :attr:`port`).  Loopback by default.
    """

    def __init__(
        self,
        metrics: SchedulerMetrics,
        address: str = "127.0.0.1",
        port: int = 0,
        *,
        health: Mapping[str, Check] | None = None,
        ready: Mapping[str, Check] | None = None,
    ) -> None:
        registry = metrics.registry
        health_checks = dict(health or {})
        ready_checks = {**health_checks, **(ready or {})}

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                ctype = TEXT
                if path == "/metrics":
                    code, body, ctype = 200, generate_latest(registry), CONTENT_TYPE
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
                del format, args  # scrapes are not worth a log line

        self._server = _bind(address, port, Handler)
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
