"""Loading scheduler_perf configs: strict decoding, errors naming case, op index and field."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from kubesched.api.errors import InputError
from kubesched.bench.config import load_test_cases, parse_test_cases
from kubesched.bench.schema import parse_duration
from tests.bench.support import BENCHMARKS, basic_case, write_config


def _base() -> dict[str, Any]:
    return basic_case()


def _set(path: list[Any], value: Any) -> Any:
    def edit(case: dict[str, Any]) -> None:
        obj = case
        for key in path[:-1]:
            obj = obj[key]
        if isinstance(obj, list) and path[-1] == len(obj):
            obj.append(value)
        else:
            obj[path[-1]] = value

    return edit


def _del(path: list[Any]) -> Any:
    def edit(case: dict[str, Any]) -> None:
        obj = case
        for key in path[:-1]:
            obj = obj[key]
        del obj[path[-1]]

    return edit


OP1 = ["workloadTemplate", 1]
CHURN = {"opcode": "churn", "templatePaths": ["pod.yaml"]}
MALFORMED = [
    (_set([*OP1, "countParam"], "pods"), "Basic.workloadTemplate[1].countParam", 'start with "$"'),
    (_set([*OP1, "count"], "ten"), "Basic.workloadTemplate[1].count", "must be an integer"),
    (_set([*OP1, "colectMetrics"], True), "Basic.workloadTemplate[1].colectMetrics",
     'createPods: unknown field "colectMetrics"'),
    (_set([*OP1, "skipWaitToCompletion"], True), "Basic.workloadTemplate[1]",
     "collectMetrics and skipWaitToCompletion cannot be true at once"),
    (_set([*OP1, "podTemplatePath"], "missing.yaml"), "Basic.workloadTemplate[1].podTemplatePath",
     "no such file"),
    (_set([*OP1, "persistentVolumeClaimTemplatePath"], "pod.yaml"),
     "Basic.workloadTemplate[1].persistentVolumeTemplatePath", "must be set with a claim"),
    (_set([*OP1, "opcode"], "createPodz"), "Basic.workloadTemplate[1].opcode", "unknown opcode"),
    (_set([*OP1, "opcode"], "startCollectingProfile"), "Basic.workloadTemplate[1].opcode",
     "not supported"),
    (_set(["workloadTemplate", 2], {"opcode": "updateAny", "templatePath": "pod.yaml",
                                    "updatePerSecond": -1}),
     "Basic.workloadTemplate[2].updatePerSecond", "should be non-negative"),
    (_set(["workloadTemplate", 0], {"opcode": "createNodes", "count": -1}),
     "Basic.workloadTemplate[0].count", "must be >= 0"),
    (_set(["workloadTemplate", 2], {**CHURN, "mode": "delete"}),
     "Basic.workloadTemplate[2].mode", 'must be "create" or "recreate"'),
    (_set(["workloadTemplate", 2], {**CHURN, "mode": "recreate"}),
     "Basic.workloadTemplate[2].number", "cannot be 0 when mode is recreate"),
    (_set(["workloadTemplate", 2], {"opcode": "churn", "mode": "create"}),
     "Basic.workloadTemplate[2].templatePaths", "at least one template"),
    (_set(["workloadTemplate", 2], {"opcode": "barrier", "stageRequirement": "Bound"}),
     "Basic.workloadTemplate[2].stageRequirement", "invalid stage"),
    (_set(["workloadTemplate", 2], {"opcode": "sleep", "duration": "1 minute"}),
     "Basic.workloadTemplate[2].duration", "invalid duration"),
    (_set(["workloadTemplate", 2], {"opcode": "startCollectingMetrics"}),
     "Basic.workloadTemplate[2].namespaces", "cannot be empty"),
    (_set(["workloadTemplate", 2], {"opcode": "deletePods", "deletePodsPerSecond": -5}),
     "Basic.workloadTemplate[2].deletePodsPerSecond", "must be >= 0"),
    (_set(["workloadTemplate", 2], {"opcode": "createAny"}),
     "Basic.workloadTemplate[2].templatePath", "must be set"),
    (_set([*OP1, "collectMetrics"], False), "Basic.workloadTemplate",
     "no op in the workload template collects metrics"),
    (_set(["workloadTemplate"], []), "Basic.workloadTemplate", "no ops defined"),
    (_set(["workloads"], []), "Basic.workloads", "no workloads defined"),
    (_set(["workloads", 0, "threshold"], -3), "Basic.workloads[0].threshold", "should be >= 0"),
    (_set(["workloads", 0, "threshold"], "fast"), "Basic.workloads[0].threshold",
     "must be a number"),
    (_set(["workloads", 0, "featureGates"], {"X": "yes"}), "Basic.workloads[0].featureGates.X",
     "true or false"),
    (_set(["workloads", 1], {"name": "w", "params": {}}), "Basic.workloads[1].name", "not unique"),
    (_del(["workloads", 0, "name"]), "Basic.workloads[0].name", "required"),
    (_set(["colour"], "blue"), "Basic.colour", 'test case: unknown field "colour"'),
]  # fmt: skip


@pytest.mark.parametrize(("edit", "path", "message"), MALFORMED)
def test_malformed_config_names_case_op_and_field(
    tmp_path: Path, edit: Any, path: str, message: str
) -> None:
    case = _base()
    edit(case)
    config = write_config(tmp_path, [case])
    with pytest.raises(InputError) as err:
        load_test_cases(str(config))
    assert err.value.file == str(config)
    assert any(p == path and message in m for p, m in err.value.problems), err.value.problems


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    case = _base()
    case["workloadTemplate"][0]["countParam"] = "nodes"
    case["workloadTemplate"][1]["count"] = "x"
    with pytest.raises(InputError) as err:
        load_test_cases(str(write_config(tmp_path, [case])))
    assert len(err.value.problems) == 2


def test_unnamed_case_is_named_by_its_index(tmp_path: Path) -> None:
    good, bad = _base(), _base()
    del bad["name"]
    bad["workloadTemplate"][0]["countParam"] = "nodes"
    with pytest.raises(InputError) as err:
        load_test_cases(str(write_config(tmp_path, [good, bad])))
    paths = [p for p, _ in err.value.problems]
    assert "[1].name" in paths and "[1].workloadTemplate[0].countParam" in paths


def test_duplicate_case_names_and_repeated_keys_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="name is not unique"):
        parse_test_cases([_base(), copy.deepcopy(_base())], str(write_config(tmp_path, []).parent))
    config = tmp_path / "dup.yaml"
    config.write_text("- name: A\n  name: B\n")
    with pytest.raises(InputError, match="already set"):
        load_test_cases(str(config))


def test_field_names_match_case_insensitively_as_go_json(tmp_path: Path) -> None:
    case = _base()
    case["workloadTemplate"][1] = {"Opcode": "createPods", "CountParam": "$pods",
                                   "COLLECTMETRICS": True}  # fmt: skip
    case["workloadTemplate"][1]["opcode"] = case["workloadTemplate"][1].pop("Opcode")
    (tc,) = load_test_cases(str(write_config(tmp_path, [case])))
    assert tc.ops[1].fields == {"countParam": "$pods", "collectMetrics": True}


def test_paths_resolve_against_the_config_folder(tmp_path: Path) -> None:
    (tc,) = load_test_cases(str(write_config(tmp_path, [_base()])))
    assert tc.default_pod_template_path == str(tmp_path / "pod.yaml")
    assert tc.ops[0].fields["nodeTemplatePath"] == str(tmp_path / "node.yaml")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1s", 1.0), ("300ms", 0.3), ("1m30s", 90.0), ("1h", 3600.0), ("1.5s", 1.5), ("0", 0.0),
     ("-2s", -2.0), ("10us", 1e-5)],
)  # fmt: skip
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "1", "s", "1x", "1s2"])
def test_bad_go_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize("name", ["performance-config.yaml", "format-coverage-config.yaml"])
def test_public_configs_load(name: str) -> None:
    cases = load_test_cases(str(BENCHMARKS / name))
    assert all(tc.workloads and tc.ops for tc in cases)
    names = {tc.name for tc in cases}
    if name == "performance-config.yaml":
        assert len(cases) == 7 and "SchedulingWhileGated" in names
    else:
        assert names == {"FormatCoverage"}
