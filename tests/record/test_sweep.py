"""A sweep varying the configuration over a recording (base ``recording``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubesched.api.errors import InputError
from kubesched.record import format as fmt
from kubesched.sweep.run import run_sweep
from kubesched.sweep.spec import load_sweep
from tests.record.builders import bound, node, pod, write

FIT = "profiles[0].pluginConfig[NodeResourcesFit].args.scoringStrategy.type"


def sweep_file(tmp: Path, base: object, vary: dict[str, list[object]]) -> Path:
    doc = {
        "apiVersion": "kubesched.io/v1alpha1",
        "kind": "Sweep",
        "spec": {"base": {"recording": base}, "seeds": [0], "vary": vary},
    }
    path = tmp / "sweep.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_a_sweep_varies_the_scoring_strategy_over_a_recording(tmp_path: Path) -> None:
    """The real scheduler packed both Pods on n1: MostAllocated does too, LeastAllocated
    spreads them (one placement differs)."""
    write(
        tmp_path / "rec",
        [node("n1", cpu="2", memory="4Gi"), node("n2", cpu="4", memory="8Gi")],
        [
            {"t": 1.0, "type": fmt.POD_CREATED, "object": pod("a", memory="1Gi")},
            bound(1.5, "a", "n1"),
            {"t": 2.0, "type": fmt.POD_CREATED, "object": pod("b", memory="1Gi")},
            bound(2.5, "b", "n1"),
        ],
    )
    vary: dict[str, list[object]] = {FIT: ["LeastAllocated", "MostAllocated"]}
    result = run_sweep(load_sweep(str(sweep_file(tmp_path, "rec", vary))), workers=0)
    rows = {r["variant"]: r for r in result["rows"]}
    assert not any(r.get("skipped") for r in rows.values()), rows
    least, most = rows["type=LeastAllocated"], rows["type=MostAllocated"]
    assert least["podsScheduled"] == most["podsScheduled"] == 2
    assert least["placementsCompared"] == most["placementsCompared"] == 2
    assert most["placementsDifferent"] == 0 and least["placementsDifferent"] >= 1
    assert least["recordedTimeToBindP50"] == 0.5


def test_a_recording_base_is_checked(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"spec.base.recording.directory: no such file"):
        load_sweep(str(sweep_file(tmp_path, "nowhere", {"percentageOfNodesToScore": [0]})))
    write(tmp_path / "rec", [node("n1")], [])
    with pytest.raises(InputError, match="a recording base cannot vary"):
        load_sweep(str(sweep_file(tmp_path, {"directory": "rec"}, {"shards": [1, 2]})))
