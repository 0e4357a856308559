"""Transport for HTTP scheduler extenders: TLS as upstream's ``makeTransport`` builds it, and
a pool of keep-alive connections whose ``post`` honours one deadline for the whole call (Go's
``http.Client.Timeout``), retrying once on a fresh connection when the server had closed an
idle one (as Go's transport does).  Standard library only (``http.client``, ``ssl``).

The deadline covers connect, send, the wait for the answer and reading it: every read from
the socket (status line, headers, body, chunked or not) waits at most the time left, so an
answer trickled a byte at a time fails at the deadline like a silent server.  An answer is
read up to :func:`answer_limit` bytes (upstream has no bound; Go's decoder would read a
gigabyte): past it the call fails with :class:`AnswerTooLarge`."""

from __future__ import annotations

import functools
import http.client
import io
import socket
import ssl
import threading
import time
import urllib.parse

MIN_ANSWER_LIMIT = 64 * 1024 * 1024
"""Bytes an answer may always have: node names and scores for any cluster size fit many
times over (5,000 nodes of ``{"Host": ..., "Score": ...}`` are about 300 KiB)."""
READ_CHUNK = 64 * 1024


def answer_limit(request_bytes: int) -> int:
    """The most an answer to a ``request_bytes`` request may have: 64 MiB, or twice the
    request when that is more (a filter answer of an extender that is not node-cache capable
    echoes the full Nodes it was sent, so it grows with the request, never beyond it)."""
    return max(MIN_ANSWER_LIMIT, 2 * request_bytes)


class AnswerTooLarge(http.client.HTTPException):
    """The answer exceeded :func:`answer_limit`."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"answer larger than {limit} bytes (the limit for this request)")


class _DeadlineReader(io.RawIOBase):
    """The socket's reader with the call's deadline: each read waits at most the time left
    and none starts after the deadline (``TimeoutError``)."""

    def __init__(self, raw: io.RawIOBase, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self._raw = raw
        self._sock = sock
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int | None:  # type: ignore[override]
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("timed out")
        self._sock.settimeout(remaining)
        return self._raw.readinto(buffer)

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


class _DeadlineResponse(http.client.HTTPResponse):
    """An ``HTTPResponse`` reading through :class:`_DeadlineReader`."""

    def __init__(self, sock: socket.socket, *args: object, deadline: float, **kw: object) -> None:
        super().__init__(sock, *args, **kw)  # type: ignore[arg-type]
        raw = self.fp.detach()  # the unread buffered file the base class made; keeps its raw
        self.fp = io.BufferedReader(_DeadlineReader(raw, sock, deadline))


def _read_body(resp: http.client.HTTPResponse, limit: int) -> bytes:
    """The whole body, refused past ``limit`` bytes (announced or read)."""
    length = resp.getheader("Content-Length")
    if length is not None and length.strip().isdigit() and int(length) > limit:
        raise AnswerTooLarge(limit)
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = resp.read1(READ_CHUNK)
        if not chunk:
            resp.read()  # b"": marks the response done, so the connection can be reused
            return b"".join(chunks)
        total += len(chunk)
        if total > limit:
            raise AnswerTooLarge(limit)
        chunks.append(chunk)


class _HTTPSConnection(http.client.HTTPSConnection):
    """HTTPS with ``serverName`` as the verified name and SNI (default: the URL host)."""

    def __init__(self, host: str, port: int | None, *, context: ssl.SSLContext, sni: str):
        super().__init__(host, port, context=context)
        self._ctx = context
        self._sni = sni

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = self._ctx.wrap_socket(sock, server_hostname=self._sni or self.host)


_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


class ConnectionPool:
    """Keep-alive connections to one base URL, shared by threads; ``post`` is one call."""

    def __init__(self, url_prefix: str, timeout: float, context: ssl.SSLContext | None):
        self.bad_url = ""
        """Why ``url_prefix`` is no URL to call (a port out of range, an unclosed IPv6
        bracket): every call fails with it, as upstream's client fails each request."""
        try:
            parts = urllib.parse.urlsplit(url_prefix)
            self.port = parts.port
        except ValueError as e:
            parts, self.port, self.bad_url = urllib.parse.urlsplit(""), None, str(e)
        self.https = parts.scheme == "https"
        self.host = parts.hostname or "localhost"
        self.base = url_prefix.rstrip("/")
        self.base_path = parts.path.rstrip("/")
        self.timeout = timeout
        self.context = context or (ssl.create_default_context() if self.https else None)
        self.sni = ""
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def _new(self) -> http.client.HTTPConnection:
        if self.https:
            assert self.context is not None
            return _HTTPSConnection(self.host, self.port, context=self.context, sni=self.sni)
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def _take(self) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
        return self._new(), False

    def _give(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            self._idle.append(conn)

    def post(self, verb: str, body: bytes) -> tuple[int, bytes]:
        """POST ``body`` to ``<urlPrefix>/<verb>``; (status, response body).  Raises
        ``TimeoutError`` past the timeout and ``OSError`` / ``http.client`` errors."""
        if self.bad_url:
            raise http.client.InvalidURL(f"invalid URL {self.base!r}: {self.bad_url}")
        deadline = time.monotonic() + self.timeout
        conn, reused = self._take()
        try:
            result = self._roundtrip(conn, verb, body, deadline)
        except _STALE:
            conn.close()
            if not reused:
                raise
            conn = self._new()  # the server closed an idle connection: one fresh try
            try:
                result = self._roundtrip(conn, verb, body, deadline)
            except BaseException:
                conn.close()
                raise
        except BaseException:
            conn.close()
            raise
        self._give(conn)
        return result

    def _roundtrip(
        self, conn: http.client.HTTPConnection, verb: str, body: bytes, deadline: float
    ) -> tuple[int, bytes]:
        def left() -> float:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("timed out")
            return remaining

        conn.timeout = left()
        if conn.sock is None:
            conn.connect()
        conn.sock.settimeout(left())
        headers = {"Content-Type": "application/json", "Content-Length": str(len(body))}
        conn.request("POST", f"{self.base_path}/{verb}", body=body, headers=headers)
        conn.sock.settimeout(left())
        conn.response_class = functools.partial(_DeadlineResponse, deadline=deadline)  # type: ignore[assignment]
        resp = conn.getresponse()
        try:
            data = _read_body(resp, answer_limit(len(body)))
        except BaseException:
            resp.close()
            raise
        return resp.status, data

    def close(self) -> None:
        """Close every idle connection."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
