"""Effective and non-zero pod requests, ported from upstream's ``PodRequests`` tests
(``k8s.io/component-helpers/resource/helpers_test.go``) and ``PodInfo.CalculateResource``."""

from __future__ import annotations

import pytest

from kubesched.api import podresources as pr
from kubesched.api.quantity import milli_value

MI = 2**20
GI = 2**30


def R(resources: dict[str, str] | None = None) -> pr.Millis:
    """A resource list in thousandths from quantity strings."""
    return {name: milli_value(q) for name, q in (resources or {}).items()}


def C(cpu: str) -> pr.Millis:
    return R({"cpu": cpu})


def init(resources: dict[str, str], restartable: bool = False) -> tuple[pr.Millis, bool]:
    return R(resources), restartable


# (description, containers, init containers, overhead, pod-level requests, expected)
POD_REQUESTS_CASES = [
    # TestPodRequestsAndLimits (no API defaulting at this level: a lone limit is no request)
    ("just-limit-no-overhead", [{}], [], None, None, {}),
    ("just-overhead", [{}], [], R({"cpu": "5", "memory": "5"}), None, {"cpu": "5", "memory": "5"}),
    (
        "req-and-overhead",
        [R({"cpu": "1", "memory": "10"})],
        [],
        R({"cpu": "5", "memory": "5"}),
        None,
        {"cpu": "6", "memory": "15"},
    ),
    # TestPodRequestsAndLimitsWithoutOverhead
    (
        "two containers, sum of containers",
        [R({"cpu": "1", "memory": "5"}), R({"cpu": "4", "memory": "12"})],
        [],
        None,
        None,
        {"cpu": "5", "memory": "17"},
    ),
    (
        "two containers, massive init: the largest init",
        [R({"cpu": "1", "memory": "5"}), R({"cpu": "4", "memory": "12"})],
        [init({"cpu": "1", "memory": "5"}), init({"cpu": "40", "memory": "120"})],
        None,
        None,
        {"cpu": "40", "memory": "120"},
    ),
    # TestPodResourceRequests
    ("larger init container", [C("1")], [init({"cpu": "4"})], None, None, {"cpu": "4"}),
    ("larger containers", [C("2"), C("3")], [init({"cpu": "2"})], None, None, {"cpu": "5"}),
    (
        "pod overhead included",
        [C("2"), C("3")],
        [init({"cpu": "2"})],
        R({"cpu": "1", "memory": "1Gi"}),
        None,
        {"cpu": "6", "memory": "1Gi"},
    ),
    ("restartable init container", [C("1")], [init({"cpu": "1"}, True)], None, None, {"cpu": "2"}),
    (
        "multiple restartable init containers: max(5, 3+2+1+1)",
        [C("1")],
        [
            init({"cpu": "5"}),
            init({"cpu": "1"}, True),
            init({"cpu": "2"}, True),
            init({"cpu": "3"}, True),
        ],
        None,
        None,
        {"cpu": "7"},
    ),
    (
        "multiple restartable and regular init containers: init-2 needs 5+1+2",
        [C("1")],
        [
            init({"cpu": "5"}),
            init({"cpu": "1"}, True),
            init({"cpu": "2"}, True),
            init({"cpu": "5"}),
            init({"cpu": "3"}, True),
        ],
        None,
        None,
        {"cpu": "8"},
    ),
    (
        "restartable-init, init and regular",
        [C("100")],
        [init({"cpu": "10"}, True), init({"cpu": "200"})],
        None,
        None,
        {"cpu": "210"},
    ),
    # TestPodLevelResourceRequests
    ("pod level memory", [], [], None, R({"memory": "2Mi"}), {"memory": "2Mi"}),
    (
        "pod level memory and container level cpu",
        [C("2m")],
        [],
        None,
        R({"memory": "2Mi"}),
        {"memory": "2Mi", "cpu": "2m"},
    ),
    (
        "unsupported resource at both levels: container value wins",
        [R({"storage": "3Mi"})],
        [],
        None,
        R({"storage": "2Mi"}),
        {"storage": "3Mi"},
    ),
    (
        "unsupported resource at pod level only",
        [R({"memory": "3Mi"})],
        [],
        None,
        R({"storage": "2Mi"}),
        {"memory": "3Mi"},
    ),
    (
        "both container-level and pod-level",
        [R({"memory": "3Mi", "cpu": "2m"})],
        [],
        None,
        R({"memory": "6Mi", "cpu": "8m"}),
        {"memory": "6Mi", "cpu": "8m"},
    ),
    (
        "container and init container",
        [R({"memory": "3Mi", "cpu": "2m"})],
        [init({"memory": "5Mi", "cpu": "4m"})],
        None,
        None,
        {"memory": "5Mi", "cpu": "4m"},
    ),
    (
        "container and sidecar",
        [R({"memory": "3Mi", "cpu": "2m"})],
        [init({"memory": "5Mi", "cpu": "4m"}, True)],
        None,
        None,
        {"memory": "8Mi", "cpu": "6m"},
    ),
    (
        "container, sidecar, then init",
        [R({"memory": "3Mi", "cpu": "2m"})],
        [init({"memory": "5Mi", "cpu": "4m"}, True), init({"memory": "6Mi", "cpu": "8m"})],
        None,
        None,
        {"memory": "11Mi", "cpu": "12m"},
    ),
    (
        "pod-level over container, sidecar and init",
        [R({"memory": "3Mi", "cpu": "2m"})],
        [init({"memory": "5Mi", "cpu": "4m"}, True), init({"memory": "6Mi", "cpu": "8m"})],
        None,
        R({"memory": "15Mi", "cpu": "18m"}),
        {"memory": "15Mi", "cpu": "18m"},
    ),
    (
        "hugepages of different sizes at pod and container level",
        [R({"memory": "4Mi", "hugepages-1Gi": "1Gi"})],
        [],
        None,
        R({"cpu": "1", "hugepages-2Mi": "10Mi"}),
        {"cpu": "1", "memory": "4Mi", "hugepages-2Mi": "10Mi", "hugepages-1Gi": "1Gi"},
    ),
    (
        "pod-level requests still receive overhead",
        [],
        [],
        R({"cpu": "100m", "memory": "10Mi"}),
        R({"cpu": "1", "memory": "100Mi"}),
        {"cpu": "1100m", "memory": "110Mi"},
    ),
]


