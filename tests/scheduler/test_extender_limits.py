"""Extender calls against hostile answers: one deadline for connect, send, wait and read;
a bounded answer size; a negative ``httpTimeout`` is a configuration error."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kubesched.api.errors import InputError
from kubesched.config.extenders import parse_extender
from kubesched.config.load import load_config
from kubesched.framework.interface import ExtenderError
from kubesched.plugins.registry import known_plugin_names
from kubesched.scheduler import extender_transport as tr
from kubesched.scheduler.extenders import Extenders
from kubesched.state.nodes import NodeTable
from kubesched.testing import make_cluster, make_node, make_pod
from tests.scheduler.extender_server import ExtenderServer, keep_only

BUDGET = "300ms"


def table() -> NodeTable:
    nodes = [make_node(f"n{i}").cap(cpu="4", memory="8Gi", pods=10).obj() for i in range(2)]
    return make_cluster(nodes).nodes


def call(srv: ExtenderServer, timeout: str = BUDGET) -> tuple[list[str], float]:
    """One filter call; the passing node names and the wall seconds it took."""
    t = table()
    cfg = parse_extender(
        {"urlPrefix": srv.url, "filterVerb": "filter", "httpTimeout": timeout, "weight": 1}
    )
    ext = Extenders([cfg])
    start = time.monotonic()
    try:
        out = ext.filter(make_pod().obj(), t, t.order())
    finally:
        ext.close()
    return [t.names[r] for r in out.feasible], time.monotonic() - start


@pytest.mark.parametrize("headers_too", [False, True], ids=["body", "status-and-headers"])
def test_an_answer_trickled_past_the_deadline_times_out(headers_too: bool) -> None:
    """About 60 bytes at 60 ms each would take 3.6 s: the call ends at the 300 ms budget
    (the bound leaves a loaded machine's scheduling delays room, far below the trickle)."""
    with ExtenderServer(filter=keep_only("n0")) as srv:
        srv.trickle["filter"] = (0.06, headers_too)
        start = time.monotonic()
        with pytest.raises(ExtenderError) as err:
            call(srv)
        elapsed = time.monotonic() - start
    assert err.value.timeout and "context deadline exceeded" in str(err.value)
    assert 0.25 < elapsed < 2.0


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_slow_answer_within_the_deadline_is_read_whole(chunked: bool) -> None:
    with ExtenderServer(filter=keep_only("n0")) as srv:
        srv.trickle["filter"] = (0.0002, False)
        srv.chunked = chunked
        names, _elapsed = call(srv, "5s")
    assert names == ["n0"]


def test_the_answer_limit_grows_with_the_request() -> None:
    assert tr.answer_limit(10) == tr.MIN_ANSWER_LIMIT == 64 * 1024 * 1024
    assert tr.answer_limit(100 * 1024 * 1024) == 200 * 1024 * 1024


@pytest.mark.parametrize("framing", ["content-length", "read-to-eof", "chunked"])
def test_an_answer_past_the_limit_is_refused(monkeypatch: pytest.MonkeyPatch, framing: str) -> None:
    """The limit is patched down to 4 KiB so the test sends kilobytes, not 64 MiB."""
    monkeypatch.setattr(tr, "MIN_ANSWER_LIMIT", 4096)
    with ExtenderServer(filter=keep_only("n0")) as srv:
        srv.unannounced = framing == "read-to-eof"
        srv.chunked = framing == "chunked"
        names, _ = call(srv, "5s")  # small answers pass either way
        assert names == ["n0"]
        srv.padding["filter"] = 64 * 1024
        with pytest.raises(ExtenderError) as err:
            call(srv, "5s")
    assert "answer larger than 4096 bytes" in str(err.value)
    assert not err.value.timeout


def config(timeout: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "extenders": [{"urlPrefix": "http://x", "filterVerb": "filter", "httpTimeout": timeout}],
    }


def test_a_negative_http_timeout_is_a_config_error() -> None:
    with pytest.raises(InputError) as err:
        load_config(config("-1s"), known_plugins=known_plugin_names())
    assert err.value.problems == [
        ("extenders[0].httpTimeout", 'Invalid value: "-1s": must not be negative')
    ]
    load_config(
        config("0s"), known_plugins=known_plugin_names()
    )  # zero means upstream's default (5 s)


def test_an_http_timeout_beyond_a_go_duration_is_a_config_error() -> None:
    """Go's ``time.ParseDuration`` refuses 100000000h (beyond int64 nanoseconds); it used to
    reach the socket as an ``OverflowError`` at the first call (issue 31 item 7)."""
    with pytest.raises(InputError) as err:
        load_config(config("100000000h"), known_plugins=known_plugin_names())
    assert err.value.problems[0][0] == "extenders[0].httpTimeout"
    load_config(config("2562047h"), known_plugins=known_plugin_names())  # Go's largest hours


@pytest.mark.parametrize(
    ("tls", "says"),
    [
        ({"certFile": "/nonexistent/c.pem", "keyFile": "/nonexistent/k.pem"}, "No such file"),
        ({"caFile": "/nonexistent/ca.pem"}, "No such file"),
        ({"caData": "bm90IGEgY2VydA=="}, "certificate"),
        ({"certData": "bm90IGEgY2VydA==", "keyData": "bm90IGEga2V5"}, "PEM"),
    ],
)
def test_a_tls_config_the_transport_cannot_use_is_a_config_error(
    tls: dict[str, str], says: str
) -> None:
    """kube-scheduler does not start when ``NewHTTPExtender`` cannot build the transport;
    these crashed explain, schedule, simulate and run at start (issue 31 item 7)."""
    raw = config("5s")
    raw["extenders"][0].update(urlPrefix="https://x", enableHTTPS=True, tlsConfig=tls)
    with pytest.raises(InputError) as err:
        load_config(raw, known_plugins=known_plugin_names())
    ((path, message),) = err.value.problems
    assert path == "extenders[0].tlsConfig"
    assert "couldn't create the extender's TLS transport" in message and says in message


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999", "http://[::1"])
def test_a_url_no_client_can_call_fails_each_call_not_the_scheduler(url: str) -> None:
    """Upstream starts with such a urlPrefix and fails each request; so does every call here,
    as an extender error (a Pod's scheduling error), instead of a ValueError at start."""
    (ext,) = Extenders([parse_extender({"urlPrefix": url, "filterVerb": "filter"})]).extenders
    with pytest.raises(ExtenderError, match="invalid URL"):
        ext.send("filter", b"{}")
