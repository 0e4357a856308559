"""Single-field mutations of a scheduler_perf config: each loads and resolves, or is refused
with an :class:`InputError` naming the field; never another exception (issue 31 item 6).
(Against the public performance config, 2,382 such inputs: 12 crashed before, on an
``opcode`` that was not a string.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubesched.api.errors import InputError
from kubesched.bench import params as p
from kubesched.bench.config import load_test_cases
from tests.bench.support import basic_case, write_config
from tests.mutations import WRONG_VALUES, Where, mutated, paths

BASE = [basic_case(labels=["fast"])]


@pytest.mark.parametrize("value", WRONG_VALUES, ids=repr)
@pytest.mark.parametrize("where", list(paths(BASE)), ids=lambda w: ".".join(map(str, w)))
def test_a_mutated_field_loads_or_is_named(where: Where, value: Any, tmp_path: Path) -> None:
    config = write_config(tmp_path, mutated(BASE, where, value))
    try:
        for tc, w in p.select(load_test_cases(str(config))):
            p.resolve(tc, w)
    except InputError as err:
        assert all(path or msg for path, msg in err.problems)


def test_an_opcode_that_is_not_a_string_is_named(tmp_path: Path) -> None:
    case = basic_case()
    case["workloadTemplate"][0]["opcode"] = ["createNodes"]
    with pytest.raises(InputError, match=r"workloadTemplate\[0\]\.opcode: must be a string"):
        load_test_cases(str(write_config(tmp_path, [case])))
