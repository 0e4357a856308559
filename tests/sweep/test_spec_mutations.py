"""Single-field mutations of the example sweeps: each loads, or is refused with an
:class:`InputError` naming the field; never another exception (issue 31 item 6).
Over every field of every example sweep: 2,870 inputs, 23 of which crashed before (a
``metadata`` or ``spec.variants`` of the wrong type)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.api.errors import InputError
from kubesched.sweep.spec import build_sweep
from tests.mutations import WRONG_VALUES, mutated, paths

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sweeps"


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_field_of_an_example_sweep_mutated(example: Path) -> None:
    base = yaml.safe_load(example.read_text())
    for where in paths(base):
        for value in WRONG_VALUES:
            try:
                build_sweep(mutated(base, where, value), str(EXAMPLES))
            except InputError as err:
                assert all(path or msg for path, msg in err.problems), (where, value)


@pytest.mark.parametrize(
    ("field", "value", "path"),
    [("metadata", "x", "metadata"), ("variants", 7, "spec.variants")],
)
def test_a_wrong_type_is_named(field: str, value: Any, path: str) -> None:
    doc = yaml.safe_load((EXAMPLES / "upstream-3-client-qps.yaml").read_text())
    (doc if field == "metadata" else doc["spec"])[field] = value
    with pytest.raises(InputError, match=rf"^{path}: "):
        build_sweep(doc, str(EXAMPLES))
