"""Number prefixes under bounds: every prefix the grammar lets through can still be finished, and every
valid number gets through (a prefix with no valid completion is a dead end for the request)."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import pytest

from tokenloom.constrain.number import number_chars, number_complete
from tokenloom.constrain.schema_ir import Schema

_NEXT = "-0123456789.eE+"


def _schema(
    lo: float | None = None,
    hi: float | None = None,
    *,
    excl_lo: bool = False,
    excl_hi: bool = False,
    multiple: str | None = None,
    integer: bool = False,
    refused: tuple[str, ...] = (),
) -> Schema:
    s = Schema()
    s.not_multiples = tuple(Fraction(m) for m in refused)
    s.minimum, s.maximum, s.excl_min, s.excl_max = lo, hi, excl_lo, excl_hi
    s.multiple_of = None if multiple is None else Fraction(multiple)
    s.types = frozenset({"integer"} if integer else {"number"})
    return s


# each of these had prefixes with no completion: "54" under multipleOf 5 and maximum 80 (the
# completions of "54" are [54, 55), which holds no multiple of 5, though the closed [54, 55] does),
# "5.9" under minimum 6, "80" under an exclusive maximum of 80, "-7" under an exclusive minimum of -7
CASES = [
    _schema(hi=80, multiple="5"),
    _schema(hi=20, multiple="10"),
    _schema(6, 6),
    _schema(6),
    _schema(hi=80, excl_hi=True, multiple="5"),
    _schema(0, 1, excl_lo=True, multiple="0.25"),
    _schema(5.5, 5.5),
    _schema(-7, -5, excl_lo=True, excl_hi=True),
    _schema(0.001, 0.002),
    _schema(-3, 3, multiple="0.5"),
    _schema(10, 99, multiple="7", integer=True),
]
# `not: {multipleOf}` (allany7's branches): no refused multiple may end the number. Open-ended, every
# digit is allowed everywhere: explored to a shallower depth
WIDE_CASES = [
    _schema(hi=100, refused=("1",)),
    _schema(multiple="0.5", refused=("1",)),
    _schema(multiple="15", integer=True, refused=("6", "10")),
    _schema(integer=True, refused=("2", "3")),
]


def _name(s: Schema) -> str:
    return f"{s.minimum}..{s.maximum}/{s.multiple_of}-not{','.join(map(str, s.not_multiples))}"


def _allowed(prefix: str, s: Schema) -> list[str]:
    chars = number_chars(prefix, s)
    return [prefix + c for c in _NEXT if chars.contains_cp(ord(c))]


def _finishable(prefix: str, s: Schema, more: int) -> bool:
    """Some completion of at most `more` further chars is a valid number (shortest first)."""
    frontier = [prefix]
    for _ in range(more + 1):
        if any(number_complete(p, s) for p in frontier):
            return True
        frontier = [nxt for p in frontier for nxt in _allowed(p, s)]
    return False


@pytest.mark.parametrize(
    ("s", "depth"),
    [(s, 4) for s in CASES] + [(s, 3) for s in WIDE_CASES],
    ids=lambda v: _name(v) if isinstance(v, Schema) else str(v),
)
def test_every_allowed_prefix_can_be_finished(s: Schema, depth: int) -> None:
    frontier = [""]
    for _ in range(depth):
        frontier = [nxt for p in frontier for nxt in _allowed(p, s)]
        dead = [p for p in frontier if not _finishable(p, s, 6)]
        assert not dead, dead[:5]


@pytest.mark.parametrize("s", CASES + WIDE_CASES, ids=_name)
def test_every_valid_number_gets_through(s: Schema) -> None:
    texts = ("".join(t) for n in range(1, 5) for t in itertools.product("-0123456789.", repeat=n))
    for text in texts:
        if number_complete(text, s):
            for i in range(len(text)):
                assert number_chars(text[:i], s).contains_cp(ord(text[i])), (text, i)


def test_long_prefixes_are_judged_exactly_at_the_digit_cap() -> None:
    """19-digit prefixes under multipleOf 429 with the default cap of 20 digits: allowed exactly when a
    completion within the cap is a multiple (interval ends held as floats were about 4,000 apart there,
    and an open-ended extension ignored the cap: 20-digit dead ends)."""
    s = _schema(multiple="429", integer=True)
    rng = random.Random(429)
    for _ in range(300):
        prefix = str(rng.randrange(10**18, 10**19))
        allowed = number_chars(prefix[:-1], s).contains_cp(ord(prefix[-1]))
        value = int(prefix)
        completable = value % 429 == 0 or any((value * 10 + d) % 429 == 0 for d in range(10))
        assert allowed == completable, prefix


def test_an_escape_from_refused_multiples_may_need_more_digits() -> None:
    """ "387" under multipleOf 429 and not 6, 7 or 8 ends first at 7 digits (3,870,153): it was refused
    once an interval wide enough to hold a multiple of 429 held none that escaped the refused ones."""
    s = _schema(multiple="429", integer=True, refused=("6", "7", "8"))
    assert number_chars("38", s).contains_cp(ord("7"))
    assert all(number_chars("3870009"[:i], s).contains_cp(ord("3870009"[i])) for i in range(7))
    assert number_complete("3870009", s)
    assert not number_complete("387387", s)  # 429 * 903, a multiple of 7
