"""Kubernetes resource quantities ("250m", "1.5Gi", "2e3", "1k") as exact integers.

Parsing follows ``k8s.io/apimachinery/pkg/api/resource``: a signed decimal number, then a
binary suffix (Ki..Ei), a decimal suffix (n, u, m, "", k, M..E) or a decimal exponent
(``e3``).  Values are kept as :class:`fractions.Fraction`, so nothing is rounded until a
caller asks for millis (CPU) or units (everything else), which round up as upstream's
``MilliValue()`` / ``Value()`` do.

Digits are ASCII only, as upstream's ``parseQuantityString`` reads them (a fullwidth ``"１"``
is not a number).  The scheduler counts CPU in millicores and every other resource in units
as int64 (upstream ``framework.Resource``); a quantity whose count would not fit is refused
(:func:`too_large`) where upstream's ``MilliValue()``/``Value()`` silently overflow (a
deliberate deviation, ``docs/fidelity.md``).
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

from kubesched.api import objects as api

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<exp>[eE][+-]?[0-9]{1,4})|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$",
    re.ASCII,
)
INT64_MAX = 2**63 - 1
"""The largest count the scheduler holds (int64, as upstream's ``framework.Resource``)."""


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(value: str | int | float) -> Fraction:
    """Exact value of a quantity: ``parse_quantity("1.5Gi") == 1610612736``."""
    if isinstance(value, bool):
        raise QuantityError(f"quantities must match the regular expression, got {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"invalid quantity {value!r}")
        return Fraction(str(value))
    text = value.strip()
    m = _QUANTITY.match(text)
    if m is None:
        raise QuantityError(
            f"quantities must match the regular expression "
            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got {value!r}"
        )
    number = Fraction(m.group("num"))
    if m.group("exp"):
        return number * Fraction(10) ** int(m.group("exp")[1:])
    suffix = m.group("suffix") or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    return number * _DECIMAL[suffix]


def to_milli(q: Fraction) -> int:
    """Millis, rounded up (upstream ``MilliValue``)."""
    return math.ceil(q * 1000)


def to_units(q: Fraction) -> int:
    """Whole units, rounded up (upstream ``Value``)."""
    return math.ceil(q)


def resource_amount(name: str, value: str | int | float) -> int:
    """The integer the scheduler counts for resource ``name``: millicores for ``cpu``;
    :class:`QuantityError` when it does not fit in int64 (:func:`too_large`)."""
    q = parse_quantity(value)
    amount = to_milli(q) if name == api.CPU else to_units(q)
    message = too_large(name, units_from_milli(name, to_milli(q)), value)
    if message:
        raise QuantityError(message)
    return amount


def too_large(name: str, amount: int, value: object) -> str | None:
    """Why ``amount`` (the scheduler's count of ``name``: millicores for ``cpu``, else units)
    cannot be held, or None when it fits in int64."""
    if -INT64_MAX - 1 <= amount <= INT64_MAX:
        return None
    unit = "millicores" if name == api.CPU else "units"
    shown = value if isinstance(value, int | float) else repr(value)
    if isinstance(shown, str) and len(shown) > 40:
        shown = shown[:40] + "..."
    return (
        f"quantity {shown} is too large: the scheduler counts {name} in {unit} as a signed "
        f"64-bit integer (at most {INT64_MAX})"
    )


@functools.lru_cache(maxsize=16384)
def _milli_of_text(text: str) -> int:
    return to_milli(parse_quantity(text))


def milli_value(value: str | int | float) -> int:
    """``value`` in thousandths, rounded up: what the API server stores.

    The API server rounds every quantity up to milli precision when it defaults a Pod or
    Node (``SetDefaults_ResourceList``), so sums and maxima of these integers are exact.
    Strings are cached: real manifests repeat a handful of quantities many times.
    """
    if type(value) is str:
        return _milli_of_text(value)
    if type(value) is int:
        return value * 1000
    if not isinstance(value, float):
        raise TypeError(f"a quantity must be a string or a number, got {type(value).__name__}")
    return to_milli(parse_quantity(value))


def units_from_milli(name: str, millis: int) -> int:
    """The scheduler's integer for ``name`` given thousandths: millicores for ``cpu``, else
    whole units rounded up (``Value()``)."""
    return millis if name == api.CPU else -(-millis // 1000)
