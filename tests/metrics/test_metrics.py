"""Metric names, types, labels and bucket boundaries against upstream v1.34's metrics.go, and
the recording helpers (cached children, periodic sync, quantiles, the HTTP endpoint)."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kubesched import metrics as m

# Upstream pkg/scheduler/metrics/metrics.go (v1.34): name, type, labels, ExponentialBuckets args.
UPSTREAM = [
    ("scheduler_schedule_attempts_total", "counter", ("result", "profile"), None),
    (
        "scheduler_scheduling_attempt_duration_seconds",
        "histogram",
        ("result", "profile"),
        (0.001, 2, 15),
    ),
    ("scheduler_scheduling_algorithm_duration_seconds", "histogram", (), (0.001, 2, 15)),
    ("scheduler_pending_pods", "gauge", ("queue",), None),
    (
        "scheduler_framework_extension_point_duration_seconds",
        "histogram",
        ("extension_point", "status", "profile"),
        (0.0001, 2, 12),
    ),
    (
        "scheduler_plugin_execution_duration_seconds",
        "histogram",
        ("plugin", "extension_point", "status"),
        (0.00001, 1.5, 20),
    ),
    ("scheduler_pod_scheduling_sli_duration_seconds", "histogram", ("attempts",), (0.01, 2, 20)),
    ("scheduler_pod_scheduling_attempts", "histogram", (), (1, 2, 5)),
    ("scheduler_queue_incoming_pods_total", "counter", ("queue", "event"), None),
    ("scheduler_unschedulable_pods", "gauge", ("plugin", "profile"), None),
    ("scheduler_preemption_attempts_total", "counter", (), None),
    ("scheduler_preemption_victims", "histogram", (), (1, 2, 7)),
    ("scheduler_cache_size", "gauge", ("type",), None),
    (
        "scheduler_plugin_evaluation_total",
        "counter",
        ("plugin", "extension_point", "profile"),
        None,
    ),
    ("scheduler_permit_wait_duration_seconds", "histogram", ("result",), (0.001, 2, 15)),
    (
        "scheduler_queueing_hint_execution_duration_seconds",
        "histogram",
        ("plugin", "event", "hint"),
        (0.00001, 1.5, 20),
    ),
    ("scheduler_event_handling_duration_seconds", "histogram", ("event",), (0.0001, 2, 12)),
    ("scheduler_inflight_events", "gauge", ("event",), None),
]

# `le` strings as kube-scheduler's /metrics prints them (Go's shortest float formatting).
KNOWN_LE = {
    "scheduler_scheduling_attempt_duration_seconds": ["0.001", "0.002", "0.004", "16.384"],
    "scheduler_framework_extension_point_duration_seconds": ["0.0001", "0.0002", "0.2048"],
    "scheduler_plugin_execution_duration_seconds": [
        "1e-05",
        "1.5000000000000002e-05",
        "2.2500000000000005e-05",
        "0.02216837820053101",
    ],
    "scheduler_pod_scheduling_sli_duration_seconds": ["0.01", "0.02", "5242.88"],
    "scheduler_preemption_victims": ["1.0", "2.0", "64.0"],
}


def _exercised() -> m.SchedulerMetrics:
    """Metrics with one series in every family."""
    sm = m.SchedulerMetrics()
    sm.record_attempt("scheduled", "default-scheduler", 0.003)
    sm.algorithm_duration.observe(0.002)
    sm.observe_extension_point("default-scheduler")("Filter", "Success", 0.0003)
    sm.plugin_recorder()("NodeResourcesFit", "Filter", "Success", 0.00002)
    sm.record_scheduled(2, 1.5)
    sm.record_preemption(3)
    sm.sync(
        pending={"active": 1},
        incoming={("active", "PodAdd"): 1},
        rejected=[("default-scheduler", ["NodeResourcesFit"])],
        cache={"nodes": 1, "pods": 0, "assumed_pods": 0},
        evaluations={("NodeResourcesFit", "Filter", "default-scheduler"): 3},
        inflight={"PodPopped": 1, "NodeAdd": 1},
    )
    sm.record_permit_wait("SUCCESS", 1.5)
    sm.hint_recorder()(0.00002, "NodeResourcesFit", "NodeAdd", "Queue")
    sm.event_recorder()(0.0003, "NodeAdd")
    sm.record_binder_conflict("resources")
    sm.record_quota("team-a", "admitted", {"cpu": 1000})
    sm.record_gang("default-scheduler", "scheduled", 2.0)
    sm.gangs_waiting.set(0)
    sm.batch_attempts.labels(profile="default-scheduler", result="hit").inc()
    sm.batch_flushes.labels(profile="default-scheduler", reason="expired").inc()
    return sm


@pytest.fixture(scope="module")
def families() -> dict[str, object]:
    text = _exercised().exposition().decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def _full_name(family: object) -> str:
    name, kind = family.name, family.type  # type: ignore[attr-defined]
    return str(name) + "_total" if kind == "counter" else str(name)


@pytest.mark.parametrize(("name", "kind", "labels", "buckets"), UPSTREAM)
def test_upstream_metric_shape(
    families: dict[str, object],
    name: str,
    kind: str,
    labels: tuple[str, ...],
    buckets: tuple[float, float, int] | None,
) -> None:
    fam = families[name.removesuffix("_total") if kind == "counter" else name]
    assert fam.type == kind  # type: ignore[attr-defined]
    samples = fam.samples  # type: ignore[attr-defined]
    assert samples, name
    for s in samples:
        assert set(s.labels) - {"le"} == set(labels), (name, s.labels)
    assert m.UPSTREAM_METRICS[name][:2] == (kind, labels)
    if buckets is not None:
        start, factor, count = buckets
        les = [s.labels["le"] for s in samples if s.name == name + "_bucket"]
        series = len(les) // (count + 1)
        expected = []
        b = float(start)
        for _ in range(count):
            expected.append(b)
            b *= factor
        assert [float(x) for x in les[: count + 1]] == [*expected, float("inf")]
        assert series >= 1 and len(les) == series * (count + 1)
        assert m.UPSTREAM_METRICS[name][2] == tuple(expected)


@pytest.mark.parametrize(("name", "strings"), sorted(KNOWN_LE.items()))
def test_bucket_labels_print_like_kube_scheduler(name: str, strings: list[str]) -> None:
    text = _exercised().exposition().decode()
    for le in strings:
        assert f'le="{le}"' in text, (name, le)


@pytest.mark.parametrize(
    ("family", "help_text"),
    [
        (
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
            "could not be scheduled, while 'error' means an internal scheduler problem.",
        ),
        (
            "scheduler_plugin_evaluation",
            "Number of attempts to schedule pods by each plugin and the extension point "
            "(available only in PreFilter, Filter, PreScore, and Score).",
        ),
        ("scheduler_permit_wait_duration_seconds", "Duration of waiting on permit."),
        (
            "scheduler_queueing_hint_execution_duration_seconds",
            "Duration for running a queueing hint function of a plugin.",
        ),
        ("scheduler_event_handling_duration_seconds", "Event handling latency in seconds."),
        (
            "scheduler_inflight_events",
            "Number of events currently tracked in the scheduling queue.",
        ),
    ],
)
def test_help_strings_are_upstreams(
    families: dict[str, object], family: str, help_text: str
) -> None:
    assert families[family].documentation == help_text  # type: ignore[attr-defined]


def test_permit_wait_result_is_upstreams_code_string(families: dict[str, object]) -> None:
    samples = families["scheduler_permit_wait_duration_seconds"].samples  # type: ignore[attr-defined]
    assert {s.labels["result"] for s in samples} == {"Success"}


def test_no_created_series_and_every_family_known(families: dict[str, object]) -> None:
    names = {_full_name(f) for f in families.values()}
    ours = {n for n in names if n.startswith(("scheduler_", "kubesched_"))}
    assert ours == set(m.UPSTREAM_METRICS) | set(m.OWN_METRICS) | set(m.STARTUP_METRICS)
    component = names - ours - set(m.COMPONENT_METRICS)  # the default collectors' families
    assert component and all(n.startswith(("process_", "python_")) for n in component), names
    text = _exercised().exposition().decode()
    assert "_created" not in text


@pytest.mark.parametrize("name", sorted(m.STARTUP_METRICS))
def test_startup_metrics_documented_in_kubesched_namespace(
    families: dict[str, object], name: str
) -> None:
    kind, labels, doc = m.STARTUP_METRICS[name]
    assert name.startswith("kubesched_pod_startup_") and name not in m.UPSTREAM_METRICS
    fam = families[name]
    assert fam.type == kind and fam.documentation == doc  # type: ignore[attr-defined]
    for s in fam.samples:  # type: ignore[attr-defined]
        assert set(s.labels) - {"le"} == set(labels)


@pytest.mark.parametrize("name", sorted(m.OWN_METRICS))
def test_own_metrics_documented_with_prefix(families: dict[str, object], name: str) -> None:
    kind, labels, doc = m.OWN_METRICS[name]
    assert name.startswith("scheduler_") and name not in m.UPSTREAM_METRICS
    fam = families[name.removesuffix("_total") if kind == "counter" else name]
    assert fam.type == kind and fam.documentation == doc  # type: ignore[attr-defined]
    for s in fam.samples:  # type: ignore[attr-defined]
        assert set(s.labels) - {"le"} == set(labels)


@pytest.mark.parametrize(
    ("raw", "label"),
    [
        ("Success", "Success"),
        ("SUCCESS", "Success"),
        ("Unschedulable_And_Unresolvable", "UnschedulableAndUnresolvable"),
        ("UNSCHEDULABLE_AND_UNRESOLVABLE", "UnschedulableAndUnresolvable"),
        ("UnschedulableAndUnresolvable", "UnschedulableAndUnresolvable"),
        ("Error", "Error"),
    ],
)
def test_status_label_is_upstream_code_string(raw: str, label: str) -> None:
    assert m.code_label(raw) == label


def test_sync_counts_deltas_and_zeroes_gone_plugins() -> None:
    sm = m.SchedulerMetrics()
    key = ("backoff", "ScheduleAttemptFailure")
    sm.sync(pending={"active": 2}, incoming={key: 3}, rejected=[("p", ["A", "B"]), ("p", ["A"])])
    sm.sync(pending={"backoff": 1}, incoming={key: 5}, rejected=[("p", ["B"])])
    got = sm.samples()
    assert got[("scheduler_queue_incoming_pods_total", (("event", key[1]), ("queue", key[0])))] == 5
    assert got[("scheduler_pending_pods", (("queue", "active"),))] == 0
    assert got[("scheduler_pending_pods", (("queue", "backoff"),))] == 1
    assert got[("scheduler_unschedulable_pods", (("plugin", "A"), ("profile", "p")))] == 0
    assert got[("scheduler_unschedulable_pods", (("plugin", "B"), ("profile", "p")))] == 1


@pytest.mark.parametrize(
    ("q", "buckets", "want"),
    [
        (0.5, [(1.0, 0.0), (2.0, 10.0), (float("inf"), 10.0)], 1.5),
        (0.99, [(1.0, 10.0), (2.0, 10.0), (float("inf"), 10.0)], 0.99),
        (0.99, [(1.0, 0.0), (2.0, 0.0), (float("inf"), 4.0)], 2.0),  # +Inf: highest bound
        (0.5, [(1.0, 0.0), (float("inf"), 0.0)], None),
    ],
)
def test_histogram_quantile_like_prometheus(
    q: float, buckets: list[tuple[float, float]], want: float | None
) -> None:
    got = m.histogram_quantile(q, buckets)
    assert got == pytest.approx(want) if want is not None else got is None


def test_histogram_summary_reads_back_counts() -> None:
    sm = m.SchedulerMetrics()
    obs = sm.observe_extension_point("x")
    for _ in range(99):
        obs("Filter", "Success", 0.00015)
    obs("Filter", "Unschedulable", 0.1)
    h = sm.histogram("scheduler_framework_extension_point_duration_seconds", "extension_point")
    assert h["Filter"]["count"] == 100
    p50, p99 = h["Filter"]["p50"], h["Filter"]["p99"]
    assert p50 is not None and 0.0001 < p50 <= 0.0002
    assert p99 is not None and p99 <= 0.0002


def test_server_serves_metrics_and_healthz() -> None:
    sm = m.SchedulerMetrics()
    sm.record_attempt("scheduled", "default-scheduler", 0.01)
    with m.MetricsServer(sm, "127.0.0.1", 0) as srv:
        body = urllib.request.urlopen(srv.url, timeout=5).read().decode()
        assert 'scheduler_schedule_attempts_total{profile="default-scheduler"' in body
        health = urllib.request.urlopen(srv.url.replace("/metrics", "/healthz"), timeout=5)
        assert health.read() == b"ok"
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(srv.url.replace("/metrics", "/nope"), timeout=5)
