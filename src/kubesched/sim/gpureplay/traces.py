"""Loaders for the Alibaba GPU cluster trace 2023 ("openb") CSV files, into numpy columns.

Node lists have columns ``sn, cpu_milli, memory_mib, gpu, model``; pod lists ``name,
cpu_milli, memory_mib, num_gpu, gpu_milli`` and optionally ``gpu_spec`` (allowed models
joined by ``|``) and more columns we ignore.  Every problem raises :class:`InputError` naming
the file, row and column; files are read by :mod:`kubesched.api.source` (regular files,
size limit, UTF-8), numbers are ASCII decimal integers within int64.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from kubesched.api import source
from kubesched.api.errors import InputError, excerpt
from kubesched.api.quantity import INT64_MAX
from kubesched.devices.fragmentation import MILLI, Shape

IntArray = npt.NDArray[np.int64]

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")


@dataclass(frozen=True, slots=True)
class NodeList:
    """Nodes as columns; ``model`` int64 codes into ``models``; each ``(N,)``."""

    names: tuple[str, ...]
    cpu: IntArray
    memory: IntArray
    gpus: IntArray
    model: IntArray
    models: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.names)

    @property
    def gpu_capacity_milli(self) -> int:
        """Thousandths of GPU in the whole cluster."""
        return int(self.gpus.sum()) * MILLI


@dataclass(frozen=True, slots=True)
class PodList:
    """Tasks as columns, each ``(P,)``; ``spec`` int64 codes into ``specs`` (model tuples,
    ``()`` = any).  ``milli`` is per GPU (1000 for whole GPUs, 0 for CPU-only)."""

    names: tuple[str, ...]
    cpu: IntArray
    memory: IntArray
    num: IntArray
    milli: IntArray
    spec: IntArray
    specs: tuple[tuple[str, ...], ...]

    def __len__(self) -> int:
        return len(self.names)

    def shape(self, i: int) -> Shape:
        """Task ``i``'s shape."""
        return Shape(
            int(self.cpu[i]), int(self.milli[i]), int(self.num[i]), self.specs[self.spec[i]]
        )


def _rows(path: Path, required: tuple[str, ...]) -> list[dict[str, str]]:
    text = source.read_text(str(path))  # regular file, size limit, UTF-8
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = reader.fieldnames or []
        missing = [c for c in required if c not in header]
        if missing:
            shown = excerpt(", ".join(missing))
            raise InputError([("header", f"missing column(s) {shown}")], file=str(path))
        return list(reader)
    except csv.Error as e:
        raise InputError(f"not a CSV file: {e}", file=str(path)) from None


_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)


def _int(row: dict[str, str], col: str, line: int, path: Path, low: int = 0) -> int:
    raw = (row.get(col) or "").strip()
    if not _INTEGER.fullmatch(raw):
        raise InputError(
            [(f"line {line}: {col}", f"not an integer: {excerpt(raw)}")], file=str(path)
        )
    digits = len(raw.lstrip("+-").lstrip("0"))
    value = int(raw) if digits <= 19 else None  # longer is beyond int64: not read at all
    if value is None or value < low or value > INT64_MAX:
        shown = excerpt(value) if value is not None else f"a number of {digits} digits"
        raise InputError(
            [(f"line {line}: {col}", f"must be >= {low} and <= {INT64_MAX}, got {shown}")],
            file=str(path),
        )
    return value


def load_nodes(path: str | Path) -> NodeList:
    """Read a node list CSV."""
    p = Path(path)
    rows = _rows(p, NODE_COLUMNS)
    models: dict[str, int] = {}
    names, cpu, mem, gpus, model = [], [], [], [], []
    for i, row in enumerate(rows, start=2):
        names.append(row["sn"])
        cpu.append(_int(row, "cpu_milli", i, p))
        mem.append(_int(row, "memory_mib", i, p))
        gpus.append(_int(row, "gpu", i, p))
        m = (row.get("model") or "").strip()
        model.append(models.setdefault(m, len(models)))
    if not names:
        raise InputError("no nodes", file=str(p))
    return NodeList(
        tuple(names),
        np.array(cpu, dtype=np.int64),
        np.array(mem, dtype=np.int64),
        np.array(gpus, dtype=np.int64),
        np.array(model, dtype=np.int64),
        tuple(models),
    )


def load_pods(path: str | Path) -> PodList:
    """Read a pod list CSV; ``gpu_milli`` of multi-GPU tasks must be 1000."""
    p = Path(path)
    rows = _rows(p, POD_COLUMNS)
    specs: dict[tuple[str, ...], int] = {}
    names, cpu, mem, num, milli, spec = [], [], [], [], [], []
    for i, row in enumerate(rows, start=2):
        n = _int(row, "num_gpu", i, p)
        m = _int(row, "gpu_milli", i, p)
        if n == 0:
            m = 0
        elif not 0 < m <= MILLI or (n > 1 and m != MILLI):
            raise InputError(
                [(f"line {i}: gpu_milli", f"{m} is not valid for {n} GPU(s)")], file=str(p)
            )
        models = tuple(sorted({s for s in (row.get("gpu_spec") or "").split("|") if s}))
        names.append(row["name"])
        cpu.append(_int(row, "cpu_milli", i, p))
        mem.append(_int(row, "memory_mib", i, p))
        num.append(n)
        milli.append(m)
        spec.append(specs.setdefault(models, len(specs)))
    if not names:
        raise InputError("no pods", file=str(p))
    return PodList(
        tuple(names),
        np.array(cpu, dtype=np.int64),
        np.array(mem, dtype=np.int64),
        np.array(num, dtype=np.int64),
        np.array(milli, dtype=np.int64),
        np.array(spec, dtype=np.int64),
        tuple(specs),
    )
