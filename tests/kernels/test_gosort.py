"""kubesched's port of Go's ``sort.Slice`` (``kernels/gosort.py``) against Go itself.

``tests/data/gosort/fixture.json`` holds the orders Go gave (``gen_fixture.go``, which also
checks that ``sort.Sort`` and ``slices.SortFunc`` agree with ``sort.Slice``); with Go on the
path, a fresh run with another seed is compared too (``-m slow``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kubesched.kernels import gosort

DATA = Path(__file__).resolve().parents[1] / "data" / "gosort"


def _go_order(values: list[int]) -> list[int]:
    items = [(v, i) for i, v in enumerate(values)]
    gosort.sort_slice(items, lambda x, y: x[0] < y[0])
    return [i for _, i in items]


def _cases(fixture: dict[str, Any]) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = fixture["cases"]
    return cases


def test_port_orders_as_go_on_every_recorded_input() -> None:
    cases = _cases(json.loads((DATA / "fixture.json").read_text()))
    assert len(cases) > 700
    wrong = [
        (c["pattern"], len(c["values"])) for c in cases if _go_order(c["values"]) != c["order"]
    ]
    assert wrong == []


def test_recorded_inputs_reach_every_path_of_the_port(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fixture is only a proof where it walks every branch: heapsort (adversarial
    inputs), a reversed decreasing run, equal partitions, pattern breaking, ninthers."""
    calls: dict[str, int] = {}
    for name in (
        "_heap_sort",
        "_reverse_range",
        "_partition_equal",
        "_break_patterns",
        "_partial_insertion_sort",
        "_partition",
    ):
        real = getattr(gosort, name)

        def counted(*args: Any, _real: Any = real, _name: str = name) -> Any:
            calls[_name] = calls.get(_name, 0) + 1
            return _real(*args)

        monkeypatch.setattr(gosort, name, counted)
    for c in _cases(json.loads((DATA / "fixture.json").read_text())):
        _go_order(c["values"])
    assert set(calls) == {
        "_heap_sort",
        "_reverse_range",
        "_partition_equal",
        "_break_patterns",
        "_partial_insertion_sort",
        "_partition",
    }


def test_go_is_stable_up_to_twelve_and_not_above() -> None:
    """The reason for the port: up to 12 elements Go's order is a stable sort's (insertion
    sort), above that ties often come out permuted (Go's own answers, the fixture)."""
    fixture = _cases(json.loads((DATA / "fixture.json").read_text()))

    def stable(values: list[int]) -> list[int]:
        return sorted(range(len(values)), key=lambda i: values[i])

    small = [c for c in fixture if len(c["values"]) <= gosort.MAX_INSERTION]
    large = [c for c in fixture if len(c["values"]) > gosort.MAX_INSERTION]
    assert all(c["order"] == stable(c["values"]) for c in small)
    unstable = [c for c in large if c["order"] != stable(c["values"])]
    assert len(unstable) > len(large) // 3
    assert all(_go_order(c["values"]) == c["order"] for c in unstable)


def test_sorted_by_key_is_sort_slice_with_a_key_less() -> None:
    fixture = _cases(json.loads((DATA / "fixture.json").read_text()))
    for c in fixture:
        values = c["values"]
        got = gosort.sorted_by_key(list(range(len(values))), key=lambda i: values[i])
        assert got == c["order"], (c["pattern"], len(values))


@pytest.mark.slow
def test_port_against_a_fresh_go_run(tmp_path: Path) -> None:
    go = shutil.which("go") or (
        "/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else None
    )
    if go is None:
        pytest.skip("Go is not on the path")
    extra = tmp_path / "extra.json"
    extra.write_text(
        subprocess.run(
            [sys.executable, str(DATA / "adversary.py")],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(Path(gosort.__file__).parents[2])},
        ).stdout
    )
    out = subprocess.run(
        [go, "run", str(DATA / "gen_fixture.go"), "-seed", "20261206", "-extra", str(extra)],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    ).stdout
    cases = _cases(json.loads(out))
    assert [c["order"] for c in cases] == [_go_order(c["values"]) for c in cases]
