"""``explain`` and ``schedule`` read and check each input once (issue 27 item 4): the CLI
parses the snapshot, the Pods and the configuration, checks them, and hands what it parsed
to the command, which parses nothing again -- and answers as the Python API does on the
same dicts (``explain`` takes the Pod as written, its PriorityClass checked, not applied)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NoReturn

import pytest

import kubesched
from kubesched.cli import main
from kubesched.explainer import cycle
from kubesched.sim import whatif
from tests.explainer.test_explain import as_list, node, pod

HIGH = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": "high"},
    "value": 1000,
}


def _cluster() -> dict[str, Any]:
    """One node whose CPU a low-priority Pod holds, and a PriorityClass ``high``."""
    return as_list(node("a", cpu="1"), pod("low", cpu="1", node_name="a"), HIGH)


def _write(tmp_path: Path, name: str, value: object) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(value))
    return str(path)


def _again(*args: object, **kwargs: object) -> NoReturn:
    raise AssertionError("an input parsed a second time")


def test_explain_parses_each_input_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    incoming = pod("p", cpu="1", priorityClassName="high")
    expected = kubesched.explain(_cluster(), incoming, preemption=True)
    monkeypatch.setattr(cycle, "parse_pod", _again)
    monkeypatch.setattr(cycle, "load_config", _again)
    monkeypatch.setattr(cycle, "parse_objects", _again)
    cluster, p = _write(tmp_path, "c.json", _cluster()), _write(tmp_path, "p.json", incoming)
    args = ["explain", "--cluster", cluster, "--pod", p, "--preemption", "-o", "json"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out) == expected
    assert expected["preemption"]["victims"] == []  # priority 0: the class is not applied


def test_schedule_parses_each_input_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = as_list(pod("p", cpu="1", priorityClassName="high"), pod("q", cpu="100m"))
    expected = kubesched.schedule(_cluster(), pods)
    monkeypatch.setattr(whatif, "parse_objects", _again)
    monkeypatch.setattr(whatif, "load_config", _again)
    cluster, p = _write(tmp_path, "c.json", _cluster()), _write(tmp_path, "p.json", pods)
    assert main(["schedule", "--cluster", cluster, "--pods", p, "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == expected
    assert expected["pods"]["default/p"]["victims"] == ["default/low"]  # the class applied
