"""Asynchronous binds: the client's writes thread (:class:`WritesInFlight`) and live mode's
binding cycles that are only the bind, ended on the scheduling thread without a worker."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kubesched.api.parse import parse_pod
from kubesched.live.client import ApiError, KubeClient, connect
from kubesched.live.recorder import Recorder
from tests.live.conftest import Api, Replica, make_config, node, pod
from tests.live.conftest import wait_for as wait
from tests.live.fakeapi import FakeApiServer


@pytest.fixture
def client(kubeconfig: Path) -> Iterator[KubeClient]:
    c = connect(kubeconfig=str(kubeconfig), qps=0, burst=1)
    yield c
    c.close()


def _binding(name: str, node_name: str = "n1") -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name},
        "target": {"kind": "Node", "name": node_name},
    }


def _submit(client: KubeClient, name: str, **kw: object) -> queue.SimpleQueue[object]:
    got: queue.SimpleQueue[object] = queue.SimpleQueue()
    assert client.writes is not None
    client.writes.submit(
        "POST",
        f"/api/v1/namespaces/default/pods/{name}/binding",
        _binding(name),
        answered=lambda err: got.put((err, threading.current_thread().name)),
        **kw,  # type: ignore[arg-type]
    )
    return got


def test_writes_in_flight_answer_on_their_thread(api: Api, client: KubeClient) -> None:
    for i in range(40):
        api.create(pod(f"p{i}"))
    answers = [_submit(client, f"p{i}") for i in range(40)]
    for got in answers:
        err, thread = got.get(timeout=10)
        assert err is None
        assert thread == "kubesched-writes"
    assert all(api.node_of(f"p{i}") == "n1" for i in range(40))
    assert client.writes is not None and client.writes.pending == 0


def test_writes_submitted_while_the_thread_works_need_no_wake_up(
    api: Api, client: KubeClient
) -> None:
    """Only a parked writes thread is woken through its pipe: a run of submits is picked up
    by the thread already awake (one system call and lock hand-over per batch, not per
    bind)."""
    for i in range(40):
        api.create(pod(f"p{i}"))
    answers = [_submit(client, f"p{i}") for i in range(40)]
    assert all(got.get(timeout=10)[0] is None for got in answers)
    assert client.writes is not None and client.writes.wakeups < 20


def test_events_go_through_pipelined_connections_beside_the_writes_thread(
    server: FakeApiServer, api: Api, client: KubeClient
) -> None:
    """The recorder's client is a sibling with its own limiter; its Events are built and
    written on the recorder's thread through pipelined connections of its own (the binds'
    writes thread never starts for them); a retryable failure is tried once more."""
    events = client.sibling(0, 1)
    rec = Recorder(events, host="h")
    assert rec.pipe is not None
    stop = threading.Event()
    thread = threading.Thread(target=rec.run, args=(stop,), daemon=True)
    thread.start()
    pods = [pod(f"p{i}") for i in range(5)]
    server.fail("POST /apis/events.k8s.io/v1/namespaces/default/events", 503)
    try:
        for p in pods:
            rec.pod_scheduled(parse_pod(p), "n1")
        wait(lambda: len(api.events("Scheduled")) == 5)
        wait(lambda: rec.written == 5 and not rec.retries)
        assert client.writes is not None and client.writes.pending == 0
        assert client.writes._thread is None  # no write went through it
    finally:
        stop.set()
        rec.wake()
        thread.join(5)


def test_an_error_answer_is_the_api_error_request_raises(
    server: FakeApiServer, api: Api, client: KubeClient
) -> None:
    err, _ = _submit(client, "nope").get(timeout=10)  # no such Pod
    assert isinstance(err, ApiError) and (err.code, err.reason) == (404, "NotFound")
    api.create(pod("p"))
    server.fail("POST /api/v1/namespaces/default/pods/p/binding", 429, retry_after=3)
    err, _ = _submit(client, "p").get(timeout=10)
    assert isinstance(err, ApiError) and (err.code, err.retry_after) == (429, 3.0)
    assert api.node_of("p") == ""


def test_a_refused_write_is_not_sent(api: Api, client: KubeClient) -> None:
    api.create(pod("p"))
    refusal = RuntimeError("not the leader")
    err, _ = _submit(client, "p", ready=lambda: refusal).get(timeout=10)
    assert err is refusal
    time.sleep(0.2)
    assert api.node_of("p") == ""
    assert api.store.stats.binds_per_pod.get("default/p", 0) == 0


def test_a_write_with_no_server_is_code_0(tmp_path: Path) -> None:
    kc = tmp_path / "kc"
    kc.write_text(FakeApiServer.kubeconfig_for("http://127.0.0.1:9"))
    c = connect(kubeconfig=str(kc))
    try:
        err, _ = _submit(c, "p", timeout=2.0).get(timeout=10)
        assert isinstance(err, ApiError) and err.code == 0 and err.retryable
    finally:
        c.close()


def test_lean_binding_cycles_need_no_binding_worker(
    api: Api, replicas: Callable[..., Replica]
) -> None:
    api.create(node("n1", cpu="64"))
    r = replicas("solo", make_config(leader=False))
    for i in range(20):
        api.create(pod(f"p{i}"))
    wait(lambda: all(api.node_of(f"p{i}") == "n1" for i in range(20)))
    wait(lambda: r.live.scheduler.attempts["scheduled"] == 20)
    wait(lambda: len(api.events("Scheduled")) == 20)
    assert r.live.binding_pool is not None and r.live.binding_pool.ran == 0
    assert r.live.api.binds == 20 and r.live.binds_later == 0
    # each Pod is confirmed by its watch event, which may trail its bind and its Event
    wait(lambda: not any(r.live.scheduler.cluster.is_assumed(f"default/p{i}") for i in range(20)))


def test_a_failed_bind_later_is_undone_and_retried(
    server: FakeApiServer, api: Api, replicas: Callable[..., Replica]
) -> None:
    api.create(node("n1"))
    server.fail("POST /api/v1/namespaces/default/pods/p/binding", 500)
    r = replicas("solo", make_config(leader=False))
    api.create(pod("p"))
    wait(lambda: api.node_of("p") == "n1", timeout=20)
    wait(lambda: r.live.scheduler.attempts["scheduled"] == 1)
    assert r.live.api.bind_errors == 1
    assert r.live.binding_pool is not None and r.live.binding_pool.ran == 0
    assert r.live.scheduler.attempts["error"] == 1
    assert api.store.stats.binds_per_pod["default/p"] == 1  # the failed one was not written
    # the retried bind's Pod is confirmed by its watch event, which may trail the bind
    wait(lambda: not r.live.scheduler.cluster.is_assumed("default/p"))
