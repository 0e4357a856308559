"""The API edge: error classification, Retry-After, the token bucket, raw binding answers,
watch streams and their interruption."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from kubesched.api.errors import InputError
from kubesched.live.client import ApiError, KubeClient, RateLimiter, connect
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
