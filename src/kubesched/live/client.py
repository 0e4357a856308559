"""The edge to the API server: the only module of kubesched that imports ``kubernetes``.

The official client loads kubeconfig files and in-cluster service-account credentials
(certificates, bearer tokens, exec plugins, token refresh) and owns the HTTP connection pool.
Requests go through its raw layer (``param_serialize`` + ``call_api``, the equivalent of
``_preload_content=False``) and come back as plain JSON dicts, because kubesched reads objects
with its own parsers and because the generated models cannot read everything the API server
answers: ``create_namespaced_binding`` receives a ``Status`` and fails to deserialise it as a
``V1Binding`` (kubernetes-client/python#825), and watch streams are consumed line by line.

Every request is JSON (``clientConnection.contentType``, protobuf by default upstream, is
not used: kubesched reads plain dicts).  Answers and watch events are decoded with
msgspec's C decoder (about 1.5x the standard library's speed on a page of Pods, the
decoding of a large cluster's first LIST being seconds; integers stay exact); what it
refuses and ``json`` takes (``NaN``, lone surrogates, numbers beyond float range) no API
server sends.  A watch's chunked body is read a block at a time under urllib3
(:func:`_dechunked_lines`): every event that has arrived is framed and split in one pass, so
the watching thread takes the interpreter lock back once per block, not twice per event.

Errors are decided here, once: :class:`ApiError` carries the HTTP code and says whether a
retry can help (:attr:`ApiError.retryable`: 429, 5xx, connection failures).  Requests are
paced by a token bucket with ``clientConnection.qps`` / ``burst`` (client-go's
``flowcontrol`` limiter); watches are not paced once open.  Underneath, urllib3 retries
idempotent requests answered 429/503 with a ``Retry-After`` header, as client-go does.

Writes that are not idempotent (POST and PATCH: binds, Events, status patches -- two or
three per scheduled Pod, the bulk of live mode's requests) go through libcurl
(:class:`CurlWriter`, pycurl) on a keep-alive connection per thread when the configuration
allows it (no proxy): a request costs about a third of the CPU it costs through urllib3 and
``http.client`` (whose header parsing runs the ``email`` package).  The same answers, errors
and metrics either way; urllib3 never retries these methods, and a connection that cannot be
made is retried up to three times, as urllib3's default does.  Writes nobody waits for
(live mode's binds) go through :class:`WritesInFlight`: one thread keeps many of them in
flight with libcurl's multi interface and calls back with each answer; a client's siblings
share it, each write paced by its own client's limiter.  Writes whose answers are only read
for success, in batches (live mode's Events), go through :class:`PipelinedPosts`: HTTP/1.1
keep-alive connections of their own, each batch sent back to back (pipelined) by the
caller's thread, at about half the CPU per write of libcurl's transfers.

With a :class:`~kubesched.metrics.RestClientMetrics`, every answer is counted in
``rest_client_requests_total`` and every request's duration (rate limiter wait included)
observed in ``rest_client_request_duration_seconds``, as client-go's ``rest`` package does;
urllib3's own retries underneath count once, as the answer they end with.
"""

from __future__ import annotations

import collections
import contextlib
import http.client
import io
import json
import logging
import os
import select
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pycurl
import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from kubesched.api import source
from kubesched.api.errors import InputError
from kubesched.metrics import RestClientMetrics, host_label

log = logging.getLogger(__name__)

Obj = dict[str, Any]

DEFAULT_TIMEOUT = 10.0
"""Seconds a non-watch request may take before it fails as retryable."""
RETRYABLE = frozenset({429, 500, 502, 503, 504})
AUTH_REFRESH_SECONDS = 1.0
"""How long a write's credentials (a bearer token a refresh hook may renew) are reused."""


