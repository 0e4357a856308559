"""The API edge: error classification, Retry-After, the token bucket, raw binding answers,
watch streams and their interruption, writes through libcurl."""

from __future__ import annotations

import http.server
import json
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest
from kubernetes import client as k8s

from kubesched.api.errors import InputError
from kubesched.live import client as client_mod
from kubesched.live.client import ApiError, CurlWriter, KubeClient, RateLimiter, connect
from kubesched.live.sharding import MERGE_PATCH as MERGE
from kubesched.testing import VirtualClock
from tests.live.conftest import Api, pod, wait_for
from tests.live.fakeapi import FakeApiServer


@pytest.fixture
def client(kubeconfig: Path) -> KubeClient:
    return connect(kubeconfig=str(kubeconfig), qps=0, burst=1)


@pytest.mark.parametrize(
    ("code", "retryable", "gone"),
    [
        (0, True, False),
        (409, False, False),
        (410, False, True),
        (429, True, False),
        (500, True, False),
        (503, True, False),
        (404, False, False),
        (403, False, False),
    ],
)
def test_error_classification(code: int, retryable: bool, gone: bool) -> None:
    e = ApiError(code, "x")
    assert (e.retryable, e.gone) == (retryable, gone)


@pytest.mark.parametrize(("qps", "burst"), [(10.0, 3), (2.0, 1), (100.0, 100)])
def test_rate_limiter_allows_burst_then_paces_at_qps(qps: float, burst: int) -> None:
    clock = VirtualClock()
    rl = RateLimiter(qps, burst, clock)
    assert [rl.reserve() for _ in range(burst)] == [0.0] * burst
    assert rl.reserve() == pytest.approx(1 / qps)
    assert rl.reserve() == pytest.approx(2 / qps)
    clock.now += 10.0  # idle time refills the bucket, never above burst
    assert [rl.reserve() for _ in range(burst)] == [0.0] * burst
    assert rl.reserve() > 0


def test_rate_limiter_off_when_qps_not_positive() -> None:
    rl = RateLimiter(0, 1)
    assert all(rl.reserve() == 0.0 for _ in range(100))


def test_error_answers_carry_code_reason_and_retry_after(
    server: FakeApiServer, client: KubeClient
) -> None:
    with pytest.raises(ApiError) as err:
        client.request("GET", "/api/v1/namespaces/default/pods/nope")
    assert (err.value.code, err.value.reason) == (404, "NotFound")
    server.fail("POST /api/v1/namespaces/default/pods", 429, retry_after=3)
    with pytest.raises(ApiError) as err:
        client.request("POST", "/api/v1/namespaces/default/pods", body=pod("p"))
    assert (err.value.code, err.value.retry_after, err.value.retryable) == (429, 3.0, True)


def test_reads_are_retried_after_retry_after(server: FakeApiServer, client: KubeClient) -> None:
    """urllib3 under the official client retries idempotent requests on 429 + Retry-After,
    as client-go does; the caller just sees the late answer."""
    server.fail("GET /api/v1/nodes", 429, retry_after=1)
    t0 = time.monotonic()
    assert client.request("GET", "/api/v1/nodes")["items"] == []
    assert time.monotonic() - t0 >= 0.9


def test_binding_answer_is_read_as_raw_status(api: Api, client: KubeClient) -> None:
    api.create(pod("p"))
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p"},
        "target": {"kind": "Node", "name": "n1"},
    }
    answer = client.request("POST", "/api/v1/namespaces/default/pods/p/binding", body=body)
    assert (answer["kind"], answer["status"]) == ("Status", "Success")
    assert api.node_of("p") == "n1"


def test_no_server_is_a_retryable_error(tmp_path: Path) -> None:
    kc = tmp_path / "kc"
    kc.write_text(FakeApiServer.kubeconfig_for("http://127.0.0.1:9"))
    c = connect(kubeconfig=str(kc))
    with pytest.raises(ApiError) as err:
        c.request("GET", "/api/v1/nodes", timeout=2)
    assert err.value.code == 0 and err.value.retryable