@pytest.mark.parametrize(
    ("containers", "inits", "overhead", "pod_level", "expected"),
    [c[1:] for c in POD_REQUESTS_CASES],
    ids=[c[0] for c in POD_REQUESTS_CASES],
)
def test_pod_requests(
    containers: list[pr.Millis],
    inits: list[tuple[pr.Millis, bool]],
    overhead: pr.Millis | None,
    pod_level: pr.Millis | None,
    expected: dict[str, str],
) -> None:
    assert pr.pod_requests(containers, inits, overhead, pod_level) == R(expected)


@pytest.mark.parametrize(
    ("containers", "inits"),
    [([], [init({"cpu": "1"})]), ([C("1")], [])],
    ids=["applied to init container", "applied to regular container"],
)
def test_non_missing_container_requests(
    containers: list[pr.Millis], inits: list[tuple[pr.Millis, bool]]
) -> None:
    got = pr.pod_requests(containers, inits, non_missing=R({"memory": "100Mi"}))
    assert got == R({"cpu": "1", "memory": "100Mi"})


def test_inputs_are_not_mutated() -> None:
    containers = [C("1")]
    inits = [init({"cpu": "1"}, True), init({"cpu": "3"})]
    pr.pod_requests(containers, inits, R({"cpu": "1"}), non_missing=R({"memory": "1"}))
    assert containers == [C("1")]
    assert inits == [init({"cpu": "1"}, True), init({"cpu": "3"})]