class ApiError(Exception):
    """A failed request: ``code`` is the HTTP status (0 when no answer came back)."""

    def __init__(
        self, code: int, message: str, reason: str = "", retry_after: float | None = None
    ) -> None:
        super().__init__(f"{code} {reason}: {message}" if reason else f"{code}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        """Temporary: throttled, server error or no connection."""
        return self.code == 0 or self.code in RETRYABLE

    @property
    def gone(self) -> bool:
        """410: the resourceVersion is too old; relist."""
        return self.code == 410


class WatchEvent(msgspec.Struct, gc=False):
    """A watch event's line, its object left as JSON text."""

    type: str = ""
    object: msgspec.Raw = msgspec.Raw(b"null")


_split_event: Any = msgspec.json.Decoder(WatchEvent).decode

#: A watched object's JSON text as the stream carried it (``watch_texts``), undecoded.
ObjectText = msgspec.Raw


class RateLimiter:
    """Token bucket: ``qps`` tokens per second, at most ``burst`` saved (qps <= 0: no limit)."""

    def __init__(self, qps: float, burst: int, clock: Any = time.monotonic) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self.clock = clock
        self._tokens = float(self.burst)
        self._last = clock()
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Take a token; the seconds to wait before using it."""
        if self.qps <= 0:
            return 0.0
        with self._lock:
            now = self.clock()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def wait(self) -> None:
        """Block until a token is available."""
        delay = self.reserve()
        if delay > 0:
            time.sleep(delay)


def _status_error(status: int, data: bytes, headers: Mapping[str, str]) -> ApiError:
    message, reason = data.decode("utf-8", "replace")[:512], ""
    try:
        body = json.loads(data)
        if isinstance(body, dict):
            message, reason = str(body.get("message", message)), str(body.get("reason", ""))
    except ValueError:
        pass
    retry_after = None
    if headers.get("Retry-After", "").isdigit():
        retry_after = float(headers["Retry-After"])
    return ApiError(status, message, reason, retry_after)


class CurlWriter:
    """POST and PATCH through libcurl: one easy handle (a keep-alive connection) per thread,
    TLS and credentials as the official client's configuration says."""

    CONNECT_RETRIES = 3
    """Attempts after a connection that could not be made (urllib3's default ``Retry``)."""

    def __init__(self, conf: Any) -> None:
        self._conf = conf
        self._local = threading.local()

    @staticmethod
    def supports(conf: Any) -> bool:
        """Whether libcurl can speak for ``conf`` exactly as urllib3 does: no proxy, no
        custom socket options, no inline CA data without a file."""
        return not (
            getattr(conf, "proxy", None)
            or conf.socket_options is not None
            or (conf.ca_cert_data and not conf.ssl_ca_cert)
        )

    def _handle(self) -> Any:
        curl = getattr(self._local, "curl", None)
        if curl is None:
            curl = self._local.curl = self.new_handle()
        return curl

    def new_handle(self) -> Any:
        """An easy handle with the configuration's TLS and client certificate."""
        conf = self._conf
        curl = pycurl.Curl()
        curl.setopt(pycurl.NOSIGNAL, 1)
        curl.setopt(pycurl.TCP_NODELAY, 1)
        if conf.verify_ssl:
            if conf.ssl_ca_cert:
                curl.setopt(pycurl.CAINFO, conf.ssl_ca_cert)
            if conf.assert_hostname is False:
                curl.setopt(pycurl.SSL_VERIFYHOST, 0)
        else:
            curl.setopt(pycurl.SSL_VERIFYPEER, 0)
            curl.setopt(pycurl.SSL_VERIFYHOST, 0)
        if conf.cert_file:
            curl.setopt(pycurl.SSLCERT, conf.cert_file)
        if conf.key_file:
            curl.setopt(pycurl.SSLKEY, conf.key_file)
        return curl

    def send(
        self, method: str, url: str, headers: list[str], data: bytes, timeout: float
    ) -> tuple[int, bytes, dict[str, str]]:
        """The status, body and -- for an error answer (status >= 400) only, the headers a
        caller reads then -- headers (lower-cased names) of one request; ``headers`` are
        ``Name: value`` lines.  :class:`ApiError` (code 0) when no answer came."""
        curl = self._handle()
        body = io.BytesIO()
        head = io.BytesIO()
        curl.setopt(pycurl.URL, url)
        curl.setopt(pycurl.CUSTOMREQUEST, method)
        curl.setopt(pycurl.POSTFIELDS, data)
        curl.setopt(pycurl.HTTPHEADER, headers)
        curl.setopt(pycurl.WRITEDATA, body)
        curl.setopt(pycurl.HEADERFUNCTION, head.write)
        curl.setopt(pycurl.TIMEOUT_MS, max(1, int(timeout * 1000)))
        for attempt in range(self.CONNECT_RETRIES + 1):
            try:
                curl.perform()
                break
            except pycurl.error as e:
                code = e.args[0]
                if code == pycurl.E_COULDNT_CONNECT and attempt < self.CONNECT_RETRIES:
                    body.seek(0)
                    body.truncate()
                    head.seek(0)
                    head.truncate()
                    continue
                raise ApiError(0, f"pycurl.error: {e.args[-1]}") from None
        status = int(curl.getinfo(pycurl.RESPONSE_CODE))
        answer = _header_lines(head.getvalue()) if status >= 400 else {}
        return status, body.getvalue(), answer

    def close(self) -> None:
        curl = getattr(self._local, "curl", None)
        if curl is not None:
            curl.close()
            self._local.curl = None


@dataclass(slots=True)
class _Write:
    """One write of :class:`WritesInFlight`: the request, its pacing and its answer."""

    client: KubeClient
    """Whose rate limiter paces it and whose metrics count it."""
    method: str
    path: str
    data: bytes
    content_type: str
    timeout: float
    ready: Callable[[], Exception | None]
    answered: Callable[[Exception | None], None]
    submitted: float
    at: float = 0.0
    """When the rate limiter lets it go (monotonic seconds)."""
    attempts: int = 0
    body: io.BytesIO = field(default_factory=io.BytesIO)


class WritesInFlight:
    """POSTs and PATCHes whose answers nobody waits for: one thread sends them together
    through libcurl's multi interface (keep-alive connections it pools, at most
    :data:`MAX_IN_FLIGHT` requests at once) and calls each one's ``answered(error)`` on that
    thread (None: a 2xx answer; an :class:`ApiError` as :meth:`KubeClient.request` raises
    it).  Live mode's binds go through it (upstream's API dispatcher), so no thread waits
    for a bind.  Each write takes a token of the client's rate limiter when it is taken from
    the queue and is sent when the token is due; it is counted and timed in the client's
    metrics as :meth:`KubeClient.request` does.  ``ready`` is asked just before sending: an
    exception it returns is the write's answer, nothing is sent (a replica that stopped
    leading).  A connection that cannot be made is tried again up to
    :attr:`CurlWriter.CONNECT_RETRIES` times; any other transport failure is code 0."""

    MAX_IN_FLIGHT = 32
    IDLE_WAIT = 0.5

    def __init__(self, client: KubeClient, writer: CurlWriter) -> None:
        self._client = client
        self._writer = writer
        self._queue: collections.deque[_Write] = collections.deque()
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._thread: threading.Thread | None = None
        self._closed = False
        self._awake = True
        """The thread is not parked in :meth:`_sleep` (guarded by ``_lock``): a write
        submitted meanwhile is picked up without a wake-up through the pipe."""
        self.pending = 0
        """Writes submitted and not answered yet."""
        self.wakeups = 0
        """Times a submitted write woke the parked thread (one per batch, not per write)."""

    def submit(
        self,
        method: str,
        path: str,
        body: Obj,
        *,
        answered: Callable[[Exception | None], None],
        ready: Callable[[], Exception | None] = lambda: None,
        content_type: str = "application/json",
        timeout: float = DEFAULT_TIMEOUT,
        client: KubeClient | None = None,
    ) -> None:
        """Queue one write; ``answered`` is called on the writes' thread.  ``client`` (a
        :meth:`KubeClient.sibling` sharing this thread; default: the owner) paces and counts
        it."""
        write = _Write(
            client or self._client,
            method,
            path,
            msgspec.json.encode(body),
            content_type,
            timeout,
            ready,
            answered,
            time.monotonic(),
        )
        with self._lock:
            if self._closed:
                raise ApiError(0, "the client is closed")
            self.pending += 1
            self._queue.append(write)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="kubesched-writes", daemon=True
                )
                self._thread.start()
            # Only a parked thread needs the pipe: a wake-up per write would hand the
            # interpreter lock to the writes thread once per bind (a system call each, and
            # the scheduling thread waiting to get the lock back).
            wake, self._awake = not self._awake, True
        if wake:
            self.wakeups += 1
            with contextlib.suppress(BlockingIOError):
                os.write(self._wake_w, b"x")

    def close(self) -> None:
        """Send what is queued, then end the thread (bounded by the writes' timeouts)."""
        with self._lock:
            self._closed = True
            thread = self._thread
            self._awake = True
        with contextlib.suppress(BlockingIOError):
            os.write(self._wake_w, b"x")
        if thread is not None:
            thread.join(timeout=10.0)

    def _run(self) -> None:
        multi = pycurl.CurlMulti()
        free: list[Any] = []
        active: dict[Any, _Write] = {}
        paced: collections.deque[_Write] = collections.deque()
        while True:
            with self._lock:
                while self._queue and len(active) + len(paced) < self.MAX_IN_FLIGHT:
                    write = self._queue.popleft()
                    write.at = time.monotonic() + write.client.limiter.reserve()
                    paced.append(write)
                closed = self._closed and not self._queue
            now = time.monotonic()
            while paced and paced[0].at <= now:
                write = paced.popleft()
                refused = write.ready()
                if refused is not None:
                    self._answer(write, refused)
                    continue
                curl = free.pop() if free else self._writer.new_handle()
                self._start(curl, write)
                multi.add_handle(curl)
                active[curl] = write
            if active:
                while multi.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
                    pass
                while True:
                    left, done, failed = multi.info_read()
                    for curl in done:
                        multi.remove_handle(curl)
                        self._ended(curl, active.pop(curl), None, free)
                    for curl, code, message in failed:
                        multi.remove_handle(curl)
                        write = active.pop(curl)
                        if code == pycurl.E_COULDNT_CONNECT and write.attempts <= (
                            CurlWriter.CONNECT_RETRIES
                        ):
                            self._start(curl, write)
                            multi.add_handle(curl)
                            active[curl] = write
                            continue
                        self._ended(curl, write, f"pycurl.error: {message}", free)
                    if not left:
                        break
            if closed and not active and not paced:
                multi.close()
                for curl in free:
                    curl.close()
                return
            self._sleep(multi, active, paced)

    def _sleep(
        self, multi: Any, active: dict[Any, _Write], paced: collections.deque[_Write]
    ) -> None:
        """Until a socket of the writes in flight is ready, libcurl's timer, the next paced
        write or a new one (the wake pipe)."""
        wait = self.IDLE_WAIT
        if paced:
            wait = min(wait, max(0.0, paced[0].at - time.monotonic()))
        with self._lock:
            if self._queue and len(active) + len(paced) < self.MAX_IN_FLIGHT:
                return  # submitted since the queue was last taken: take it now
            self._awake = False  # from here on a submit wakes the thread through the pipe
        poll = select.poll()  # not select(): no limit on the descriptors' numbers
        poll.register(self._wake_r, select.POLLIN)
        if active:
            r, w, x = multi.fdset()
            for fd in {*r, *w, *x}:
                poll.register(
                    fd,
                    (select.POLLIN if fd in r else 0)
                    | (select.POLLOUT if fd in w else 0)
                    | select.POLLPRI,
                )
            ms = multi.timeout()
            wait = min(wait, 0.01 if ms < 0 else ms / 1000)
        if wait > 0:
            poll.poll(wait * 1000)
        with self._lock:
            self._awake = True
        with contextlib.suppress(BlockingIOError):
            os.read(self._wake_r, 4096)

    def _start(self, curl: Any, write: _Write) -> None:
        write.attempts += 1
        write.body.seek(0)
        write.body.truncate()
        base, lines = write.client.write_headers(write.content_type)
        curl.setopt(pycurl.URL, base + write.path)
        curl.setopt(pycurl.CUSTOMREQUEST, write.method)
        curl.setopt(pycurl.POSTFIELDS, write.data)
        curl.setopt(pycurl.HTTPHEADER, lines)
        curl.setopt(pycurl.WRITEDATA, write.body)
        # No header callback: each header line would take the interpreter lock from the
        # scheduling thread (eight or so per answer); the one header read, Retry-After,
        # libcurl parses itself (``CURLINFO_RETRY_AFTER``).
        curl.setopt(pycurl.TIMEOUT_MS, max(1, int(write.timeout * 1000)))

    def _ended(self, curl: Any, write: _Write, failure: str | None, free: list[Any]) -> None:
        err: ApiError | None = None
        if failure is not None:
            err = ApiError(0, failure)
            write.client.answered(write.method, None)
        else:
            status = int(curl.getinfo(pycurl.RESPONSE_CODE))
            write.client.answered(write.method, status)
            if status >= 400:
                seconds = int(curl.getinfo(pycurl.RETRY_AFTER))  # 0: none (or 0)
                retry = {"Retry-After": str(seconds) if seconds > 0 else ""}
                err = _status_error(status, write.body.getvalue(), retry)
        write.client.took(write.method, time.monotonic() - write.submitted)
        free.append(curl)
        self._answer(write, err)

    def _answer(self, write: _Write, err: Exception | None) -> None:
        with self._lock:
            self.pending -= 1
        try:
            write.answered(err)
        except Exception:  # a caller's bug must not end the writes of every other one
            log.exception("answering %s %s failed", write.method, write.path)


