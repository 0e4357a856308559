"""Single-field mutations of the built-in scenario: each is read, or refused with an
:class:`InputError` naming the field; never another exception (issue 31 item 6).

The default run mutates the places that once crashed (a scenario's or a template's
``metadata``, the GPU request's way into a ``gpuChoices`` template, a startup distribution)
with every wrong value; ``-m slow`` mutates every field of the scenario (1,204 inputs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.api.errors import InputError
from kubesched.sim import scenario as sc
from tests.mutations import Where, mutated, paths

BASE: dict[str, Any] = yaml.safe_load(sc.default_scenario_text())
VALUES: tuple[Any, ...] = (None, "x", 7, [1], {"a": 1}, -1, 10**20)
Path_ = Where


def read_or_refuse(doc: dict[str, Any], tmp_path: Path) -> None:
    file = tmp_path / "scenario.yaml"
    file.write_text(yaml.safe_dump(doc))
    try:
        sc.load_scenario(str(file))
    except InputError as err:
        assert err.problems and all(path or msg for path, msg in err.problems)


def _gpu_workload() -> int:
    return next(i for i, w in enumerate(BASE["spec"]["workloads"]) if w.get("gpuChoices"))


def _once_crashing() -> list[Path_]:
    gpu = ("spec", "workloads", _gpu_workload(), "template")
    starting = [p for p in paths(BASE) if "nodeStartupSeconds" in p]
    return [
        ("metadata",),
        ("spec", "workloads", 0, "template", "metadata"),
        *(p for p in paths(BASE) if p[: len(gpu)] == gpu and "metadata" not in p),
        *starting,
    ]


@pytest.mark.parametrize("value", (None, "x", [1], {"a": 1}), ids=repr)
@pytest.mark.parametrize("path", _once_crashing(), ids=lambda p: ".".join(map(str, p)))
def test_a_wrong_value_where_one_crashed(path: Path_, value: Any, tmp_path: Path) -> None:
    read_or_refuse(mutated(BASE, path, value), tmp_path)


def test_the_template_metadata_and_gpu_place_are_named(tmp_path: Path) -> None:
    gpu = _gpu_workload()
    doc = mutated(
        BASE, ("spec", "workloads", gpu, "template", "spec", "containers", 0, "resources"), []
    )
    file = tmp_path / "scenario.yaml"
    file.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError, match=rf"spec.workloads\[{gpu}\].template.spec.containers\[0\]"):
        sc.load_scenario(str(file))
    file.write_text(
        yaml.safe_dump(mutated(BASE, ("spec", "workloads", 0, "template", "metadata"), "x"))
    )
    with pytest.raises(InputError, match=r"spec.workloads\[0\].template.metadata"):
        sc.load_scenario(str(file))


@pytest.mark.slow
def test_every_field_mutated(tmp_path: Path) -> None:
    for path in paths(BASE):
        for value in VALUES:
            read_or_refuse(mutated(BASE, path, value), tmp_path)
