"""``kubesched explain`` traps a new user hits (issue 34): a Pod for a profile the
configuration lacks, and the preemption part of the message ``kubectl describe`` shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubesched.cli import main
from tests.explainer.test_explain import as_list, node, pod


def _files(tmp_path: Path, p: dict[str, object]) -> list[str]:
    (tmp_path / "c.json").write_text(json.dumps(as_list(node("a", cpu="2"))))
    (tmp_path / "p.json").write_text(json.dumps(p))
    return ["explain", "--cluster", str(tmp_path / "c.json"), "--pod", str(tmp_path / "p.json")]


def test_a_pod_for_no_profile_is_a_usage_error_naming_the_profiles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _files(tmp_path, pod("p", schedulerName="my-scheduler"))
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "spec.schedulerName: 'my-scheduler' names no profile" in err
    assert "default-scheduler" in err and "--config FILE" in err
    assert "Traceback" not in err
    config = tmp_path / "ksc.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: my-scheduler\n"
    )
    assert main([*args, "--config", str(config)]) == 0


def test_preemption_flag_ends_the_message_as_kubectl_describe_shows_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _files(tmp_path, pod("big", cpu="3"))
    assert main(args) == 0
    assert "preemption:" not in capsys.readouterr().out
    assert main([*args, "--preemption"]) == 0
    out = capsys.readouterr().out
    assert (
        "Message:  0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling." in out
    )
    assert main([*args, "--preemption", "-o", "json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["preemption"]["message"].startswith("preemption:")


@pytest.mark.parametrize("where", ["before", "after"])
def test_the_input_size_cap_is_a_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    """Issue 34: the 256 MiB cap refused the dumps of the clusters kubesched is for, with no
    override; ``--max-input-size`` sets it, before or after the command."""
    args = _files(tmp_path, pod("p"))
    small = ["--max-input-size", "100"]
    assert main([*small, *args] if where == "before" else [*args, *small]) == 2
    err = capsys.readouterr().err
    assert "the limit is 100 bytes (raise it with --max-input-size)" in err
    assert main([*args, "--max-input-size", "1Gi"]) == 0
    assert main(args) == 0  # each run starts from the default again