def test_bad_kubeconfig_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        connect(kubeconfig=str(tmp_path / "missing"))


def test_watch_streams_events_and_abort_unblocks_it(api: Api, client: KubeClient) -> None:
    seen: list[str] = []
    errors: list[ApiError] = []

    def read() -> None:
        try:
            for ev in client.watch("/api/v1/pods", {"resourceVersion": "0"}, read_timeout=10):
                seen.append(f"{ev['type']} {ev['object']['metadata']['name']}")
        except ApiError as e:
            errors.append(e)

    api.create(pod("a"))
    t = threading.Thread(target=read, daemon=True)
    t.start()
    wait_for(lambda: seen == ["ADDED a"])
    api.create(pod("b"))
    wait_for(lambda: seen == ["ADDED a", "ADDED b"])
    client.abort()
    t.join(5)
    assert not t.is_alive() and errors and errors[0].code == 0


def test_after_stop_watches_a_new_watch_ends_at_once(api: Api, client: KubeClient) -> None:
    """Shutdown is sticky (a watch that races the cut is cut too); a relist's abort is not."""
    client.abort()
    events = client.watch("/api/v1/pods", {"resourceVersion": "0"}, read_timeout=10)
    api.create(pod("a"))
    assert next(events)["object"]["metadata"]["name"] == "a"  # abort() did not stick
    events.close()
    client.stop_watches()
    t0 = time.monotonic()
    with pytest.raises(ApiError) as err:
        for _ in client.watch("/api/v1/pods", {"resourceVersion": "0"}, read_timeout=10):
            pass
    assert err.value.code == 0 and time.monotonic() - t0 < 5


def test_watch_ends_when_the_server_drops_it(api: Api, client: KubeClient) -> None:
    errors: list[ApiError] = []

    def read() -> None:
        try:
            for _ in client.watch("/api/v1/pods", {"resourceVersion": "0"}, read_timeout=10):
                pass
        except ApiError as e:
            errors.append(e)

    t = threading.Thread(target=read, daemon=True)
    t.start()
    wait_for(lambda: api.store.stats.requests["GET pods"] == 1)
    api.store.drop_watches()
    t.join(5)
    assert not t.is_alive() and errors[0].code == 0


