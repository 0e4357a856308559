"""Resource quantities to exact integers (``k8s.io/apimachinery/pkg/api/resource``)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api import quantity
from kubesched.api.quantity import (
    QuantityError,
    milli_value,
    parse_quantity,
    resource_amount,
    units_from_milli,
)

GI = 2**30
MI = 2**20


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("cpu", "250m", 250),
        ("cpu", "1", 1000),
        ("cpu", "0.1", 100),
        ("cpu", "1e-3", 1),
        ("cpu", "2e3", 2_000_000),
        ("cpu", "1k", 1_000_000),
        ("cpu", "1n", 1),  # rounds up to the next millicore, like MilliValue()
        ("cpu", "1500u", 2),
        ("cpu", ".5", 500),
        ("cpu", "+2", 2000),
        ("cpu", 2, 2000),
        ("cpu", 0.5, 500),
        ("memory", "1.5Gi", 1610612736),
        ("memory", "100Mi", 100 * MI),
        ("memory", "1k", 1000),
        ("memory", "1Ki", 1024),
        ("memory", "2e3", 2000),
        ("memory", "1.5", 2),  # Value() rounds up
        ("memory", "1E", 10**18),
        ("memory", "1Ei", 2**60),
        ("memory", "61545432Ki", 63022522368),
        ("nvidia.com/gpu", "4", 4),
        ("pods", 110, 110),
        ("ephemeral-storage", "242541724467", 242541724467),
    ],
)
def test_resource_amount(name: str, text: str | int | float, expected: int) -> None:
    assert resource_amount(name, text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "abc", "1.5.5", "1KI", "1kb", "Gi", "1e", "--1", "1 Gi", "1Gi2", "0x10", "1,5"],
)
def test_invalid_quantities_raise(text: str) -> None:
    with pytest.raises(QuantityError, match="quantities must match"):
        parse_quantity(text)


@pytest.mark.parametrize("value", [True, float("nan"), float("inf")])
def test_invalid_non_string_quantities_raise(value: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(value)  # type: ignore[arg-type]


def test_parse_quantity_is_exact() -> None:
    assert parse_quantity("0.1") == Fraction(1, 10)
    assert parse_quantity("1.5Gi") == Fraction(3, 2) * GI
    assert parse_quantity("-1m") == Fraction(-1, 1000)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("250m", 250),
        ("1", 1000),
        ("1.5Gi", 1610612736000),
        ("1e-3", 1),
        ("1n", 1),  # the API server rounds every quantity up to milli precision
        ("0.0005", 1),
        (3, 3000),
        (0.25, 250),
        ("0", 0),
    ],
)
def test_milli_value(value: str | int | float, expected: int) -> None:
    assert milli_value(value) == expected
    assert milli_value(value) == expected  # second call served from the cache


def test_milli_value_rejects_what_parse_rejects() -> None:
    with pytest.raises(QuantityError):
        milli_value("12 apples")


@pytest.mark.parametrize(
    ("name", "millis", "expected"),
    [
        ("cpu", 1001, 1001),
        ("memory", 0, 0),
        ("memory", 1, 1),
        ("memory", 1000, 1),
        ("memory", 1001, 2),
        ("nvidia.com/gpu", 4000, 4),
    ],
)
def test_units_from_milli(name: str, millis: int, expected: int) -> None:
    assert units_from_milli(name, millis) == expected


_SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]


def _exact(num: str, exp: str, suffix: str) -> Fraction:
    """The quantity's value by exact arithmetic (numbers short enough for ``int``)."""
    value = Fraction(num)
    if exp:
        return value * Fraction(10) ** int(exp[1:])
    return value * (quantity._BINARY.get(suffix) or quantity._DECIMAL[suffix])


@settings(max_examples=3000, deadline=None)
@given(
    sign=st.sampled_from(["", "+", "-"]),
    whole=st.text("0123456789", max_size=30),
    frac=st.text("0000000123456789", min_size=100, max_size=400),
    exp=st.sampled_from(["", "", "e-9", "e3", "e-120", "e25", "e-400"]),
    suffix=st.sampled_from(_SUFFIXES),
)
def test_a_long_number_rounds_as_its_exact_value(
    sign: str, whole: str, frac: str, exp: str, suffix: str
) -> None:
    """A quantity's number longer than ``LONG_DIGITS`` is read without Python's 4,300-digit
    limit on ``int``: rounded up to 10^-9, 10^-3 and 1 as its exact value is (upstream
    rounds up to 10^-9; the scheduler counts millis and units), or, from 10^30 on, too
    large whatever it is exactly."""
    text = f"{sign}{whole or '0'}.{frac}{exp or suffix}"
    exact = _exact(f"{sign}{whole or '0'}.{frac}", exp, "" if exp else suffix)
    read = parse_quantity(text)
    if abs(exact) >= 10**30:
        assert abs(read) >= 10**30 and (read > 0) == (exact > 0)
        return
    for scale in (1, 1000, 10**9):
        assert math.ceil(read * scale) == math.ceil(exact * scale)


@pytest.mark.parametrize(
    ("text", "millis"),
    [
        ("0." + "0" * 5000 + "1", 1),  # rounds up, as upstream's nano rounding does
        ("-0." + "0" * 5000 + "1", 0),
        ("1." + "0" * 5000 + "1Ki", 1024 * 1000 + 1),
        ("0" * 5000 + "5", 5000),  # leading zeros are no size
    ],
)
def test_numbers_beyond_4300_digits_are_read(text: str, millis: int) -> None:
    assert milli_value(text) == millis


@pytest.mark.parametrize("text", ["1" * 5000, "-" + "1" * 5000, "1" * 4000 + "e9999"])
def test_a_huge_number_is_too_large_not_a_value_error(text: str) -> None:
    with pytest.raises(QuantityError, match="too large"):
        resource_amount("memory", text)
