"""``--kubernetes-version`` and ``--feature-gates`` on the commands that decide: parsing,
refusals (exit code 2, upstream's text), inference from a snapshot's kubeletVersion, and the
version in the JSON answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubesched.api.errors import InputError
from kubesched.cli import build_parser, main
from tests.explainer.test_explain import as_list, node

DECIDING = ("simulate", "schedule", "explain", "bench", "replay", "sweep", "run")


def _kubelet(obj: dict[str, Any], version: str) -> dict[str, Any]:
    obj.setdefault("status", {})["nodeInfo"] = {"kubeletVersion": version}
    return obj


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps(as_list(node("a", cpu="1"), node("b", cpu="4"))))
    old = tmp_path / "old.json"
    nodes = [_kubelet(node("a", cpu="4"), "v1.35.2"), _kubelet(node("b", cpu="4"), "v1.35.4")]
    old.write_text(json.dumps(as_list(*nodes)))
    pod = tmp_path / "pod.yaml"
    pod.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n"
        "  - name: c\n    image: nginx\n    resources: {requests: {cpu: '2'}}\n"
    )
    return {"cluster": cluster, "old": old, "pod": pod}


@pytest.mark.parametrize("command", DECIDING)
def test_every_deciding_command_has_the_flags(command: str) -> None:
    sub = build_parser()._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
    text = sub.format_help()
    assert "--kubernetes-version" in text and "--feature-gates" in text
    assert "default 1.37" in " ".join(text.split())


def _explain(files: dict[str, Path], *extra: str, cluster: str = "cluster") -> list[str]:
    return ["explain", "--cluster", str(files[cluster]), "--pod", str(files["pod"]), *extra]


def test_explain_json_says_the_version(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_explain(files, "-o", "json")) == 0
    assert json.loads(capsys.readouterr().out)["kubernetesVersion"] == "1.37"
    assert main(_explain(files, "-o", "json", "--kubernetes-version", "v1.34.4")) == 0
    assert json.loads(capsys.readouterr().out)["kubernetesVersion"] == "1.34"


def test_schedule_json_says_the_version(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["schedule", "--cluster", str(files["cluster"]), "--pods", str(files["pod"])]
    assert main([*args, "-o", "json", "--kubernetes-version", "1.36"]) == 0
    assert json.loads(capsys.readouterr().out)["kubernetesVersion"] == "1.36"


def test_the_snapshot_kubelets_tell_the_version_in_one_line(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_explain(files, "-o", "json", cluster="old")) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["kubernetesVersion"] == "1.35"
    (line,) = out.err.strip().splitlines()
    assert "Kubernetes 1.35" in line and "kubeletVersion" in line
    # the flag wins, silently
    assert main(_explain(files, "-o", "json", "--kubernetes-version", "1.37", cluster="old")) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["kubernetesVersion"] == "1.37" and out.err == ""


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--kubernetes-version", "1.33"], "unsupported Kubernetes version '1.33'"),
        (["--feature-gates", "Nope=true"], "--feature-gates: unrecognized feature gate: Nope"),
        (
            ["--feature-gates", "NodeDeclaredFeatures=false"],
            "cannot set feature gate NodeDeclaredFeatures to false, feature is locked to true",
        ),
        (
            ["--kubernetes-version", "1.34", "--feature-gates", "NodeDeclaredFeatures=true"],
            "unrecognized feature gate: NodeDeclaredFeatures",
        ),
        (["--feature-gates", "A"], "missing bool value for A"),
    ],
)
def test_bad_versions_and_gates_exit_2(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    assert main(_explain(files, *extra)) == 2
    assert message in capsys.readouterr().err


def test_an_alpha_gate_changes_the_default_profile(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """v1.35's NodeDeclaredFeatures is Alpha (off): set, its plugin joins the profile (as not
    yet modelled, it decides nothing) and the answer is the same."""
    base = _explain(files, "-o", "json", "--kubernetes-version", "1.35")
    assert main(base) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main([*base, "--feature-gates", "NodeDeclaredFeatures=true"]) == 0
    assert json.loads(capsys.readouterr().out) == plain


SCENARIO = """
apiVersion: kubesched.io/v1alpha1
kind: Scenario
metadata: {name: tiny}
spec:
  kubernetesVersion: "1.35"
  featureGates: {NodeDeclaredFeatures: true}
  durationSeconds: 2
  drainSeconds: 2
  nodePools:
  - {name: n, count: 2, allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
  workloads:
  - name: web
    count: 4
    ratePerSecond: 4
    template:
      spec:
        containers:
        - {name: app, image: web, resources: {requests: {cpu: 500m}}}
"""


def test_a_scenario_names_its_version_and_the_flag_overrides_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    out = tmp_path / "out.json"
    args = ["simulate", str(path), "--no-progress", "--json-out", str(out)]
    assert main(args) == 0
    assert json.loads(out.read_text())["kubernetesVersion"] == "1.35"
    assert "Kubernetes 1.35" in capsys.readouterr().out  # the report's first line
    assert main([*args, "--kubernetes-version", "1.36"]) == 0
    assert json.loads(out.read_text())["kubernetesVersion"] == "1.36"
    # the scenario's gates are checked at the version: 1.34 has no NodeDeclaredFeatures
    assert main([*args, "--kubernetes-version", "1.34"]) == 2
    assert "unrecognized feature gate: NodeDeclaredFeatures" in capsys.readouterr().err
    path.write_text(SCENARIO.replace('"1.35"', '"1.30"'))
    assert main(args) == 2
    assert "spec.kubernetesVersion: unsupported Kubernetes version '1.30'" in (
        capsys.readouterr().err
    )


def test_a_sweep_varies_the_version(tmp_path: Path) -> None:
    from kubesched.sweep.spec import load_sweep
    from kubesched.sweep.tasks import run_task
    from tests.sweep.support import write_sweep

    path = write_sweep(tmp_path, vary={"kubernetesVersion": ["1.34", "1.37"]}, baseline=None)
    spec = load_sweep(str(path))
    assert spec.var_class == "version"
    rows = [run_task(t) for t in spec.tasks()[:2]]
    assert all("skipped" not in r for r in rows)
    bad = write_sweep(tmp_path, vary={"kubernetesVersion": ["1.33"]}, baseline=None)
    with pytest.raises(InputError, match=r"spec\.vary\.kubernetesVersion"):
        load_sweep(str(bad))


def test_run_reads_the_api_servers_version() -> None:
    from kubesched.cli.run import _server_version
    from kubesched.live.client import ApiError

    class Client:
        def __init__(self, answer: object) -> None:
            self.answer = answer

        def request(self, method: str, path: str) -> object:
            assert (method, path) == ("GET", "/version")
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer

    assert _server_version(Client({"gitVersion": "v1.36.3", "major": "1"})) == "1.36"
    assert _server_version(Client({"gitVersion": "v1.29.0"})) is None
    assert _server_version(Client(ApiError(403, "forbidden"))) is None