class PipelinedPosts:
    """POSTs whose answers are only read for success or failure (live mode's Events), sent
    back to back on HTTP/1.1 keep-alive connections of their own (pipelining): one system
    call sends a connection's share of a batch, and its answers are read in order.  Through
    libcurl each write is a transfer of its own (set-up, a send, a poll and a read, about
    130 us of CPU per Event on the test host); here a batch of Events costs one send and a
    few reads (benchmarks/RESULTS.md, h/live36).  The caller's thread does the I/O.

    A batch is split over up to :data:`CONNECTIONS` connections, :data:`PER_CONNECTION`
    writes each while there are enough: the API server answers one connection's requests
    one at a time, so one connection would cap the Events' rate at one per the server's
    latency for an Event.  A connection that breaks or times out before
    all its answers came fails the rest with code 0 (retryable); a reused connection that
    breaks before its first answer (the server closed it while idle) is opened again and
    its share sent once more.  A write may so land twice: callers whose objects have unique
    names read the second answer, 409 AlreadyExists, as written.  TLS, the client
    certificate and the credentials are the configuration's, as :class:`CurlWriter`'s."""

    CONNECTIONS = 16
    PER_CONNECTION = 4
    """Writes a connection is given before the next one is opened (at most
    :data:`CONNECTIONS`, then each takes more)."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client
        conf = client._api.configuration
        url = urllib.parse.urlsplit(str(conf.host))
        self._tls: ssl.SSLContext | None = None
        if url.scheme == "https":
            tls = ssl.create_default_context(cafile=conf.ssl_ca_cert or None)
            if not conf.verify_ssl:
                tls.check_hostname = False
                tls.verify_mode = ssl.CERT_NONE
            elif conf.assert_hostname is False:
                tls.check_hostname = False
            if conf.cert_file:
                tls.load_cert_chain(conf.cert_file, conf.key_file or None)
            tls.set_alpn_protocols(["http/1.1"])
            self._tls = tls
        self._server_name = conf.tls_server_name or url.hostname or ""
        self._address = (url.hostname or "", url.port or (443 if self._tls else 80))
        self._netloc = url.netloc
        self._conns: list[_Connection | None] = [None] * self.CONNECTIONS

    def post(
        self, writes: list[tuple[str, Obj]], content_type: str, timeout: float
    ) -> list[ApiError | None]:
        """POST each ``(path, body)`` (encoded as JSON); each one's answer: None (2xx) or
        the :class:`ApiError` :meth:`KubeClient.request` would raise."""
        start = time.monotonic()
        base, lines = self._client.write_headers(content_type)
        prefix = urllib.parse.urlsplit(base).path.rstrip("/")
        head = "".join(f"{line}\r\n" for line in lines if line != "Expect:")
        head += f"Host: {self._netloc}\r\n"
        n = len(writes)
        used = max(1, min(self.CONNECTIONS, -(-n // self.PER_CONNECTION)))
        shares = [writes[i * n // used : (i + 1) * n // used] for i in range(used)]
        line = f"HTTP/1.1\r\n{head}Content-Length: "
        encode = msgspec.json.encode
        requests = []
        for share in shares:
            parts = []
            for path, obj in share:
                data = encode(obj)
                parts.append(f"POST {prefix}{path} {line}{len(data)}\r\n\r\n".encode())
                parts.append(data)
            requests.append(b"".join(parts))
        sent = [self._send(i, req, timeout) for i, req in enumerate(requests)]
        answers: list[ApiError | None] = []
        for i, share in enumerate(shares):
            got = self._answers(i, len(share), sent[i], requests[i], timeout)
            for status, body, retry_after in got:
                self._client.answered("POST", status or None)
                if status == 0:
                    answers.append(ApiError(0, body.decode("utf-8", "replace")))
                elif status >= 400:
                    answers.append(_status_error(status, body, {"Retry-After": retry_after}))
                else:
                    answers.append(None)
        took = time.monotonic() - start
        for _ in range(n):
            self._client.took("POST", took)
        return answers

    def _connect(self, timeout: float) -> _Connection:
        sock = socket.create_connection(self._address, timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._tls is not None:
            sock = self._tls.wrap_socket(sock, server_hostname=self._server_name)
        return _Connection(sock)

    def _send(self, i: int, request: bytes, timeout: float) -> str | None:
        """Send on connection ``i`` (opened when it is not); None, or why it failed."""
        conn = self._conns[i]
        for fresh in (conn is None, True):
            try:
                if conn is None:
                    conn = self._conns[i] = self._connect(timeout)
                conn.sock.settimeout(timeout)
                conn.sock.sendall(request)
                return None
            except OSError as e:
                self._drop(i)
                conn = None
                if fresh:
                    return f"{type(e).__name__}: {e}"
        return None  # not reached: the second pass is always fresh

    def _answers(
        self, i: int, count: int, failed: str | None, request: bytes, timeout: float
    ) -> list[tuple[int, bytes, str]]:
        """``count`` answers of connection ``i`` as (status, body, Retry-After); status 0
        with the reason as body for those that did not come."""
        got: list[tuple[int, bytes, str]] = []
        conn = self._conns[i]
        resent = False
        while failed is None and conn is not None and len(got) < count:
            try:
                status, body, retry_after, closing = conn.answer()
            except (OSError, ValueError, IndexError) as e:  # IndexError: no status code
                self._drop(i)
                idle = conn.reused and conn.answered == 0 and not isinstance(e, TimeoutError)
                if idle and not resent:  # closed while idle: open again, send once more
                    resent = True
                    failed = self._send(i, request, timeout)
                    conn = self._conns[i]
                    continue
                failed = f"{type(e).__name__}: {e}"
                break
            got.append((status, body, retry_after))
            if closing:
                self._drop(i)
                failed = "connection closed by the server"
        if conn is not None and self._conns[i] is conn:
            conn.reused = True
            conn.answered = 0
        why = (failed or "no answer").encode()
        return got + [(0, why, "")] * (count - len(got))

    def _drop(self, i: int) -> None:
        conn, self._conns[i] = self._conns[i], None
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.sock.close()

    def close(self) -> None:
        """Close the connections."""
        for i in range(len(self._conns)):
            self._drop(i)


class _Connection:
    """One keep-alive connection of :class:`PipelinedPosts` and what it has read."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.answered = 0
        self.reused = False

    def _more(self) -> None:
        data = self.sock.recv(WATCH_READ)
        if not data:
            raise ConnectionError("connection closed by the server")
        self.buf += data

    def answer(self) -> tuple[int, bytes, str, bool]:
        """The next answer: status, body, Retry-After, and whether the server closes the
        connection after it."""
        while (end := self.buf.find(b"\r\n\r\n")) < 0:
            self._more()
        head = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
        del self.buf[: end + 4]
        status = int(head[0].split(" ", 2)[1])
        fields: dict[str, str] = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
        if fields.get("transfer-encoding", "").lower() == "chunked":
            body = self._chunks()
        else:
            size = int(fields.get("content-length", "0"))
            while len(self.buf) < size:
                self._more()
            body = bytes(self.buf[:size])
            del self.buf[:size]
        self.answered += 1
        closing = fields.get("connection", "").lower() == "close"
        return status, body, fields.get("retry-after", ""), closing

    def _chunks(self) -> bytes:
        parts: list[bytes] = []
        while True:
            while (eol := self.buf.find(b"\r\n")) < 0:
                self._more()
            size = int(bytes(self.buf[:eol]).split(b";", 1)[0], 16)
            del self.buf[: eol + 2]
            if size == 0:
                while (eol := self.buf.find(b"\r\n")) != 0:  # trailers, then a blank line
                    if eol < 0:
                        self._more()
                    else:
                        del self.buf[: eol + 2]
                del self.buf[:2]
                return b"".join(parts)
            while len(self.buf) < size + 2:
                self._more()
            parts.append(bytes(self.buf[:size]))
            del self.buf[: size + 2]


