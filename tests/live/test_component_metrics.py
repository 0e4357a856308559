"""What every Kubernetes component exports, recorded by live mode: the API client's
``rest_client_*`` series and ``leader_election_master_status`` (upstream component-base), with
upstream's names, labels and buckets, changing when the thing happens."""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesched.live.client import ApiError, KubeClient, connect
from kubesched.live.leader import LeaderElector
from kubesched.metrics import REST_CLIENT_BUCKETS, SchedulerMetrics
from tests.live.conftest import Api, pod, wait_for
from tests.live.fakeapi import FakeApiServer
from tests.live.fakestore import by_plural
from tests.live.test_leader import SETTINGS

PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
def metrics() -> SchedulerMetrics:
    return SchedulerMetrics()


@pytest.fixture
def client(kubeconfig: Path, metrics: SchedulerMetrics) -> Iterator[KubeClient]:
    c = connect(kubeconfig=str(kubeconfig), qps=0, burst=1, metrics=metrics.rest_client)
    yield c
    c.close()


def _host(server: FakeApiServer) -> str:
    return urllib.parse.urlsplit(server.url).netloc


def _value(metrics: SchedulerMetrics, name: str, **labels: str) -> float:
    return metrics.samples().get((name, tuple(sorted(labels.items()))), 0.0)


def test_requests_are_counted_by_code_method_and_host(
    server: FakeApiServer, client: KubeClient, metrics: SchedulerMetrics
) -> None:
    host = _host(server)
    assert host.startswith("127.0.0.1:")
    total = "rest_client_requests_total"
    client.request("POST", PODS, body=pod("p"))
    client.request("GET", PODS + "/p")
    with pytest.raises(ApiError):
        client.request("GET", PODS + "/missing")
    server.fail("GET /api/v1/namespaces/default/pods/p", 500)
    with pytest.raises(ApiError):
        client.request("GET", PODS + "/p")
    assert _value(metrics, total, code="201", method="POST", host=host) == 1
    assert _value(metrics, total, code="200", method="GET", host=host) == 1
    assert _value(metrics, total, code="404", method="GET", host=host) == 1
    assert _value(metrics, total, code="500", method="GET", host=host) == 1
    for s in [k for k in metrics.samples() if k[0] == total]:
        assert {label for label, _ in s[1]} == {"code", "method", "host"}


def test_no_answer_is_counted_as_error_code(tmp_path: Path, metrics: SchedulerMetrics) -> None:
    gone = FakeApiServer()
    url = gone.url
    gone.close()  # nothing listens there any more
    cfg = tmp_path / "kubeconfig.yaml"
    cfg.write_text(FakeApiServer.kubeconfig_for(url))
    c = connect(kubeconfig=str(cfg), qps=0, burst=1, metrics=metrics.rest_client)
    with pytest.raises(ApiError) as err:
        c.request("GET", PODS, timeout=2.0)
    assert err.value.code == 0
    host = urllib.parse.urlsplit(url).netloc
    assert _value(metrics, "rest_client_requests_total", code="<error>", method="GET", host=host)
    assert _value(metrics, "rest_client_request_duration_seconds_count", verb="GET", host=host)


def test_request_durations_by_verb_with_upstream_buckets(
    server: FakeApiServer, client: KubeClient, metrics: SchedulerMetrics
) -> None:
    host = _host(server)
    name = "rest_client_request_duration_seconds"
    client.request("POST", PODS, body=pod("p"))
    client.request("GET", PODS + "/p")
    client.request("GET", PODS)
    assert _value(metrics, name + "_count", verb="GET", host=host) == 2
    assert _value(metrics, name + "_count", verb="POST", host=host) == 1
    assert _value(metrics, name + "_sum", verb="GET", host=host) > 0
    les = sorted(
        float(dict(labels)["le"])
        for (n, labels), _ in metrics.samples().items()
        if n == name + "_bucket" and dict(labels)["verb"] == "GET"
    )
    assert les == [*REST_CLIENT_BUCKETS, float("inf")]
    assert REST_CLIENT_BUCKETS == (0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60)


def test_a_watch_is_counted_but_not_timed(
    server: FakeApiServer, client: KubeClient, metrics: SchedulerMetrics
) -> None:
    host = _host(server)
    list(client.watch(PODS, {"timeoutSeconds": "1"}, read_timeout=5.0))  # ends after 1 s
    assert _value(metrics, "rest_client_requests_total", code="200", method="GET", host=host) == 1
    count = "rest_client_request_duration_seconds_count"
    assert _value(metrics, count, verb="GET", host=host) == 0


def test_siblings_record_into_the_same_metrics(
    server: FakeApiServer, client: KubeClient, metrics: SchedulerMetrics
) -> None:
    client.sibling(0, 1).request("GET", PODS)
    labels = {"code": "200", "method": "GET", "host": _host(server)}
    assert _value(metrics, "rest_client_requests_total", **labels) == 1


def _status(metrics: SchedulerMetrics) -> float | None:
    return metrics.samples().get(("leader_election_master_status", (("name", "kubesched"),)))


def test_leader_status_follows_acquire_and_release(
    client: KubeClient, metrics: SchedulerMetrics
) -> None:
    elector = LeaderElector(client, SETTINGS, "a", metrics=metrics.leader_election)
    assert _status(metrics) == 0  # upstream: leaderOff when the elector is made
    stop = threading.Event()
    thread = threading.Thread(target=elector.run, args=(stop,), daemon=True)
    thread.start()
    try:
        wait_for(elector.leading)
        wait_for(lambda: _status(metrics) == 1)
    finally:
        stop.set()
        thread.join(5)
    assert _status(metrics) == 0  # released


def test_leader_status_drops_when_the_lease_is_lost(
    api: Api, client: KubeClient, metrics: SchedulerMetrics
) -> None:
    elector = LeaderElector(client, SETTINGS, "a", metrics=metrics.leader_election)
    stop = threading.Event()
    thread = threading.Thread(target=elector.run, args=(stop,), daemon=True)
    thread.start()
    try:
        wait_for(lambda: _status(metrics) == 1)
        obj = api.store.get(by_plural("leases"), "kube-system", "kubesched")
        obj["spec"]["holderIdentity"] = "usurper"
        api.store.update(by_plural("leases"), "kube-system", "kubesched", obj, status_only=False)
        wait_for(elector.lost.is_set, timeout=5)
        assert _status(metrics) == 0
    finally:
        stop.set()
        thread.join(5)


def test_a_standby_reports_zero(api: Api, client: KubeClient, metrics: SchedulerMetrics) -> None:
    holder = LeaderElector(client, SETTINGS, "holder")
    assert holder.try_acquire_or_renew()
    standby = LeaderElector(client, SETTINGS, "b", metrics=metrics.leader_election)
    assert not standby.try_acquire_or_renew()
    assert _status(metrics) == 0