class _Echo(http.server.BaseHTTPRequestHandler):
    """Records each request (method, path, the headers that matter, body) and answers 201."""

    seen: ClassVar[list[tuple[str, str, dict[str, str], Any]]] = []

    def _record(self) -> None:
        data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        keep = ("Authorization", "User-Agent", "Content-Type", "Accept")
        headers = {k: self.headers.get(k, "") for k in keep}
        type(self).seen.append((self.command, self.path, headers, json.loads(data)))
        answer = json.dumps({"kind": "Status", "status": "Success"}).encode()
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    do_POST = do_PATCH = _record

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_writes_through_libcurl_are_the_requests_urllib3_sends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """POST and PATCH go through libcurl; the API server sees the same method, path, query,
    credentials, user agent, content type and body as through the official client."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    kc = tmp_path / "kc"
    kc.write_text(FakeApiServer.kubeconfig_for(f"http://127.0.0.1:{server.server_port}"))
    body = {"metadata": {"name": "p", "labels": {"a": "é"}}, "n": 10**20}
    calls = [
        ("POST", "/api/v1/namespaces/d/pods/p/binding", None, "application/json"),
        ("PATCH", "/api/v1/namespaces/d/pods/p/status", {"fieldManager": "x y"}, MERGE),
    ]
    try:
        for fast in (True, False):
            if not fast:
                monkeypatch.setattr(CurlWriter, "supports", staticmethod(lambda conf: False))
            c = connect(kubeconfig=str(kc), user_agent="kubesched/test")
            assert (c._writer is not None) is fast
            for method, path, query, ctype in calls:
                out = c.request(method, path, query=query, body=body, content_type=ctype)
                assert out == {"kind": "Status", "status": "Success"}
            c.close()
    finally:
        server.shutdown()
    fast_seen, slow_seen = _Echo.seen[:2], _Echo.seen[2:]
    assert fast_seen == slow_seen
    assert fast_seen[0][2]["User-Agent"] == "kubesched/test"
    assert fast_seen[1][1] == "/api/v1/namespaces/d/pods/p/status?fieldManager=x%20y"


def test_writes_send_a_renewed_token_within_the_refresh_period(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write's header lines are reused for at most ``AUTH_REFRESH_SECONDS``: a bearer token
    the configuration renews (a kubeconfig refresh hook) is sent once that has passed."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    kc = tmp_path / "kc"
    kc.write_text(FakeApiServer.kubeconfig_for(f"http://127.0.0.1:{server.server_port}"))
    token = ["Bearer one"]
    try:
        c = connect(kubeconfig=str(kc))
        assert c._writer is not None
        monkeypatch.setattr(
            c._api.configuration,
            "auth_settings",
            lambda: {"BearerToken": {"key": "Authorization", "value": token[0]}},
        )
        start = len(_Echo.seen)
        c.request("POST", "/api/v1/namespaces/d/events", body={})
        token[0] = "Bearer two"
        c.request("POST", "/api/v1/namespaces/d/events", body={})  # within the period
        monkeypatch.setattr("kubesched.live.client.AUTH_REFRESH_SECONDS", 0.0)
        c.request("POST", "/api/v1/namespaces/d/events", body={})
        c.close()
    finally:
        server.shutdown()
    sent = [headers["Authorization"] for _, _, headers, _ in _Echo.seen[start:]]
    assert sent == ["Bearer one", "Bearer one", "Bearer two"]


def test_a_write_with_no_server_is_a_retryable_error(tmp_path: Path) -> None:
    kc = tmp_path / "kc"
    kc.write_text(FakeApiServer.kubeconfig_for("http://127.0.0.1:9"))
    c = connect(kubeconfig=str(kc))
    assert c._writer is not None
    with pytest.raises(ApiError) as err:
        c.request("POST", "/api/v1/namespaces/d/events", body={}, timeout=2)
    assert err.value.code == 0 and err.value.retryable


def test_a_proxy_keeps_writes_on_urllib3() -> None:
    conf = k8s.Configuration()
    assert CurlWriter.supports(conf)
    conf.proxy = "http://proxy.example:3128"
    assert not CurlWriter.supports(conf)


class _Body:
    """A buffered socket file whose reads return the given blocks, then nothing (cut)."""

    def __init__(self, blocks: list[bytes]) -> None:
        self._blocks = list(blocks)

    def read1(self, n: int) -> bytes:
        return self._blocks.pop(0) if self._blocks else b""


_FRAMED = (
    b'1c\r\n{"type": "ADDED", "object": \r\n'
    b'9;ext=1\r\n{"a": 1}}\r\n'
    b"1\r\n\n\r\n"
    b'39\r\n{"type": "MODIFIED", "object": {"b": 2}}\n \n{"type": "X"}\n\r\n'
    b"12\r\n"
    b'{"type": "DELETED"\r\n'
    b"2\r\n}\n\r\n"
)
_LINES = [
    b'{"type": "ADDED", "object": {"a": 1}}',
    b'{"type": "MODIFIED", "object": {"b": 2}}',
    b'{"type": "X"}',
    b'{"type": "DELETED"}',
]


@pytest.mark.parametrize("cut", [len(_FRAMED), 1, 3, 7, 30, 41])
def test_a_chunked_watch_body_is_read_in_blocks_whatever_their_bounds(cut: int) -> None:
    """Chunk sizes, extensions, lines across chunks and blocks, blank lines; the last chunk
    ends it; a body cut before the last chunk is a broken connection."""
    whole = _FRAMED + b"0\r\n\r\n"
    blocks = [whole[i : i + cut] for i in range(0, len(whole), cut)]
    assert list(client_mod._dechunked_lines(_Body(blocks))) == _LINES
    unterminated = [_FRAMED[i : i + cut] for i in range(0, len(_FRAMED), cut)]
    got: list[bytes] = []
    with pytest.raises(ConnectionError):
        got.extend(client_mod._dechunked_lines(_Body(unterminated)))
    assert got == _LINES


def test_a_real_watch_is_read_in_blocks(
    api: Api, client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API server's chunked watch goes through the block reader, not urllib3's."""
    bodies: list[object] = []
    reader = client_mod._dechunked_lines

    def spy(body: Any) -> Any:
        bodies.append(body)
        return reader(body)

    monkeypatch.setattr(client_mod, "_dechunked_lines", spy)
    api.create(pod("a"))
    api.create(pod("b"))
    events = client.watch("/api/v1/pods", {"resourceVersion": "0"}, read_timeout=10)
    assert [next(events)["object"]["metadata"]["name"] for _ in range(2)] == ["a", "b"]
    events.close()
    assert len(bodies) == 1


