"""One oracle per Kubernetes release: ``oracle/diff.py --kubernetes-version`` picks
``oracle/bin/vV/kube-oracle``, tells kubesched the release once it takes one, and a saved
regression keeps the release it was compared against (none of this needs the oracle)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import compare
import diff
import pytest


def test_the_version_flag_takes_the_minor_release() -> None:
    assert diff.kubernetes_version("1.37") == "1.37"
    assert diff.kubernetes_version("v1.36") == "1.36"
    assert diff.kubernetes_version("v1.35.4") == "1.35"
    with pytest.raises(argparse.ArgumentTypeError, match=r"not one of 1\.34, 1\.35, 1\.36, 1\.37"):
        diff.kubernetes_version("1.33")


def test_each_release_has_its_own_binary_and_the_default_is_v1_34() -> None:
    assert compare.binary(None) == compare.BINARY == compare.ROOT / "bin" / "kube-oracle"
    assert compare.binary("1.37") == compare.ROOT / "bin" / "v1.37" / "kube-oracle"
    assert compare.DEFAULT_VERSION == "1.34" == compare.VERSIONS[0]
    for v in compare.VERSIONS[1:]:
        assert (compare.ROOT / "versions" / f"v{v}" / "go.mod").exists(), v


def test_kubesched_is_told_the_oracles_release() -> None:
    assert compare.kubesched_options(None) == {"kubernetes_version": compare.DEFAULT_VERSION}
    assert compare.kubesched_options("1.37") == {"kubernetes_version": "1.37"}


def test_a_saved_regression_keeps_its_release(tmp_path: Path) -> None:
    request = {"cluster": {"items": []}, "pod": {}, "config": None}
    path = diff.save(tmp_path, request, {"result": "Error"}, "origin", "1.37")
    body = json.loads(path.read_text())
    assert body["kubernetesVersion"] == "1.37"
    assert body["request"] == request
    other = diff.save(tmp_path, request, {"result": "Error"}, "origin", "1.34")
    assert other != path


def test_coverage_at_a_later_release_names_the_build_it_needs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "kube-oracle"
    assert (
        diff.main(["--coverage", "--kubernetes-version", "1.37", "--cover-oracle", str(missing)])
        == 2
    )
    err = capsys.readouterr().err
    assert str(missing) in err
    assert 'ORACLE_VERSIONS="1.37" bash oracle/build.sh --cover' in err
