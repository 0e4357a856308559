"""Checks of the flags the commands share, run by :func:`kubesched.cli.main` on every parsed
command line before the command starts, so a bad flag is exit code 2 naming the flag on every
command alike, and a run never ends by failing to write its result.

:data:`NUMBERS` bounds the numeric flags by destination name; :data:`FILES` and :data:`DIRS`
name the output paths, which must be writable (a file's directory exists, a directory is not
a file) before anything runs.  ``-o`` is an output file where a command sets
``output_is_file`` (``bench``, ``sweep``, ``replay``), and a format elsewhere.  A new command
that reuses a flag name gets its check for free; one with a new flag adds a row.
Binding ``--metrics-port``/``--metrics-address`` is checked where the server binds
(:class:`kubesched.metrics.MetricsServer`): a port in use is only known then.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import tempfile
from pathlib import Path

from kubesched.api.errors import InputError, excerpt

INF = math.inf

NUMBERS: dict[str, tuple[float, float, bool]] = {
    # dest: (lowest, highest, lowest excluded)
    "shards": (1, 1024, False),
    "shard_index": (0, 1023, False),
    "metrics_port": (0, 65535, False),
    "pace": (0, INF, False),
    "metrics_hold": (0, INF, False),
    "resync": (0, INF, False),
    "seed": (0, 2**63 - 1, False),
    "jobs": (1, 1024, False),
    "repeat": (1, 100, False),
    "workers": (0, 1024, False),
    "timeout": (0, INF, True),
    "api_latency": (0, INF, False),
    "client_qps": (0, INF, True),
    "client_burst": (0, 2**31 - 1, False),
    "drain": (0, 86400, False),
    "duration": (0, INF, True),
}
FILES = ("json_out", "metrics_file", "profile", "plot")
DIRS = ("report", "out")


def flag(dest: str) -> str:
    """The flag of a destination: ``json_out`` -> ``--json-out``."""
    return "--" + dest.replace("_", "-")


def check(args: argparse.Namespace) -> None:
    """Every problem with ``args``' shared flags, as one :class:`InputError`."""
    problems: list[tuple[str, str]] = []
    for dest, (low, high, strict) in NUMBERS.items():
        values = getattr(args, dest, None)
        for value in values if isinstance(values, list) else [values]:
            message = _number(value, low, high, strict)
            if message:
                problems.append((flag(dest), message))
    files = FILES + (("output",) if getattr(args, "output_is_file", False) else ())
    for dest in files:
        path = getattr(args, dest, None)
        message = writable_file(path) if path else None
        if message:
            problems.append((flag(dest), message))
    for dest in DIRS:
        path = getattr(args, dest, None)
        message = writable_dir(path) if path else None
        if message:
            problems.append((flag(dest), message))
    if problems:
        raise InputError(problems)


def _number(value: object, low: float, high: float, strict: bool) -> str | None:
    if value is None or not isinstance(value, int | float):
        return None
    if not math.isfinite(value):
        return f"must be a finite number, got {value}"
    if value < low or (strict and value == low):
        return f"must be {'>' if strict else '>='} {low:g}, got {value}"
    if value > high:
        return f"must be <= {high:g}, got {value}"
    return None


def writable_file(path: str) -> str | None:
    """Why a file cannot be written at ``path`` (None: it can); nothing is left behind."""
    p = Path(path)
    if p.is_dir():
        return f"{excerpt(path)} is a directory, not a file"
    parent = p.parent
    if not parent.is_dir():
        return f"no such directory: {excerpt(str(parent))}"
    if p.exists():
        return None if os.access(p, os.W_OK) else f"cannot write {excerpt(path)}"
    try:
        with open(p, "x"):
            pass
        p.unlink()
    except OSError as err:
        return f"cannot write {excerpt(path)}: {err.strerror}"
    return None


def writable_dir(path: str) -> str | None:
    """Why a directory cannot be made or written at ``path`` (None: it can)."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        return f"{excerpt(path)} is not a directory"
    base = p
    while not base.exists() and base != base.parent:
        base = base.parent
    if not base.is_dir():
        return f"{excerpt(str(base))} is not a directory"
    try:
        with tempfile.TemporaryFile(dir=base):
            pass
    except OSError as err:
        return f"cannot write in {excerpt(str(base))}: {err.strerror}"
    return None


_SIZE_UNITS = {"": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def byte_size(text: str) -> int:
    """``--max-input-size``: a positive number of bytes, with an optional binary suffix
    (``512Mi``, ``2Gi``); at most 1Ti."""
    m = re.fullmatch(r"([0-9]{1,13})(Ki|Mi|Gi|Ti)?", text.strip())
    value = int(m.group(1)) * _SIZE_UNITS[m.group(2) or ""] if m else 0
    if not 0 < value <= 2**40:
        raise argparse.ArgumentTypeError(
            f"{text!r}: a size in bytes, optionally with Ki, Mi, Gi or Ti, from 1 to 1Ti"
        )
    return value
