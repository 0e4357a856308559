"""The oracle (upstream kube-scheduler v1.34 as ``oracle/bin/kube-oracle``) for tests.

In CI (``CI=true``) a missing oracle fails the tests that need it; elsewhere they skip,
saying how to build it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ORACLE_DIR = Path(__file__).resolve().parents[2] / "oracle"
sys.path.insert(0, str(ORACLE_DIR))

from compare import BUILD_HINT, Oracle, OracleMissing  # noqa: E402


def _oracle(verb: str) -> Iterator[Any]:
    try:
        with Oracle(verb=verb) as o:
            yield o
    except OracleMissing as e:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the oracle is required in CI: {e}")
        pytest.skip(f"the oracle is not built ({BUILD_HINT})")


@pytest.fixture(scope="session")
def oracle() -> Iterator[Any]:
    """``kube-oracle explain``."""
    yield from _oracle("explain")


@pytest.fixture(scope="session")
def schedule_oracle() -> Iterator[Any]:
    """``kube-oracle schedule``: upstream's whole scheduler."""
    yield from _oracle("schedule")
