"""kube-oracle v1.37's ``schedule`` waits for a PodGroup's retry after its own failed cycle
deallocated a ResourceClaim (``oracle/internal/oracle/schedule.go``: deallocationReactor).

v1.37's DynamicResources.PodGroupPostFilter deallocates a claim allocated elsewhere and
reserved for nobody, and the failed PodGroup goes to backoffQ with no unschedulable plugin;
its retry after the backoff takes the freed devices.  kube-oracle used to settle before that
retry (the member parked beside the queues, its rejection counted as final), answering
Unschedulable where upstream's scheduler goes on to bind.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from compare import ours_schedule

from tests.oracle.conftest import later_release_oracle

CASE = Path(__file__).parent / "regressions" / "case-5af09f101715.json"


@pytest.fixture(scope="module")
def schedule_oracle_137() -> Iterator[Any]:
    yield from later_release_oracle("1.37", "schedule")


def test_podgroup_retried_after_its_postfilter_deallocated_the_claim(
    schedule_oracle_137: Any,
) -> None:
    request = json.loads(CASE.read_text())["request"]
    for _ in range(2):  # it used to settle early on most runs, racing the backoff
        pods = schedule_oracle_137.ask(request)["pods"]
        assert pods["default/new"]["result"] == "Scheduled", pods["default/new"]
        assert pods["default/new"]["node"] == "n0"
        assert "resourceclaim not available" in pods["default/new2"]["message"]
    assert ours_schedule(request, "1.37")["pods"]["default/new"]["node"] == "n0"
