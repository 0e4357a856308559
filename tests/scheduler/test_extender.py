"""One HTTP extender and the runner over a cycle's nodes, against a real loopback server."""

from __future__ import annotations

import base64
import shutil
import ssl
import subprocess
import time
from typing import Any

import numpy as np
import pytest

from kubesched.config.extenders import (
    Extender,
    ManagedResource,
    apply_ignored_resources,
    parse_extender,
    parse_extenders,
)
from kubesched.config.types import Profile
from kubesched.framework.interface import Code, ExtenderError
from kubesched.scheduler.extender import HTTPExtender
from kubesched.scheduler.extenders import EXTENDER_NAME, Extenders
from kubesched.state.nodes import NodeTable
from kubesched.testing import make_cluster, make_node, make_pod
from tests.scheduler.extender_server import ExtenderServer, keep_only, prefer, sent_names

GPU = "example.com/gpu"


def table(n: int = 4) -> NodeTable:
    return make_cluster(
        [make_node(f"n{i}").cap(cpu="4", memory="8Gi", pods=10).obj() for i in range(n)]
    ).nodes


def rows(t: NodeTable) -> Any:
    return t.order()


class Observed:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str | None, bool]] = []

    def __call__(self, ext: str, verb: str, seconds: float, err: str | None, ign: bool) -> None:
        assert seconds >= 0
        self.calls.append((ext, verb, err, ign))


# ------------------------------------------------------------------ configuration
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"urlPrefix": "http://x"}, Extender("http://x")),
        (
            {"urlPrefix": "http://x", "httpTimeout": "250ms", "weight": 3, "ignorable": True},
            Extender("http://x", weight=3, http_timeout=0.25, ignorable=True),
        ),
        ({"urlPrefix": "http://x", "httpTimeout": "0s"}, Extender("http://x", http_timeout=5.0)),
        (
            {
                "urlPrefix": "http://x",
                "managedResources": [{"name": GPU, "ignoredByScheduler": True}],
                "nodeCacheCapable": True,
            },
            Extender(
                "http://x", managed_resources=(ManagedResource(GPU, True),), node_cache_capable=True
            ),
        ),
    ],
)
def test_parse_extender_defaults_as_upstream(raw: dict[str, Any], expected: Extender) -> None:
    assert parse_extender(raw) == expected


def test_ignorable_extenders_move_to_the_tail_and_ignored_resources_reach_fit() -> None:
    got = parse_extenders(
        [
            {"urlPrefix": "a", "ignorable": True},
            {"urlPrefix": "b", "managedResources": [{"name": GPU, "ignoredByScheduler": True}]},
            {"urlPrefix": "c"},
        ]
    )
    assert [e.url_prefix for e in got] == ["b", "c", "a"]
    (profile,) = apply_ignored_resources((Profile(),), got)
    assert profile.plugin_config["NodeResourcesFit"].ignored_resources == (GPU,)  # type: ignore[attr-defined]


# ------------------------------------------------------------------ filter
@pytest.mark.parametrize("cache_capable", [True, False])
def test_filter_sends_every_node_in_one_call_and_maps_failures(cache_capable: bool) -> None:
    def answer(args: dict[str, Any]) -> dict[str, Any]:
        out = keep_only("n1", "n3")(args)
        out["FailedNodes"] = {"n0": "busy", "n2": "busy"}
        out["FailedAndUnresolvableNodes"] = {"n2": "gone for good"}
        return out

    t = table()
    with ExtenderServer(filter=answer) as srv:
        cfg = Extender(srv.url, filter_verb="filter", node_cache_capable=cache_capable)
        ext = Extenders([cfg])
        out = ext.filter(make_pod("p").req(cpu="1").obj(), t, rows(t))
        ext.close()
    (call,) = srv.calls("filter")
    assert sent_names(call) == ["n0", "n1", "n2", "n3"]
    if cache_capable:
        assert call["Nodes"] is None
    else:
        assert call["NodeNames"] is None
        item = call["Nodes"]["items"][0]
        assert item["kind"] == "Node" and item["status"]["allocatable"]["cpu"] == "4000m"
    assert call["Pod"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1000m"}
    assert [t.names[r] for r in out.feasible] == ["n1", "n3"]
    got = {
        t.names[r]: (s.code, s.reasons, s.plugin)
        for r, s in zip(out.failed, out.statuses, strict=True)
    }
    assert got == {
        "n0": (Code.UNSCHEDULABLE, ("busy",), EXTENDER_NAME),
        "n2": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("gone for good",), EXTENDER_NAME),
    }
    assert out.removed


