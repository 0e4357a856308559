"""A delaying HTTP proxy of ours in front of the real kube-apiserver (loopback only).

kubesched talks plain HTTP to the proxy (its kubeconfig names ``http://127.0.0.1:PORT`` and
carries the ServiceAccount token); the proxy forwards every request over TLS to the API
server, streaming answers (watches are chunked streams) back.  :meth:`DelayingProxy.slow`
holds the next requests matching a pattern before forwarding them, so the API server writes
them late, after the client gave up: the slow-bind fault of issue 17 against the real thing.
"""

from __future__ import annotations

import http.client
import re
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

from tests.live.fakeapi import Server

HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host"}


class DelayingProxy:
    """``http://127.0.0.1:port`` → ``upstream`` (https), with injectable delays."""

    def __init__(self, upstream: str, ca_file: str) -> None:
        self.upstream = urlsplit(upstream)
        self.context = ssl.create_default_context(cafile=ca_file)
        self._delays: list[tuple[re.Pattern[str], float, list[int]]] = []
        self._lock = threading.Lock()
        self.forwarded: list[tuple[float, str]] = []
        proxy = self

        class Handler(_Handler):
            owner = proxy

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def slow(self, pattern: str, seconds: float, times: int = 1) -> None:
        """Hold the next ``times`` requests whose ``METHOD path`` matches for ``seconds``."""
        with self._lock:
            self._delays.append((re.compile(pattern), seconds, [times]))

    def hold(self, line: str) -> None:
        with self._lock:
            seconds = 0.0
            for pattern, s, left in self._delays:
                if left[0] > 0 and pattern.search(line):
                    left[0] -= 1
                    seconds = s
                    break
        if seconds:
            time.sleep(seconds)

    def connect(self) -> http.client.HTTPSConnection:
        host = self.upstream.hostname or "127.0.0.1"
        return http.client.HTTPSConnection(
            host, self.upstream.port, context=self.context, timeout=120
        )

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    owner: DelayingProxy
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._forward()

    def do_POST(self) -> None:
        self._forward()

    def do_PUT(self) -> None:
        self._forward()

    def do_PATCH(self) -> None:
        self._forward()

    def do_DELETE(self) -> None:
        self._forward()

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        line = f"{self.command} {self.path}"
        self.owner.hold(line)  # the client may have given up by now: forward anyway
        conn = self.owner.connect()
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        try:
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            self.owner.forwarded.append((time.monotonic(), line))
            self.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in HOP and k.lower() != "content-length":
                    self.send_header(k, v)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            while True:
                chunk = resp.read1(65536)
                if not chunk:
                    break
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, TimeoutError, OSError):
            self.close_connection = True
        finally:
            conn.close()
