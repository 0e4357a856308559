"""Sweep files: grids, classes of variables, baselines, tasks; errors by field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubesched.api.errors import InputError
from kubesched.sweep.spec import load_sweep
from tests.sweep.support import PCT, write_sweep

FIT = "profiles[0].pluginConfig[NodeResourcesFit].args.scoringStrategy.type"


def test_grid_times_seeds_gives_the_tasks(tmp_path: Path) -> None:
    spec = load_sweep(str(write_sweep(tmp_path)))
    assert spec.var_class == "search"
    assert [v.settings for v in spec.variants] == [{"percentageOfNodesToScore": p} for p in PCT]
    tasks = spec.tasks()
    assert len(tasks) == 15
    assert [(t.variant, t.seed) for t in tasks[:4]] == [
        ("percentageOfNodesToScore=0", 1),
        ("percentageOfNodesToScore=0", 2),
        ("percentageOfNodesToScore=0", 3),
        ("percentageOfNodesToScore=10", 1),
    ]
    assert tasks[0].base == {"kind": "scenario", "scenario": str(tmp_path / "scenario.yaml")}
    assert spec.baseline == "percentageOfNodesToScore=0"


def test_two_variables_of_one_class_make_a_product(tmp_path: Path) -> None:
    vary = {"client.qps": [20, 50], "client.burst": [10, 100]}
    spec = load_sweep(str(write_sweep(tmp_path, vary=vary, baseline={"client.qps": 50})))
    assert len(spec.variants) == 4
    assert spec.var_class == "client"
    assert spec.baseline == "burst=10,qps=50"  # keys in file order (safe_dump sorts them)


@pytest.mark.parametrize(
    ("over", "field", "words"),
    [
        ({"vary": {"percentageOfNodesToScore": [0], "parallelism": [4]}}, "spec.vary",
         "several classes"),
        ({"vary": {"percentageOfNodesToScore": []}}, "spec.vary.percentageOfNodesToScore",
         "non-empty"),
        ({"vary": {"policy": ["fgd"]}}, "spec.vary.policy", "cannot vary policy"),
        ({"vary": {"a..b": [1]}}, "spec.vary.a..b", "malformed"),
        ({"seeds": []}, "spec.seeds", "integers"),
        ({"baseline": {"percentageOfNodesToScore": 7}}, "spec.baseline", "matches no variant"),
        ({"base": {"scenario": "missing.yaml"}}, "spec.base.scenario", "no such file"),
        ({"base": {"scenario": "scenario.yaml", "replay": {}}}, "spec.base", "exactly one"),
        ({"vary": {}, "variants": []}, "spec.vary", "needs vary or variants"),
        ({"variants": [{"name": "percentageOfNodesToScore=0", "set": {}}]}, "spec.variants",
         "must differ"),
    ],
)  # fmt: skip
def test_bad_sweeps_name_the_field(
    tmp_path: Path, over: dict[str, Any], field: str, words: str
) -> None:
    with pytest.raises(InputError) as err:
        load_sweep(str(write_sweep(tmp_path, **over)))
    assert any(p == field and words in m for p, m in err.value.problems), err.value.problems
    assert err.value.file == str(tmp_path / "sweep.yaml")


def test_mixed_classes_when_allowed(tmp_path: Path) -> None:
    vary = {"percentageOfNodesToScore": [0, 50], "api.latencySeconds": [0.01]}
    spec = load_sweep(str(write_sweep(tmp_path, vary=vary, allowMixedClasses=True)))
    assert spec.var_class == "mixed"


def test_named_variants_join_the_grid(tmp_path: Path) -> None:
    variants = [{"name": "packed", "set": {FIT: "MostAllocated"}}]
    spec = load_sweep(str(write_sweep(tmp_path, vary={}, variants=variants)))
    assert [v.name for v in spec.variants] == ["packed"]
    assert spec.var_class == "scoring"