def test_raw_manifests_are_sent_as_parsed() -> None:
    raw = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0", "uid": "u-1"}}
    node = make_node("n0").cap(cpu="1", memory="1Gi", pods=10).obj()
    node.raw = raw
    t = make_cluster([node]).nodes
    with ExtenderServer(filter=keep_only("n0")) as srv:
        Extenders([Extender(srv.url, filter_verb="filter")]).filter(make_pod().obj(), t, rows(t))
    assert srv.calls("filter")[0]["Nodes"]["items"] == [raw]


@pytest.mark.parametrize(
    ("status", "answer", "message"),
    [
        (500, None, "failed filter with extender at URL {url}/filter, code 500"),
        (200, {"Error": "licence server down"}, "licence server down"),
        (200, {"NodeNames": ["elsewhere"]}, 'claims a filtered node "elsewhere"'),
    ],
)
def test_filter_failures_raise_with_upstream_messages(
    status: int, answer: dict[str, Any] | None, message: str
) -> None:
    t = table(2)
    with ExtenderServer(filter=lambda args: answer) as srv:
        srv.status["filter"] = status
        cfg = Extender(srv.url, filter_verb="filter", node_cache_capable=True)
        with pytest.raises(ExtenderError) as err:
            Extenders([cfg]).filter(make_pod().obj(), t, rows(t))
    assert message.format(url=srv.url) in str(err.value)
    assert not err.value.timeout


def test_ignorable_filter_failure_is_skipped_and_observed() -> None:
    t = table(3)
    seen = Observed()
    with ExtenderServer(filter=keep_only("n1")) as good, ExtenderServer() as bad:
        bad.status["filter"] = 503
        ext = Extenders(
            parse_extenders(
                [
                    {"urlPrefix": bad.url, "filterVerb": "filter", "ignorable": True},
                    {"urlPrefix": good.url, "filterVerb": "filter"},
                ]
            ),
            seen,
        )
        out = ext.filter(make_pod().obj(), t, rows(t))
    assert [t.names[r] for r in out.feasible] == ["n1"]
    assert [c.error != "" for c in out.calls] == [False, True]  # the ignorable one ran last
    assert seen.calls == [(good.url, "filter", None, False), (bad.url, "filter", "error", True)]


def test_slow_extender_hits_http_timeout() -> None:
    t = table(2)
    with ExtenderServer(filter=keep_only("n0")) as srv:
        srv.delay["filter"] = 2.0
        cfg = parse_extender({"urlPrefix": srv.url, "filterVerb": "filter", "httpTimeout": "200ms"})
        start = time.monotonic()
        with pytest.raises(ExtenderError) as err:
            Extenders([cfg]).filter(make_pod().obj(), t, rows(t))
        elapsed = time.monotonic() - start
    assert err.value.timeout and err.value.reason == "timeout"
    assert "context deadline exceeded" in str(err.value)
    assert 0.15 < elapsed < 1.9  # cut at httpTimeout, well before the 2 s answer