class _Stream:
    """A watch answer whose body arrives in the given chunks."""

    status = 200
    headers: ClassVar[dict[str, str]] = {}

    def __init__(self, chunks: list[bytes]) -> None:
        self.response = self
        self._chunks = chunks

    def stream(self, amt: Any = None, decode_content: bool = True) -> Any:
        return iter(self._chunks)

    def release_conn(self) -> None:
        pass


@pytest.mark.parametrize(
    "chunks",
    [
        [b'{"a": 1}\n{"b": 2}\n \n{"c": [3,', b" 4]}"],
        [b'{"a"', b": 1}", b'\n{"b": 2}\n', b' \n{"c": [3, 4]}\n'],
        [b'{"a": 1}\n{"b": 2}\n \n{"c": [3, 4]}\n\n'],
        [b'{"a": 1}', b"\n", b'{"b": 2}\n \n', b'{"c": ', b"[3, 4]}"],
    ],
)
def test_watch_lines_are_events_however_the_stream_is_cut(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch, chunks: list[bytes]
) -> None:
    """One event per non-blank line, split across chunks or many to a chunk; the last line
    needs no newline."""
    monkeypatch.setattr(client, "_send", lambda *a, **k: _Stream(chunks))
    got = list(client.watch("/api/v1/pods", {}, read_timeout=1))
    assert got == [{"a": 1}, {"b": 2}, {"c": [3, 4]}]


@pytest.mark.parametrize(
    "chunks",
    [
        [b'{"type": "ADDED", "object": {"a": 1}}\n{"type": "BOOK', b'MARK", "object": {"b": 2}}'],
        [b'{"type": "ADDED", "object": {"a": 1}}\n \n{"type": "BOOKMARK", "object": {"b": 2}}\n'],
    ],
)
def test_watch_texts_are_the_events_and_their_objects_text(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch, chunks: list[bytes]
) -> None:
    monkeypatch.setattr(client, "_send", lambda *a, **k: _Stream(chunks))
    got = list(client.watch_texts("/api/v1/pods", {}, read_timeout=1))
    assert [e for e, _ in got] == list(client.watch("/api/v1/pods", {}, read_timeout=1))
    assert [e for e, _ in got] == [
        {"type": "ADDED", "object": {"a": 1}},
        {"type": "BOOKMARK", "object": {"b": 2}},
    ]
    assert [bytes(t) for _, t in got] == [b'{"a": 1}', b'{"b": 2}']


@pytest.mark.parametrize("texts", [False, True])
def test_an_undecodable_watch_line_is_a_broken_watch(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch, texts: bool
) -> None:
    chunks = [b'{"type": "ADDED", "object": {"a": 1}}\n{"type": \n']
    monkeypatch.setattr(client, "_send", lambda *a, **k: _Stream(chunks))
    watch = client.watch_texts if texts else client.watch
    events = watch("/api/v1/pods", {}, read_timeout=1)
    next(events)
    with pytest.raises(ApiError) as e:
        next(events)
    assert e.value.code == 0 and "watch broken" in str(e.value)
