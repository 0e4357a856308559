"""The oracle (upstream kube-scheduler v1.34 as ``oracle/bin/kube-oracle``) for tests.

In CI (``CI=true``) a missing oracle fails the tests that need it; elsewhere they skip,
saying how to build it.
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ORACLE_DIR = Path(__file__).resolve().parents[2] / "oracle"
sys.path.insert(0, str(ORACLE_DIR))

from compare import BINARY, BUILD_HINT, Oracle, OracleMissing, binary  # noqa: E402


def generated_seed(what: str, n: int) -> int:
    """``ORACLE_SEED`` or a random seed, printed so a failure reproduces."""
    seed = int(os.environ.get("ORACLE_SEED", random.SystemRandom().randrange(1 << 31)))
    print(f"oracle {what}: seed {seed}, {n} cases")
    return seed


def mismatches(
    n: int,
    request: Callable[[int], dict[str, Any]],
    ours: Callable[[dict[str, Any]], dict[str, Any]],
    oracle: Any,
    differences: Callable[[dict[str, Any], dict[str, Any]], list[str]],
    one_of_upstreams: Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], bool]
    | None = None,
) -> list[str]:
    """One line per generated case (``request(i)``, i < n) whose answers differ, unless
    ``one_of_upstreams(request, ours, theirs)`` finds that upstream may answer as ours does
    (``compare.one_of_pool_orders``: upstream's answer varies)."""
    failures = []
    for i in range(n):
        req = request(i)
        mine, theirs = ours(req), oracle.ask(req)
        lines = differences(mine, theirs)
        if lines and one_of_upstreams is not None and one_of_upstreams(req, mine, theirs):
            continue
        if lines:
            failures.append(f"case {i}: " + "; ".join(lines[:3]))
    return failures


def _oracle(verb: str) -> Iterator[Any]:
    try:
        with Oracle(verb=verb) as o:
            yield o
    except OracleMissing as e:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the oracle is required in CI: {e}")
        pytest.skip(f"the oracle is not built ({BUILD_HINT})")


def _missing_later_release(msg: str) -> None:
    """A later release's kube-oracle is absent: skipped, or failed where ``.ci/run`` (which
    builds the later releases after the default run) says it is required."""
    if os.environ.get("ORACLE_LATER_RELEASES") == "required":
        pytest.fail(f"the oracle is required here: {msg}")
    pytest.skip(msg)


def later_release_binary(version: str) -> Path:
    """kube-oracle at ``version`` (``oracle/bin/vV``), for the verbs run as commands."""
    path = binary(version)
    if not path.exists():
        _missing_later_release(f"{path} is missing: run bash oracle/build.sh")
    return path


def later_release_oracle(version: str, verb: str) -> Iterator[Any]:
    """kube-oracle's ``verb`` at ``version``, for a module-scoped fixture to yield from."""
    try:
        with Oracle(binary(version), verb) as o:
            yield o
    except OracleMissing as e:
        _missing_later_release(str(e))


@pytest.fixture(scope="session")
def oracle() -> Iterator[Any]:
    """``kube-oracle explain``."""
    yield from _oracle("explain")


@pytest.fixture(scope="session")
def kube_oracle() -> Path:
    """The ``kube-oracle`` binary itself, for the verbs run as commands (``bench``)."""
    if not BINARY.exists():
        msg = f"{BINARY} is missing: run {BUILD_HINT}"
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    return Path(BINARY)


@pytest.fixture(scope="session")
def schedule_oracle() -> Iterator[Any]:
    """``kube-oracle schedule``: upstream's whole scheduler."""
    yield from _oracle("schedule")
