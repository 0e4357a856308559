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
    num, exp, suffix = m.group("num"), m.group("exp"), m.group("suffix") or ""
    if len(num) > LONG_DIGITS:
        return _long(num, exp, suffix)
    number = Fraction(num)
    if exp:
        return number * Fraction(10) ** int(exp[1:])
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    return number * _DECIMAL[suffix]


LONG_DIGITS = 100
"""A quantity's number longer than this is read by :func:`_long`."""

_DECIMAL_EXPONENTS = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12}
_DECIMAL_EXPONENTS.update(P=15, E=18)
_HUGE = Fraction(10**40)
"""What a quantity of 10^30 or more reads as: more than any count the scheduler holds, so
it is refused as too large (:func:`too_large`) whatever it is exactly."""


def _long(num: str, exp: str | None, suffix: str) -> Fraction:
    """The value of a quantity whose number has more than :data:`LONG_DIGITS` characters,
    without turning its text into an integer at once (which Python limits to 4,300 digits,
    as it costs time quadratic in the digits): 10^30 or more (negative: -10^30 or less)
    reads as :data:`_HUGE` of its sign; otherwise the digits below 10^-71 are dropped and,
    if any of them was not zero, a 1 put at 10^-72.  Upstream rounds a quantity up to
    10^-9 after its binary suffix (at most 2^60 < 10^19) multiplies it, and the scheduler
    rounds up to 10^-3: both roundings are those of the exact value."""
    sign = -1 if num.startswith("-") else 1
    whole, _, frac = num.lstrip("+-").partition(".")
    exp10 = int(exp[1:]) if exp else _DECIMAL_EXPONENTS.get(suffix, 0)
    digits = (whole + frac).lstrip("0")
    if not digits:
        return Fraction(0)
    top = len(digits) + exp10 - len(frac)  # the value is below 10**top (times the suffix)
    if top > 30:
        return sign * _HUGE
    keep = top + 71  # digits of places 10^-71 and up
    if keep <= 0:  # all below 10^-71, not all zero
        return sign * Fraction(1, 10**72) * _BINARY.get(suffix, 1)
    kept = digits[:keep] + ("1" if digits[keep:].strip("0") else "")
    value = Fraction(sign * int(kept)) * Fraction(10) ** (top - len(kept))
    return value * _BINARY.get(suffix, 1)


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
