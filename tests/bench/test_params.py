"""``$param`` resolution per workload, upstream's unused/undefined rules, label filtering."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubesched.api.errors import InputError
from kubesched.bench import params as p
from kubesched.bench.config import load_test_cases
from tests.bench.support import basic_case, write_config


def _steps(tmp: Path, ops: list[dict[str, Any]], params: dict[str, Any]) -> list[p.Step]:
    case = {
        "name": "C",
        "defaultPodTemplatePath": "pod.yaml",
        "workloadTemplate": [*ops, {"opcode": "stopCollectingMetrics"}],
        "workloads": [{"name": "w", "params": params}],
    }
    (tc,) = load_test_cases(str(write_config(tmp, [case])))
    return p.resolve(tc, tc.workloads[0])[:-1]


@pytest.mark.parametrize(
    ("op", "params", "want"),
    [
        ({"opcode": "createNodes", "countParam": "$n"}, {"n": 5}, {"count": 5}),
        ({"opcode": "createNodes", "countParam": "$n"}, {"n": 5.9}, {"count": 5}),
        ({"opcode": "createNodes", "count": 4}, {}, {"count": 4, "template": None}),
        ({"opcode": "createPods", "countParam": "$n", "countMultiplierParam": "$m"},
         {"n": 3, "m": 4}, {"count": 12, "namespace": "namespace-0"}),
        ({"opcode": "createPods", "count": 1, "namespace": "ns"}, {}, {"namespace": "ns"}),
        ({"opcode": "createPods", "count": 1, "signatureBatchSizeParam": "$b"}, {"b": 7},
         {"signature_batch_size": 7}),
        ({"opcode": "createPods", "count": 1}, {}, {"signature_batch_size": 1}),
        ({"opcode": "createPods", "count": 1, "steadyStateParam": "$s", "durationParam": "$d"},
         {"s": True, "d": "2s"}, {"steady_state": True, "duration": 2.0}),
        ({"opcode": "createPods", "count": 1, "templateParams": {"zone": "$z", "k": 1}},
         {"z": "moon-1"}, {"template_params": {"zone": "moon-1", "k": 1}}),
        ({"opcode": "createPods", "count": 1,
          "templateParams": {"a": "$a|2", "b": "$b|", "c": "$c|x", "d": "$d|[1, 2]"}},
         {"c": "y"}, {"template_params": {"a": 2, "b": None, "c": "y", "d": [1, 2]}}),
        ({"opcode": "sleep", "durationParam": "$d"}, {"d": "250ms"}, {"duration": 0.25}),
        ({"opcode": "createNamespaces", "prefix": "x", "countParam": "$n"}, {"n": 2},
         {"prefix": "x", "count": 2}),
        ({"opcode": "churn", "mode": "create", "templatePaths": ["pod.yaml"]}, {},
         {"interval": 0.5, "namespace": "namespace-0", "number": 0}),
        ({"opcode": "barrier"}, {}, {"stage": "Scheduled", "namespaces": ()}),
        ({"opcode": "createAny", "templatePath": "pod.yaml", "countParam": "$n"}, {"n": 3},
         {"count": 3}),
    ],
)  # fmt: skip
def test_params_resolve_into_steps(
    tmp_path: Path, op: dict[str, Any], params: dict[str, Any], want: dict[str, Any]
) -> None:
    (step,) = _steps(tmp_path, [op], params)
    for key, value in want.items():
        assert getattr(step, key) == value, key


def test_default_pod_template_applies_when_the_op_names_none(tmp_path: Path) -> None:
    (step,) = _steps(tmp_path, [{"opcode": "createPods", "count": 1}], {})
    assert isinstance(step, p.CreatePods) and step.template == str(tmp_path / "pod.yaml")


@pytest.mark.parametrize(
    ("op", "params", "field", "message"),
    [
        ({"opcode": "createNodes", "countParam": "$n"}, {}, "countParam",
         "parameter n is undefined"),
        ({"opcode": "createNodes", "countParam": "$n"}, {"n": "ten"}, "countParam",
         "parameter n has the wrong type str"),
        ({"opcode": "createNodes", "countParam": "$n"}, {"n": True}, "countParam",
         "wrong type bool"),
        ({"opcode": "createPods", "count": 1, "steadyStateParam": "$s"}, {"s": 1},
         "steadyStateParam", "wrong type int"),
        ({"opcode": "sleep", "durationParam": "$d"}, {"d": "soon"}, "durationParam",
         "parsing duration parameter $d"),
        ({"opcode": "createPods", "count": 1, "templateParams": {"z": "$zone"}}, {},
         "templateParams", 'parameter "zone" not found'),
        ({"opcode": "createNodes", "countParam": "$n"}, {"n": -2}, "count", "must be >= 0"),
        ({"opcode": "createPods", "count": 1, "steadyState": True}, {}, "duration",
         "steady state, it must be > 0"),
    ],
)  # fmt: skip
def test_bad_params_fail_naming_workload_op_and_field(
    tmp_path: Path, op: dict[str, Any], params: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(InputError) as err:
        _steps(tmp_path, [op], params)
    assert any(
        path == f"C/w: workloadTemplate[0].{field}" and message in m
        for path, m in err.value.problems
    ), err.value.problems


def test_unused_params_fail_as_upstream(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        _steps(tmp_path, [{"opcode": "createNodes", "countParam": "$n"}], {"n": 1, "typo": 2})
    assert err.value.problems == [
        ("C/w.params", "the parameters ['typo'] are defined on workload w, but unused")
    ]


@pytest.mark.parametrize(
    ("selectors", "labels", "want"),
    [
        ([], [], True),
        (["performance"], ["performance", "short"], True),
        (["performance"], ["short"], False),
        (["+short"], ["short"], True),
        (["-fast"], ["fast"], False),
        (["performance", "-fast"], ["performance"], True),
        (["performance", "-fast"], ["performance", "fast"], False),
        ([""], ["x"], True),
    ],
)
def test_label_filter_is_upstreams(selectors: list[str], labels: list[str], want: bool) -> None:
    assert p.enabled(selectors, labels) is want


def test_select_by_case_workload_and_labels(tmp_path: Path) -> None:
    a = basic_case(name="small", labels=["fast"])
    a["workloads"].append(
        {"name": "big", "labels": ["performance"], "params": {"nodes": 1, "pods": 1}}
    )
    b = {**basic_case(name="other"), "name": "Other", "labels": ["fast"]}
    cases = load_test_cases(str(write_config(tmp_path, [a, b])))

    def names(**kw: Any) -> list[str]:
        return [f"{tc.name}/{w.name}" for tc, w in p.select(cases, **kw)]

    assert names() == ["Basic/small", "Basic/big", "Other/other"]
    assert names(labels=("fast",)) == ["Basic/small", "Other/other"]  # case labels count
    assert names(labels=("fast,-performance",)) == ["Basic/small", "Other/other"]
    assert names(case="Basic", labels=("-fast",)) == ["Basic/big"]
    assert names(workload="Other/other") == ["Other/other"]
    assert names(workload="big") == ["Basic/big"]
    assert p.split_filter(["a,-b", " c "]) == ["a", "-b", "c"]