WATCH_READ = 1 << 16
"""Bytes a watch stream's read asks for: whatever has arrived, up to this."""


def _chunked_body(raw: Any) -> Any:
    """The buffered socket file under a watch response whose body is HTTP/1.1 chunks of
    plain JSON (no content coding) that nothing has read yet, or None (then urllib3 reads
    it)."""
    if not isinstance(raw, urllib3.HTTPResponse) or not raw.chunked:
        return None
    fp = raw._fp  # the http.client response under urllib3's
    if (
        not isinstance(fp, http.client.HTTPResponse)
        or fp.fp is None
        or fp.chunk_left is not None
        or raw.headers.get("Content-Encoding")
    ):
        return None
    return fp.fp


def _dechunked_lines(body: Any) -> Generator[bytes, None, None]:
    """The non-blank lines of a chunked body, read from ``body`` (a buffered socket file)
    a block at a time: every event that has arrived is framed and split in one pass, with
    one read and one interpreter-lock hand-back per block, where urllib3 reads chunk by
    chunk (two reads each, each letting another thread take the lock).  The body's end
    (the zero-size chunk) returns; a cut connection raises ``ConnectionError``."""
    framed = b""  # bytes read, not yet de-chunked
    tail = b""  # payload after the last newline
    last = False
    while not last:
        block = body.read1(WATCH_READ)
        if not block:
            raise ConnectionError("connection closed inside the chunked body")
        framed += block
        pos, parts = 0, []
        while True:
            eol = framed.find(b"\r\n", pos)
            if eol < 0:
                break
            size = int(framed[pos:eol].split(b";", 1)[0], 16)
            if size == 0:  # the last chunk (trailers ignored)
                last = True
                break
            end = eol + 2 + size
            if end + 2 > len(framed):
                break
            parts.append(framed[eol + 2 : end])
            pos = end + 2
        framed = framed[pos:]
        if parts:
            lines = (tail + b"".join(parts)).split(b"\n")
            tail = lines.pop()
            for line in lines:
                if line and not line.isspace():
                    yield line
    if tail.strip():
        yield tail


