"""The scenario format's JSON Schema (shipped with the package) and its reference page agree
with the parser (issue 34): the same fields at every level, the same limits, and every
shipped scenario valid."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from kubesched.sim import scenario_fields as sf
from kubesched.sim.faultspec import COMMON, KINDS
from kubesched.sim.scenario import scenario_schema

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = scenario_schema()
SPEC = SCHEMA["properties"]["spec"]["properties"]


def _fields(node: dict[str, Any]) -> set[str]:
    return set(node["properties"])


@pytest.mark.parametrize(
    ("node", "fields"),
    [
        (SCHEMA["properties"]["spec"], sf.SPEC_FIELDS),
        (SPEC["timing"], sf.TIMING_FIELDS),
        (SPEC["nodePools"]["items"], sf.POOL_FIELDS),
        (SPEC["workloads"]["items"], sf.WORKLOAD_FIELDS),
        (SPEC["workloads"]["items"]["properties"]["podGroup"], sf.POD_GROUP_FIELDS),
        (SPEC["admission"], sf.ADMISSION_FIELDS),
        (SPEC["faults"]["items"], (*COMMON, *(f for k in KINDS.values() for f in k))),
    ],
    ids=["spec", "timing", "nodePools", "workloads", "podGroup", "admission", "faults"],
)
def test_the_schema_has_the_parsers_fields(node: dict[str, Any], fields: tuple[str, ...]) -> None:
    assert _fields(node) == set(fields)


def test_the_schema_has_the_parsers_limits() -> None:
    assert SPEC["nodePools"]["items"]["properties"]["count"]["maximum"] == sf.MAX_NODES
    assert SPEC["workloads"]["items"]["properties"]["count"]["maximum"] == sf.MAX_PODS
    assert SPEC["durationSeconds"]["maximum"] == sf.MAX_SECONDS
    assert SPEC["seed"]["maximum"] == sf.MAX_SEED
    assert SPEC["faults"]["items"]["properties"]["kind"]["enum"] == list(KINDS)


@pytest.mark.parametrize(
    "path",
    sorted((ROOT / "src/kubesched/sim/scenarios").glob("*.yaml"))
    + sorted((ROOT / "examples/sweeps").glob("cluster-*.yaml")),
    ids=lambda p: p.name,
)
def test_shipped_scenarios_are_valid(path: Path) -> None:
    jsonschema.Draft202012Validator(SCHEMA).validate(yaml.safe_load(path.read_text()))


def test_the_schema_refuses_what_the_parser_refuses() -> None:
    bad = {"spec": {"workloads": [{"name": "w", "count": 1, "ratePerSecond": 0, "template": {}}]}}
    errors = list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(bad))
    assert [list(e.absolute_path) for e in errors] == [["spec", "workloads", 0, "ratePerSecond"]]


def test_the_reference_page_names_every_field() -> None:
    page = (ROOT / "docs/scenario.md").read_text()

    def walk(node: dict[str, Any], path: str) -> list[str]:
        out = []
        for key, sub in (node.get("properties") or {}).items():
            p = f"{path}.{key}" if path else key
            out.append(p)
            if sub.get("type") == "object":
                out += walk(sub, p)
            items = sub.get("items")
            if sub.get("type") == "array" and isinstance(items, dict) and "properties" in items:
                out += walk(items, p + "[]")
        return out

    missing = [p for p in walk(SCHEMA, "") if f"`{p}`" not in page]
    assert missing == []
