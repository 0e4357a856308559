"""The repository is self-contained: no file points at the steering's folder beside it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(r"\.\./shared|/work/shared|\bDESIGN\.md\b")


def test_no_file_points_outside_the_repository() -> None:
    files = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    this = str(Path(__file__).relative_to(ROOT))
    offenders = []
    for name in files:
        path = ROOT / name
        if name == this or not path.is_file() or path.stat().st_size > 2_000_000:
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        offenders += [
            f"{name}:{n}" for n, line in enumerate(text.splitlines(), 1) if OUTSIDE.search(line)
        ]
    assert offenders == []