def test_filter_runs_only_for_pods_using_a_managed_resource() -> None:
    t = table(2)
    with ExtenderServer(filter=keep_only("n0")) as srv:
        cfg = Extender(srv.url, filter_verb="filter", managed_resources=(ManagedResource(GPU),))
        ext = Extenders([cfg])
        plain = ext.filter(make_pod().req(cpu="1").obj(), t, rows(t))
        gpu = ext.filter(make_pod().res({GPU: 1}).obj(), t, rows(t))
    assert plain.feasible.size == 2 and not plain.removed
    assert [t.names[r] for r in gpu.feasible] == ["n0"]
    assert len(srv.calls("filter")) == 1


# ------------------------------------------------------------------ prioritize
def test_prioritize_scales_by_weight_and_max_extender_priority() -> None:
    t = table(3)
    with (
        ExtenderServer(prioritize=prefer({"n0": 10, "n2": 3, "unknown": 9})) as a,
        ExtenderServer(prioritize=prefer({"n1": 5})) as b,
    ):
        ext = Extenders(
            [
                Extender(a.url, prioritize_verb="prioritize", weight=2),
                Extender(b.url, prioritize_verb="prioritize", weight=1),
            ]
        )
        got = ext.prioritize(make_pod().obj(), t, rows(t))
        ext.close()
    np.testing.assert_array_equal(got.total, [200, 50, 60])  # score * weight * 100/10
    np.testing.assert_array_equal(got.raw[a.url], [10, 0, 3])
    assert got.total.dtype == np.int64


def test_prioritize_failure_gives_no_score_even_when_not_ignorable() -> None:
    t = table(2)
    seen = Observed()
    with ExtenderServer() as srv:
        srv.status["prioritize"] = 500
        ext = Extenders([Extender(srv.url, prioritize_verb="prioritize", weight=1)], seen)
        got = ext.prioritize(make_pod().obj(), t, rows(t))
    np.testing.assert_array_equal(got.total, [0, 0])
    assert "code 500" in got.errors[srv.url]
    assert seen.calls == [(srv.url, "prioritize", "error", True)]


# ------------------------------------------------------------------ bind
def test_bind_sends_binding_args_and_reports_errors() -> None:
    pod = make_pod("web").obj()
    pod.uid = "uid-1"
    with ExtenderServer(bind=lambda args: {"Error": ""}) as ok:
        status = Extenders([Extender(ok.url, bind_verb="bind")]).bind(pod, "n1")
    assert status is not None and status.is_success()
    assert ok.calls("bind") == [
        {"PodName": "web", "PodNamespace": "default", "PodUID": "uid-1", "Node": "n1"}
    ]
    with ExtenderServer(bind=lambda args: {"Error": "quota"}) as bad:
        status = Extenders([Extender(bad.url, bind_verb="bind")]).bind(pod, "n1")
        skipped = Extenders([Extender(bad.url, bind_verb="bind", ignorable=True)]).bind(pod, "n1")
    assert status is not None and status.code == Code.ERROR and status.message() == "quota"
    assert skipped is None  # ignorable: the Bind plugins bind instead


def test_connections_are_pooled_across_calls() -> None:
    with ExtenderServer(filter=keep_only("n0", "n1")) as srv:
        ext = HTTPExtender(Extender(srv.url, filter_verb="filter", node_cache_capable=True))
        body = ext.args_body("{}", ["n0", "n1"], [])
        for _ in range(20):
            assert ext.filter(body, ["n0", "n1"]).passed == ["n0", "n1"]
        ext.close()
    assert len(srv.calls("filter")) == 20
    assert srv.connections == 1


def test_extended_resource_pod_manifest_keeps_units() -> None:
    pod = make_pod().req(cpu="250m", memory="1Gi").res({GPU: 2}).obj()
    t = table(1)
    with ExtenderServer(filter=keep_only("n0")) as srv:
        Extenders([Extender(srv.url, filter_verb="filter")]).filter(pod, t, rows(t))
    requests = srv.calls("filter")[0]["Pod"]["spec"]["containers"][0]["resources"]["requests"]
    assert requests == {"cpu": "250m", "memory": str(2**30), GPU: "2"}


