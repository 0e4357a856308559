"""Pipelined POSTs (:class:`PipelinedPosts`): answers in order, error answers as
:class:`ApiError`, chunked and closing answers, a connection the server closed while idle,
and the recorder's reading of a repeated Event's 409."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesched.api.parse import parse_pod
from kubesched.live.client import ApiError, KubeClient, PipelinedPosts, connect
from kubesched.live.recorder import PendingEvent, Recorder
from tests.live.conftest import Api, pod
from tests.live.fakeapi import FakeApiServer


@pytest.fixture
def client(kubeconfig: Path) -> Iterator[KubeClient]:
    c = connect(kubeconfig=str(kubeconfig), qps=0, burst=1)
    yield c
    c.close()


def _event(name: str, ns: str) -> tuple[str, dict[str, object]]:
    body = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": ns},
        "eventTime": "2026-12-07T15:00:00.000000Z",
        "reportingController": "kubesched",
        "reportingInstance": "kubesched-h",
        "action": "Binding",
        "reason": "Scheduled",
        "type": "Normal",
        "note": "n",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": name},
    }
    return f"/apis/events.k8s.io/v1/namespaces/{ns}/events", body


def test_a_batch_is_answered_in_order_over_several_connections(
    server: FakeApiServer, api: Api, client: KubeClient
) -> None:
    for ns in ("a", "b"):
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    pipe = client.pipelined()
    assert pipe is not None
    try:
        writes = [_event(f"e{i}", "a" if i < 30 else "b") for i in range(60)]
        server.fail("POST /apis/events.k8s.io/v1/namespaces/b/events", 429, retry_after=3)
        answers = pipe.post(writes, "application/json", 5.0)
        refused = [i for i, a in enumerate(answers) if a is not None]
        assert len(refused) == 1 and refused[0] >= 30
        err = answers[refused[0]]
        assert isinstance(err, ApiError) and (err.code, err.retry_after) == (429, 3.0)
        assert sum(c is not None for c in pipe._conns) == 15  # 60 writes, 4 on each
        # the same names again: each answered 409 on the kept connections
        again = pipe.post(writes[:20], "application/json", 5.0)
        assert all(isinstance(a, ApiError) and a.code == 409 for a in again)
        names = {e["metadata"]["name"] for e in api.events("Scheduled")}
        assert len(names) == 59
    finally:
        pipe.close()


class _Raw:
    """A server of scripted HTTP/1.1 answers: each connection reads requests and sends the
    next answer of :attr:`script` ((bytes, close the connection after it))."""

    def __init__(self, script: list[tuple[bytes, bool]]) -> None:
        self.script = script
        self.requests = 0
        self.connections = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        with conn:
            while self.script:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                size = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                while len(buf) < size:
                    buf += conn.recv(65536)
                buf = buf[size:]
                self.requests += 1
                answer, close = self.script.pop(0)
                conn.sendall(answer)
                if close:
                    return

    def kubeconfig(self, tmp_path: Path) -> str:
        kc = tmp_path / "raw-kubeconfig"
        kc.write_text(FakeApiServer.kubeconfig_for(f"http://127.0.0.1:{self.port}"))
        return str(kc)


def _pipe(raw: _Raw, tmp_path: Path) -> tuple[KubeClient, PipelinedPosts]:
    c = connect(kubeconfig=raw.kubeconfig(tmp_path), qps=0, burst=1)
    pipe = c.pipelined()
    assert pipe is not None
    return c, pipe


CREATED = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
CHUNKED = (
    b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
    b'3\r\n{"a\r\n4;x=y\r\n":1}\r\n0\r\nTrailer: t\r\n\r\n'
)
CLOSING = b"HTTP/1.1 201 Created\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"
STATUS = b'{"kind":"Status","reason":"NotFound","message":"gone"}'
NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Length: %d\r\n\r\n%s" % (len(STATUS), STATUS)


def test_chunked_and_closing_answers(tmp_path: Path) -> None:
    """A chunked answer (with trailers) is read whole; after an answer that closes the
    connection the rest of its share did not come (code 0, retryable)."""
    raw = _Raw([(CHUNKED, False), (NOT_FOUND, False), (CLOSING, True)])
    c, pipe = _pipe(raw, tmp_path)
    try:
        answers = pipe.post([_event(f"e{i}", "a") for i in range(4)], "application/json", 5.0)
        assert answers[0] is None and answers[2] is None
        assert isinstance(answers[1], ApiError)
        assert (answers[1].code, answers[1].reason, answers[1].message) == (404, "NotFound", "gone")
        assert isinstance(answers[3], ApiError) and answers[3].code == 0
        assert answers[3].retryable
        assert pipe._conns == [None] * PipelinedPosts.CONNECTIONS
    finally:
        pipe.close()
        c.close()


def test_a_connection_closed_while_idle_is_opened_again(tmp_path: Path) -> None:
    """The server closes a kept connection between batches: the next batch finds it
    closed before any answer, opens another and sends again."""
    raw = _Raw([(CREATED, True), (CREATED, False)])
    c, pipe = _pipe(raw, tmp_path)
    try:
        assert pipe.post([_event("e0", "a")], "application/json", 5.0) == [None]
        conn = pipe._conns[0]
        assert conn is not None  # kept: the answer did not say it closes
        assert pipe.post([_event("e1", "a")], "application/json", 5.0) == [None]
        assert (raw.connections, raw.requests) == (2, 2)
    finally:
        pipe.close()
        c.close()


def test_a_repeated_event_answered_409_is_written_only_on_a_later_attempt(
    api: Api, client: KubeClient
) -> None:
    """An Event's name is unique to its occurrence: a second attempt answered 409
    AlreadyExists found the first one written (its answer lost); a first attempt answered
    409 is another writer's Event and is dropped."""
    rec = Recorder(client.sibling(0, 1), host="h")
    assert rec.pipe is not None
    try:
        p = parse_pod(pod("p"))
        ev = PendingEvent(p, "Normal", "Scheduled", "Binding", "note", None, 1)
        rec._post(rec.pipe, [(ev, 1)])
        assert rec.written == 1 and len(api.events("Scheduled")) == 1
        rec._post(rec.pipe, [(ev, 2)])
        assert rec.written == 2
        rec._post(rec.pipe, [(ev, 1)])
        assert rec.written == 2 and not rec.retries
    finally:
        rec.pipe.close()


def test_an_answer_without_a_status_line_fails_the_connection(tmp_path: Path) -> None:
    raw = _Raw([(b"garbage\r\n\r\n", False), (CREATED, False)])
    c, pipe = _pipe(raw, tmp_path)
    try:
        answers = pipe.post([_event("e0", "a"), _event("e1", "a")], "application/json", 5.0)
        assert all(isinstance(a, ApiError) and a.code == 0 and a.retryable for a in answers)
        assert pipe._conns[0] is None
    finally:
        pipe.close()
        c.close()