def _header_lines(head: bytes) -> dict[str, str]:
    """Response header lines as received -> lower-cased name -> value."""
    answer: dict[str, str] = {}
    for line in head.decode("latin-1").split("\r\n"):
        name, sep, value = line.partition(":")
        if sep:
            answer[name.strip().lower()] = value.strip()
    return answer


class KubeClient:
    """JSON requests and watch streams over one official ``ApiClient``."""

    def __init__(
        self,
        api: Any,
        *,
        qps: float = 50.0,
        burst: int = 100,
        metrics: RestClientMetrics | None = None,
        writes_of: KubeClient | None = None,
    ) -> None:
        self._api = api
        self.limiter = RateLimiter(qps, burst)
        self.metrics = metrics
        """Where requests are counted and timed (None: nowhere)."""
        self._host_label = host_label(self.host) if metrics is not None else ""
        self._open: set[Any] = set()
        """Raw responses of the watches being read (cut by :meth:`abort`)."""
        self._stopped = False
        """Set by :meth:`stop_watches`: a watch opened afterwards is cut at once."""
        conf = api.configuration
        self._writer = CurlWriter(conf) if CurlWriter.supports(conf) else None
        """POST and PATCH through libcurl (None: through urllib3, as every other method)."""
        writes: WritesInFlight | None = None
        if writes_of is not None:
            writes = writes_of.writes
        elif self._writer is not None:
            writes = WritesInFlight(self, self._writer)
        self.writes: WritesInFlight | None = writes
        """Writes nobody waits for (None: libcurl cannot speak for this configuration); a
        sibling's are its origin's (one thread, one pool of connections), submitted with
        ``client=`` the sibling so its own limiter paces them."""
        self._owns_writes = writes_of is None
        self._headers: dict[str, tuple[float, str, list[str]]] = {}
        """Content type -> (when built, the URL base, a write's header lines)."""

    def pipelined(self) -> PipelinedPosts | None:
        """New pipelined connections of this client for writes whose answers are only read
        for success (the caller's to close), or None when only urllib3 can speak for its
        configuration (:meth:`CurlWriter.supports`)."""
        return PipelinedPosts(self) if self._writer is not None else None

    def sibling(self, qps: float, burst: int) -> KubeClient:
        """A client on the same connection pool and writes thread with its own rate limiter
        (leader election gets its own, as upstream's separate leader-election client)."""
        return KubeClient(self._api, qps=qps, burst=burst, metrics=self.metrics, writes_of=self)

    @property
    def host(self) -> str:
        """The API server URL."""
        return str(self._api.configuration.host)

    def _send(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None,
        body: Obj | None,
        content_type: str,
        timeout: float | tuple[float, float],
    ) -> Any:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        m, url, hdrs, data, _ = self._api.param_serialize(
            method=method,
            resource_path=path,
            query_params=list((query or {}).items()),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        try:
            resp = self._api.call_api(
                m, url, header_params=hdrs, body=data, _request_timeout=timeout
            )
        except (urllib3.exceptions.HTTPError, OSError, k8s.ApiException) as e:
            self.answered(method, None)
            raise ApiError(0, f"{type(e).__name__}: {e}") from e
        self.answered(method, resp.status)
        return resp

    def _write(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None,
        body: Obj,
        content_type: str,
        timeout: float,
    ) -> tuple[int, bytes, Mapping[str, str]]:
        """:meth:`_send` through libcurl: the same URL, headers and credentials."""
        assert self._writer is not None
        base, lines = self.write_headers(content_type)
        url = base + path
        if query:
            url += "?" + self._api.parameters_to_url_query(list(query.items()), {})
        try:
            status, data, answer = self._writer.send(
                method, url, lines, msgspec.json.encode(body), timeout
            )
        except ApiError:
            self.answered(method, None)
            raise
        self.answered(method, status)
        return status, data, {"Retry-After": answer.get("retry-after", "")}

    def write_headers(self, content_type: str) -> tuple[str, list[str]]:
        """The API server URL and a write's header lines for ``content_type``, as
        :meth:`_send` would make them: built at most once per :data:`AUTH_REFRESH_SECONDS`
        (the official configuration's ``host`` and ``auth_settings`` -- which runs the
        kubeconfig loader's token refresh hook -- cost more than the write's own work)."""
        now = time.monotonic()
        cached = self._headers.get(content_type)
        if cached is not None and now - cached[0] < AUTH_REFRESH_SECONDS:
            return cached[1], cached[2]
        api = self._api
        headers = {
            **api.default_headers,  # User-Agent
            "Accept": "application/json",
            "Content-Type": content_type,
            "Expect": "",  # no 100-continue round trip before a body
        }
        auth = api.configuration.auth_settings().get("BearerToken")
        if auth:
            headers[auth["key"]] = auth["value"]
        lines = [f"{k}: {v}" if v else f"{k}:" for k, v in headers.items()]
        base = str(api.configuration.host)
        self._headers[content_type] = (now, base, lines)
        return base, lines

    def answered(self, method: str, code: int | None) -> None:
        """Count an answer (``code`` None: none came) in ``rest_client_requests_total``."""
        if self.metrics is not None:
            self.metrics.answered(method, self._host_label, code)

    def took(self, method: str, seconds: float) -> None:
        """Observe a request's duration in ``rest_client_request_duration_seconds``."""
        if self.metrics is not None:
            self.metrics.took(method, self._host_label, seconds)

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Obj | None = None,
        content_type: str = "application/json",
        timeout: float = DEFAULT_TIMEOUT,
    ) -> Obj:
        """One paced request; the decoded JSON answer, or :class:`ApiError`."""
        start = time.monotonic()
        try:
            self.limiter.wait()
            if self._writer is not None and method in ("POST", "PATCH") and body is not None:
                status, data, headers = self._write(
                    method, path, query, body, content_type, timeout
                )
            else:
                resp = self._send(method, path, query, body, content_type, timeout)
                status, headers = resp.status, resp.headers
                try:
                    data = resp.read()
                except (urllib3.exceptions.HTTPError, OSError) as e:
                    raise ApiError(0, f"{type(e).__name__}: {e}") from e
        finally:
            if self.metrics is not None:
                self.metrics.took(method, self._host_label, time.monotonic() - start)
        if status >= 400:
            raise _status_error(status, data or b"", headers)
        try:
            out = msgspec.json.decode(data) if data else {}
        except ValueError as e:
            raise ApiError(0, f"undecodable answer: {e}") from e
        return out if isinstance(out, dict) else {"items": out}

    def watch(
        self, path: str, query: Mapping[str, Any], *, read_timeout: float
    ) -> Generator[Obj, None, None]:
        """Watch events (``{"type", "object"}``) until the server ends the stream.

        Raises :class:`ApiError` for an error answer or a broken connection (code 0).
        Closing the generator closes the connection; :meth:`abort` unblocks a reader.
        """
        decode = msgspec.json.decode
        with contextlib.closing(self._watch_lines(path, query, read_timeout)) as lines:
            for line in lines:
                try:
                    event = decode(line)
                except ValueError as e:
                    raise ApiError(0, f"watch broken: {type(e).__name__}: {e}") from e
                yield event

    def watch_texts(
        self, path: str, query: Mapping[str, Any], *, read_timeout: float
    ) -> Generator[tuple[Obj, ObjectText], None, None]:
        """:meth:`watch`, each event with its object's JSON text as received (a parser can
        read the text, see :func:`kubesched.api.podquick.quick_pod`); the same errors."""
        split = _split_event
        decode = msgspec.json.decode
        with contextlib.closing(self._watch_lines(path, query, read_timeout)) as lines:
            for line in lines:
                try:
                    event = split(line)
                    obj = decode(event.object)
                except ValueError as e:
                    raise ApiError(0, f"watch broken: {type(e).__name__}: {e}") from e
                yield {"type": event.type, "object": obj}, event.object

    def _watch_lines(
        self, path: str, query: Mapping[str, Any], read_timeout: float
    ) -> Generator[bytes, None, None]:
        """The lines of a watch stream, each one event's JSON."""
        self.limiter.wait()
        resp = self._send("GET", path, {**query, "watch": "true"}, None, "", (5.0, read_timeout))
        raw = resp.response
        if resp.status >= 400:
            raise _status_error(resp.status, resp.read() or b"", resp.headers)
        self._open.add(raw)
        if self._stopped:  # shutting down: a watch that raced the cut ends here too
            with contextlib.suppress(Exception):
                raw.shutdown()
        body = _chunked_body(raw)
        buf = b""
        try:
            if body is not None:
                yield from _dechunked_lines(body)
                return
            for chunk in raw.stream(amt=None, decode_content=True):
                if b"\n" not in chunk:
                    buf += chunk
                    continue
                lines = (buf + chunk).split(b"\n")  # one split per chunk, not one per line
                buf = lines.pop()
                for line in lines:
                    if line and not line.isspace():
                        yield line
            if buf.strip():
                yield buf
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as e:
            raise ApiError(0, f"watch broken: {type(e).__name__}: {e}") from e
        finally:
            self._open.discard(raw)
            if body is not None:  # read past urllib3: the connection is not reused
                with contextlib.suppress(Exception):
                    raw.close()
            raw.release_conn()

    def abort(self) -> None:
        """Cut every open watch (a relist; watches opened later run normally)."""
        for raw in list(self._open):
            with contextlib.suppress(Exception):  # best effort on the way out
                raw.shutdown()

    def stop_watches(self) -> None:
        """Cut every open watch and every one opened from now on (shutdown)."""
        self._stopped = True
        self.abort()

    def close(self) -> None:
        """Cut watches and release the connection pool."""
        self.stop_watches()
        if self.writes is not None and self._owns_writes:
            self.writes.close()
        if self._writer is not None:
            self._writer.close()
        self._api.close()


