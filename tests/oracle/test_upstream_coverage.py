"""``oracle/diff.py --coverage`` (``oracle/upstream_coverage.py``): the coverage table of an
instrumented kube-oracle (``bash oracle/build.sh --cover``) and its summary line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest
import upstream_coverage as cov
from cases import case

SUMMARY = re.compile(
    r"^coverage: \d+\.\d % of default-profile plugin statements, lowest \d+\.\d % \(\w+\)$"
)


def test_blocks_group_by_plugin_and_hints_count_only_in_all() -> None:
    fit = cov.PLUGINS + "noderesources/fit.go"
    blocks = [
        cov.Block(fit, 10, 12, 3, True, "*Fit.Filter"),
        cov.Block(fit, 13, 14, 1, False, "*Fit.Filter"),
        cov.Block(fit, 15, 16, 1, False, "*Fit.Filter"),
        cov.Block(fit, 40, 45, 4, False, "*Fit.isSchedulableAfterNodeChange"),
        cov.Block(cov.PLUGINS + "noderesources/test_util.go", 1, 2, 9, False, "makeNode"),
        cov.Block(cov.PLUGINS + "noderesources/balanced_allocation.go", 1, 2, 2, True, "x"),
    ]
    row = {r.name: r for r in cov.rows(blocks, cov.DEFAULT_PLUGINS)}["NodeResourcesFit"]
    assert row.share() == (3, 9)  # test_util.go and BalancedAllocation's file left out
    assert row.share(hints=False) == (3, 5)
    assert row.uncovered() == [
        "framework/plugins/noderesources/fit.go:13-16 (*Fit.Filter)",
        "framework/plugins/noderesources/fit.go:40-45 (*Fit.isSchedulableAfterNodeChange)",
    ]
    assert cov.is_hint("x/noderesources", "haveAnyRequestedResourcesIncreased")
    assert not cov.is_hint("x/tainttoleration", "*TaintToleration.Filter")


def test_the_report_of_an_instrumented_run_ends_with_the_summary_line() -> None:
    if not os.access(cov.COVER_BINARY, os.X_OK):
        msg = f"{cov.COVER_BINARY} is missing: run {cov.COVER_HINT}"
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    with tempfile.TemporaryDirectory() as tmp:
        stdin = "".join(json.dumps(case(5, i)) + "\n" for i in range(40))
        subprocess.run(
            [str(cov.COVER_BINARY), "explain", "--stream"],
            input=stdin,
            text=True,
            capture_output=True,
            check=True,
            env=cov.cover_env(Path(tmp)),
        )
        rep = cov.report([Path(tmp)])
        uncovered = cov.markdown([Path(tmp)])
    assert SUMMARY.match(rep.lines[-1]), rep.lines[-1]
    assert set(rep.shares) == set(cov.DEFAULT_PLUGINS) | set(cov.STORAGE)
    assert rep.shares["TaintToleration"][1] > 50  # Filter and Score ran
    assert rep.shares["DefaultBinder"][0] < 100 and "DefaultBinder" in rep.below  # no schedule
    assert "- **NodeResourcesFit**" in uncovered and "queueing hint" in uncovered


def test_dynamicresources_blocks_take_the_reason_of_the_span_they_start_in() -> None:
    """A block nested in a classified span (PreBind's wait that fails, the allocated-devices
    tracker's consumable-capacity loops) takes the span's reason; the binding cycle's
    failure side is ``fault``; a block outside every span falls through to the function and
    guard rules."""
    dra = cov.PLUGINS + "dynamicresources/dynamicresources.go"
    alloc = cov.PLUGINS + "dynamicresources/allocateddevices.go"

    def why(file: str, start: int, function: str) -> str:
        return cov.reason(cov.Block(file, start, start + 2, 1, False, function), None)

    assert why(dra, 1370, "*DynamicResources.PreBind") == "wait"
    assert why(dra, 1509, "*DynamicResources.bindClaim") == "open"  # the special claim, drawn
    assert why(dra, 1553, "*DynamicResources.bindClaim") == "fault"
    assert why(dra, 1231, "*DynamicResources.Unreserve") == "fault"
    assert why(alloc, 277, "*allocatedDevices.removeDevices") == "unmodelled"
    assert why(alloc, 242, "*allocatedDevices.removeDevices") == "open"


def test_the_volume_plugins_leave_out_test_helpers_and_file_their_hints_apart() -> None:
    """VolumeBinding's test helpers (``fake_binder.go``, ``test_utils.go``) are not the
    plugin; a volume plugin's queueing hint left uncovered (the type assertion the storage
    hint cases cannot fail) is ``storage-hint``, a default plugin's stays ``hint``; a block in a
    classified volume span takes its reason."""
    vb = cov.PLUGINS + "volumebinding/"
    blocks = [
        cov.Block(vb + "volume_binding.go", 400, 402, 2, True, "*VolumeBinding.Filter"),
        cov.Block(vb + "fake_binder.go", 30, 33, 3, False, "NewFakeVolumeBinder"),
        cov.Block(vb + "test_utils.go", 40, 44, 4, False, "makePV"),
    ]
    row = {r.name: r for r in cov.rows(blocks, cov.STORAGE)}["VolumeBinding"]
    assert row.share() == (2, 2)

    def why(file: str, start: int, function: str) -> str:
        return cov.reason(cov.Block(file, start, start + 2, 1, False, function), None)

    zone = cov.PLUGINS + "volumezone/volume_zone.go"
    assert why(zone, 321, "*VolumeZone.isPVCRequestedFromPod") == "storage-hint"
    assert why(vb + "volume_binding.go", 138, "*VolumeBinding.isSchedulableAfterCSINodeChange") == (
        "storage-hint"
    )
    taint = cov.PLUGINS + "tainttoleration/taint_toleration.go"
    assert why(taint, 90, "*TaintToleration.isSchedulableAfterNodeChange") == "hint"
    assert why(vb + "binder.go", 650, "*volumeBinder.checkBindings") == "volume-fault"
    assert why(cov.PLUGINS + "nodevolumelimits/utils.go", 41, "isCSIMigrationOn") == "gate"


def test_a_later_release_lists_its_gated_plugins_apart_and_skips_v134_line_numbers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--coverage --kubernetes-version V``: V's instrumented binary, V's feature-gated
    plugins in rows of their own (out of the summary line: it stays the default profile's),
    and v1.34.4's line-numbered reasons only at v1.34 (a later release's lines differ)."""
    assert cov.cover_binary(None) == cov.cover_binary("1.34") == cov.COVER_BINARY
    assert cov.cover_binary("1.37") == cov.ROOT / "bin" / "cover" / "v1.37" / "kube-oracle"
    assert 'ORACLE_VERSIONS="1.37"' in cov.cover_hint("1.37")
    assert cov.gated(None) == {}
    assert set(cov.gated("1.35")) == {"NodeDeclaredFeatures", "GangScheduling"}
    assert set(cov.gated("1.37")) == set(cov.GATED)
    gang = cov.PLUGINS + "gangscheduling/gangscheduling.go"
    blocks = [
        cov.Block(gang, 10, 12, 3, True, "*GangScheduling.Permit"),
        cov.Block(gang, 20, 21, 1, False, "*GangScheduling.Permit"),
        cov.Block(cov.PLUGINS + "tainttoleration/taint_toleration.go", 1, 2, 2, True, "x"),
    ]
    monkeypatch.setattr(cov, "load", lambda dirs: blocks)
    rep = cov.report([], version="1.37")
    assert rep.shares["GangScheduling"] == (75.0, 75.0)
    gang_line = next(line for line in rep.lines if line.startswith("GangScheduling"))
    assert gang_line.endswith("(feature-gated: not in the summary line)")
    assert rep.total == 100.0  # GangScheduling's uncovered statement is not counted
    assert "GangScheduling" not in cov.report([], version="1.34").shares
    dra = cov.PLUGINS + "dynamicresources/dynamicresources.go"
    wait = cov.Block(dra, 1370, 1372, 1, False, "*DynamicResources.PreBind")
    assert cov.reason(wait, None) == cov.reason(wait, None, "1.34") == "wait"
    assert cov.reason(wait, None, "1.37") == "open"