# ------------------------------------------------------------------ TLS
@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A self-signed certificate for ``extender.test`` (cert path, key path)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl not installed")
    d = tmp_path_factory.mktemp("tls")
    cert, key = str(d / "cert.pem"), str(d / "key.pem")
    new_key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    files = ["-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=extender.test"]
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            *new_key,
            *files,
            "-addext",
            "subjectAltName=DNS:extender.test",
        ],
        check=True,
        capture_output=True,
        timeout=30,
    )
    return cert, key


@pytest.mark.parametrize(
    ("tls", "ok"),
    [
        ({}, True),  # enableHTTPS without a CA: not verified (upstream)
        ({"caFile": "CERT", "serverName": "extender.test"}, True),
        ({"caData": "CERT_DATA", "serverName": "extender.test"}, True),
        ({"caFile": "CERT", "serverName": "other.test"}, False),  # name mismatch
        ({"caFile": "CERT"}, False),  # the certificate is not for 127.0.0.1
    ],
)
def test_https_extender(certificate: tuple[str, str], tls: dict[str, str], ok: bool) -> None:
    cert, key = certificate
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    with open(cert, "rb") as f:
        pem = f.read()
    tls_config = {
        k: cert if v == "CERT" else base64.b64encode(pem).decode() if v == "CERT_DATA" else v
        for k, v in tls.items()
    }
    t = table(2)
    with ExtenderServer(tls=ctx, filter=keep_only("n1")) as srv:
        cfg = parse_extender(
            {
                "urlPrefix": srv.url,
                "filterVerb": "filter",
                "enableHTTPS": True,
                "tlsConfig": tls_config,
                "httpTimeout": "2s",
            }
        )
        ext = Extenders([cfg])
        if ok:
            assert [t.names[r] for r in ext.filter(make_pod().obj(), t, rows(t)).feasible] == ["n1"]
        else:
            with pytest.raises(ExtenderError, match=r"CERTIFICATE_VERIFY_FAILED|certificate"):
                ext.filter(make_pod().obj(), t, rows(t))
        ext.close()


def test_a_pooled_connection_the_server_closed_is_retried_once() -> None:
    with ExtenderServer(filter=keep_only("n0")) as srv:
        srv.drop_connections = True
        ext = HTTPExtender(Extender(srv.url, filter_verb="filter", node_cache_capable=True))
        body = ext.args_body("{}", ["n0"], [])
        for _ in range(5):
            time.sleep(0.01)  # let the server close its end
            assert ext.filter(body, ["n0"]).passed == ["n0"]
        ext.close()
    assert len(srv.calls("filter")) == 5 and srv.connections == 5


@pytest.mark.parametrize("as_data", [False, True])
def test_client_certificate_for_mutual_tls(certificate: tuple[str, str], as_data: bool) -> None:
    cert, key = certificate
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.load_verify_locations(cert)  # the same self-signed certificate identifies the client
    ctx.verify_mode = ssl.CERT_REQUIRED

    def b64(path: str) -> str:
        with open(path, "rb") as f:
            return base64.b64encode(f.read()).decode()

    client = {"certData": b64(cert), "keyData": b64(key)} if as_data else {}
    client = client or {"certFile": cert, "keyFile": key}
    t = table(1)
    with ExtenderServer(tls=ctx, filter=keep_only("n0")) as srv:
        for tls, ok in (({}, False), (client, True)):
            cfg = parse_extender(
                {
                    "urlPrefix": srv.url,
                    "filterVerb": "filter",
                    "enableHTTPS": True,
                    "tlsConfig": tls,
                }
            )
            ext = Extenders([cfg])
            if ok:
                assert ext.filter(make_pod().obj(), t, rows(t)).feasible.size == 1
            else:
                with pytest.raises(ExtenderError):
                    ext.filter(make_pod().obj(), t, rows(t))
            ext.close()