# (description, containers, inits, overhead, pod-level, requests, nonzero (cpu millis, mem bytes))
EFFECTIVE_CASES = [
    ("no requests: upstream defaults", [{}], [], None, None, {}, (100, 200 * MI)),
    ("two empty containers", [{}, {}], [], None, None, {}, (200, 400 * MI)),
    ("explicit zero is kept", [R({"cpu": "0"})], [], None, None, {"cpu": 0}, (0, 200 * MI)),
    (
        "cpu only",
        [R({"cpu": "500m"})],
        [],
        None,
        None,
        {"cpu": 500},
        (500, 200 * MI),
    ),
    (
        "empty init container takes the defaults too",
        [R({"cpu": "50m", "memory": "1Mi"})],
        [init({})],
        None,
        None,
        {"cpu": 50, "memory": MI},
        (100, 200 * MI),
    ),
    (
        "empty sidecar adds the defaults",
        [R({"cpu": "1"})],
        [init({}, True)],
        None,
        None,
        {"cpu": 1000},
        (1100, 400 * MI),
    ),
    (
        "overhead on top of defaults",
        [{}],
        [],
        R({"cpu": "50m", "memory": "1Mi"}),
        None,
        {"cpu": 50, "memory": MI},
        (150, 201 * MI),
    ),
    (
        "pod-level cpu only: memory default still applies",
        [{}],
        [],
        None,
        R({"cpu": "1"}),
        {"cpu": 1000},
        (1000, 200 * MI),
    ),
    (
        "pod-level cpu and memory: no defaults",
        [{}],
        [],
        None,
        R({"cpu": "1", "memory": "1Gi"}),
        {"cpu": 1000, "memory": GI},
        (1000, GI),
    ),
    (
        "extended resources are whole units, no non-zero default",
        [R({"nvidia.com/gpu": "2"})],
        [],
        None,
        None,
        {"nvidia.com/gpu": 2},
        (100, 200 * MI),
    ),
    (
        "fractional bytes are summed before rounding up",
        [R({"memory": "0.5"}), R({"memory": "0.5"}), R({"memory": "0.25"})],
        [],
        None,
        None,
        {"memory": 2},
        (300, 2),
    ),
]


@pytest.mark.parametrize(
    ("containers", "inits", "overhead", "pod_level", "requests", "nonzero"),
    [c[1:] for c in EFFECTIVE_CASES],
    ids=[c[0] for c in EFFECTIVE_CASES],
)
def test_effective_requests(
    containers: list[pr.Millis],
    inits: list[tuple[pr.Millis, bool]],
    overhead: pr.Millis | None,
    pod_level: pr.Millis | None,
    requests: dict[str, int],
    nonzero: tuple[int, int],
) -> None:
    got, got_nonzero = pr.effective_requests(containers, inits, overhead, pod_level)
    assert got == requests
    assert got_nonzero == {"cpu": nonzero[0], "memory": nonzero[1]}


@pytest.mark.parametrize(
    ("requests", "limits", "expected"),
    [
        (None, None, {}),
        (R({"cpu": "1"}), None, {"cpu": "1"}),
        (None, R({"cpu": "9"}), {"cpu": "9"}),
        (R({"cpu": "1"}), R({"cpu": "2", "memory": "1Gi"}), {"cpu": "1", "memory": "1Gi"}),
    ],
)
def test_default_container_requests(
    requests: pr.Millis | None, limits: pr.Millis | None, expected: dict[str, str]
) -> None:
    assert pr.default_container_requests(requests, limits) == R(expected)


@pytest.mark.parametrize(
    ("requests", "limits", "containers", "expected"),
    [
        (None, None, [C("1")], None),
        (R({"cpu": "1"}), None, [C("2")], {"cpu": "1"}),
        # limits set, containers request cpu: pod-level request is the aggregate
        (None, R({"cpu": "2"}), [C("500m"), C("250m")], {"cpu": "750m"}),
        # nothing requested anywhere: pod-level request is the limit
        (None, R({"memory": "1Gi"}), [{}], {"memory": "1Gi"}),
        # explicit pod-level request wins over both
        (R({"cpu": "1"}), R({"cpu": "2"}), [C("500m")], {"cpu": "1"}),
        # only overcommittable resources come from containers; hugepages from limits
        (
            None,
            R({"hugepages-2Mi": "4Mi"}),
            [R({"ephemeral-storage": "1Gi", "hugepages-2Mi": "2Mi", "memory": "1Mi"})],
            {"memory": "1Mi", "hugepages-2Mi": "4Mi"},
        ),
    ],
)
def test_default_pod_level_requests(
    requests: pr.Millis | None,
    limits: pr.Millis | None,
    containers: list[pr.Millis],
    expected: dict[str, str] | None,
) -> None:
    got = pr.default_pod_level_requests(requests, limits, containers, [])
    assert got == (None if expected is None else R(expected))
