"""BoundedDraw draws what ``Generator.integers(n)`` draws, and leaves the generator as it would."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kubesched.kernels.draw import BoundedDraw


@pytest.mark.parametrize("seed", [0, 7, 12345])
def test_the_same_numbers_as_integers_with_other_draws_between(seed: int) -> None:
    a, b = np.random.default_rng(seed), np.random.default_rng(seed)
    draw = BoundedDraw(b)
    pick = random.Random(seed)
    for _ in range(20_000):
        k = pick.random()
        if k < 0.02:  # ranges where Lemire's rejection is frequent
            n = pick.choice([2**31 + 5, 3 * 2**30 + 1, 2**32 - 1])
        else:
            n = pick.randint(1, 6_000)
        assert draw(n) == int(a.integers(n))
        if k > 0.97:  # other uses of the generator see the same stream (64-bit draws)
            assert b.random() == a.random()
        elif k > 0.95:  # a 32-bit array draw, which shares the buffered half-word
            assert (b.integers(10, size=3) == a.integers(10, size=3)).all()
    assert b.bit_generator.state == a.bit_generator.state


def test_one_choice_draws_nothing_and_past_32_bits_falls_back() -> None:
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    draw = BoundedDraw(b)
    assert draw(1) == 0
    assert b.bit_generator.state == a.bit_generator.state
    assert draw(2**40 + 3) == int(a.integers(2**40 + 3))
    assert b.bit_generator.state == a.bit_generator.state
    with pytest.raises(ValueError):
        draw(0)


def test_any_bit_generator() -> None:
    a = np.random.Generator(np.random.MT19937(5))
    b = np.random.Generator(np.random.MT19937(5))
    draw = BoundedDraw(b)
    for n in [2, 3, 5000, 2**31 + 5, 17, 1, 9]:
        assert draw(n) == int(a.integers(n))
    assert b.integers(1000, size=5).tolist() == a.integers(1000, size=5).tolist()