def connect(
    *,
    kubeconfig: str | None = None,
    in_cluster: bool = False,
    qps: float = 50.0,
    burst: int = 100,
    user_agent: str = "kubesched",
    metrics: RestClientMetrics | None = None,
) -> KubeClient:
    """A client from ``kubeconfig``, in-cluster credentials, or (neither) in-cluster when
    ``KUBERNETES_SERVICE_HOST`` is set, else the default kubeconfig loading rules."""
    conf = k8s.Configuration()
    if kubeconfig and not in_cluster:
        # The one reader (regular file, size limit, UTF-8, strict YAML) before the client's.
        try:
            docs = source.load_text(source.read_text(kubeconfig), kubeconfig)
        except InputError as e:
            why = [(p, f"cannot load API server credentials: {m}") for p, m in e.problems]
            raise InputError(why, file=kubeconfig) from None
        if len(docs) != 1 or not isinstance(docs[0], dict):
            problem = ("", "cannot load API server credentials: not a kubeconfig (a mapping)")
            raise InputError([problem], file=kubeconfig)
    try:
        if in_cluster or (not kubeconfig and os.environ.get("KUBERNETES_SERVICE_HOST")):
            k8s_config.load_incluster_config(client_configuration=conf)
        else:
            k8s_config.load_kube_config(config_file=kubeconfig, client_configuration=conf)
    except (k8s_config.ConfigException, OSError, TypeError, ValueError) as e:
        problem = ("", f"cannot load API server credentials: {e}")
        raise InputError([problem], file=kubeconfig) from None
    # One connection per open watch (ten kinds) plus binds, Events and the Lease: the
    # default pool (5 per CPU) would be full on small machines (client-go multiplexes HTTP/2).
    conf.connection_pool_maxsize = max(int(conf.connection_pool_maxsize or 0), 32)
    api = k8s.ApiClient(conf)
    api.user_agent = user_agent
    return KubeClient(api, qps=qps, burst=burst, metrics=metrics)
