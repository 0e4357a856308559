"""The command line: JSON output, exit codes, clear errors for bad input."""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path

import pytest

from kubesched.cli import entry, main
from tests.explainer.test_explain import as_list, node


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps(as_list(node("a", cpu="1"), node("b", cpu="4"))))
    p = tmp_path / "pod.yaml"
    p.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n"
        "  - name: c\n    image: nginx\n    resources: {requests: {cpu: '2'}}\n"
    )
    pods = tmp_path / "pods.yaml"
    pods.write_text(p.read_text() + "---\n" + p.read_text().replace("name: web", "name: web2"))
    return {"cluster": cluster, "pod": p, "pods": pods, "dir": tmp_path}


def test_explain_json_matches_the_python_api(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(
        ["explain", "--cluster", str(files["cluster"]), "--pod", str(files["pod"]), "-o", "json"]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["selectedNode"] == "b"
    assert out["nodes"]["a"]["reasons"] == ["Insufficient cpu"]


def test_explain_freezes_the_parsed_snapshot_before_it_evaluates(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Reading and checking the snapshot is one block for the collector: what it leaves
    (a 200,000-Pod snapshot's parse leaves ~1M objects, under the bulk blocks' own
    threshold) is frozen before the answer is worked out, not walked by the next
    collections."""
    import kubesched.explainer as explainer
    from kubesched.cli import explain as command

    frozen_at_call: list[int] = []
    real = explainer.explain

    def spy(*args: object, **kwargs: object) -> dict[str, object]:
        frozen_at_call.append(gc.get_freeze_count())
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(explainer, "explain", spy)
    monkeypatch.setattr(command, "FREEZE_ANSWER_AFTER", 0, raising=False)
    gc.unfreeze()
    try:
        assert (
            main(["explain", "--cluster", str(files["cluster"]), "--pod", str(files["pod"])]) == 0
        )
    finally:
        gc.unfreeze()
    assert frozen_at_call and frozen_at_call[0] > 0
    assert "Result:   Scheduled" in capsys.readouterr().out


def test_explain_text_is_a_table(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explain", "--cluster", str(files["cluster"]), "--pod", str(files["pod"])]) == 0
    out = capsys.readouterr().out
    assert "Result:   Scheduled" in out
    assert "rejected by NodeResourcesFit" in out


def test_explain_of_a_gated_pod(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    gated = files["dir"] / "gated.yaml"
    gated.write_text(files["pod"].read_text() + "  schedulingGates: [{name: example.com/hold}]\n")
    args = ["explain", "--cluster", str(files["cluster"]), "--pod", str(gated)]
    assert main([*args, "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["result"], out["selectedNode"]) == ("Gated", None)
    assert out["message"] == "waiting for scheduling gates: [example.com/hold]"
    assert out["nodes"]["b"]["feasible"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "Result:   Gated" in text
    assert "Node:     -" in text
    assert "Message:  waiting for scheduling gates: [example.com/hold]" in text
    assert "if the gates were removed" in text
    assert "rejected by NodeResourcesFit" in text


def test_schedule_json(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(
        ["schedule", "--cluster", str(files["cluster"]), "--pods", str(files["pods"]), "-o", "json"]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pods"]["default/web"]["node"] == "b"
    assert out["pods"]["default/web2"]["node"] == "b"
    assert out["summary"]["scheduled"] == 2


def test_malformed_quantity_exits_2_naming_file_and_field(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    bad = files["dir"] / "bad.yaml"
    bad.write_text(files["pod"].read_text().replace("'2'", "'two'"))
    rc = main(["explain", "--cluster", str(files["cluster"]), "--pod", str(bad)])
    assert rc == 2
    err = capsys.readouterr().err
    assert str(bad) in err
    assert "spec.containers[0].resources.requests.cpu" in err
    assert "Traceback" not in err


def test_bad_config_exits_2_with_every_problem(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = files["dir"] / "config.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "percentageOfNodesToScore: 120\nprofiles:\n- schedulerName: x\n  plugins:\n"
        "    score:\n      enabled: [{name: NoSuchPlugin}]\n"
    )
    rc = main(
        [
            "explain",
            "--cluster",
            str(files["cluster"]),
            "--pod",
            str(files["pod"]),
            "--config",
            str(cfg),
        ]
    )
    assert rc == 2
    err = capsys.readouterr().err
    assert "percentageOfNodesToScore" in err
    assert "profiles[0].plugins.score.enabled[0]" in err


def test_missing_file_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--cluster", "/nonexistent.json", "--pod", "/nonexistent.yaml"]) == 2
    assert "/nonexistent.json" in capsys.readouterr().err


@pytest.mark.parametrize(("cluster", "code"), [("cluster", 0), ("/nonexistent.json", 2)])
def test_the_console_script_exits_with_mains_code(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, cluster: str, code: int
) -> None:
    path = str(files["cluster"]) if cluster == "cluster" else cluster
    monkeypatch.setattr(
        sys, "argv", ["kubesched", "explain", "--cluster", path, "--pod", str(files["pod"])]
    )
    gc.unfreeze()
    try:
        with pytest.raises(SystemExit) as exited:
            entry()
        assert exited.value.code == code
        assert gc.get_freeze_count() > 0  # the objects left are out of the last collection
    finally:
        gc.unfreeze()


def test_debug_shows_the_traceback(files: dict[str, Path]) -> None:
    with pytest.raises(Exception, match="nonexistent"):
        main(["--debug", "explain", "--cluster", "/nonexistent.json", "--pod", str(files["pod"])])
