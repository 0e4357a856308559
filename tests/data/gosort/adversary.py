"""Inputs that drive pdqsort to its heapsort fallback (McIlroy's "killer adversary" for
quicksort, run against kubesched's port), for ``gen_fixture.go -extra``:

    PYTHONPATH=src python tests/data/gosort/adversary.py > /tmp/extra.json
    go run tests/data/gosort/gen_fixture.go -extra /tmp/extra.json > tests/data/gosort/fixture.json

The adversary decides each comparison lazily so that the pivot is always small; the values
it settles on, given to Go, make Go's pdqsort take the same path (the fixture then checks
the port against Go's order on them).
"""

from __future__ import annotations

import json

from kubesched.kernels import gosort


def killer(n: int) -> list[int]:
    """``n`` values on which pdqsort keeps picking bad pivots."""
    gas = n
    val = [gas] * n
    solid = 0
    candidate = 0

    def less(x: int, y: int) -> bool:
        nonlocal solid, candidate
        if val[x] == gas and val[y] == gas:
            frozen = x if x == candidate else y
            val[frozen] = solid
            solid += 1
        if val[x] == gas:
            candidate = x
        elif val[y] == gas:
            candidate = y
        return val[x] < val[y]

    gosort.sort_slice(list(range(n)), less)
    return val


if __name__ == "__main__":
    cases = [{"pattern": f"killer-{n}", "values": killer(n)} for n in (36, 40, 49, 123, 203, 299)]
    print(json.dumps({"cases": cases}))
