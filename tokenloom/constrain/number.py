"""JSON numbers by prefix: which next characters keep a prefix completable within a schema's bounds.

A prefix is allowed only if some completion is a valid JSON number of the schema's type inside
[minimum, maximum] and a multiple of `multipleOf`; exponents are refused when bounds apply (so the
check stays a few intervals).
Knows nothing of frames or vocabularies.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction
from typing import ClassVar

from tokenloom.constrain.charset import EMPTY, CharSet
from tokenloom.constrain.schema_ir import Schema

_SHAPE = re.compile(r"-?(?:(0|[1-9][0-9]*)(\.([0-9]*))?([eE][+-]?[0-9]*)?)?")
_COMPLETE = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_CANDIDATES = "-0123456789.eE+"
EXPONENT_DIGITS = 3  # a double's exponent never needs more (1e308)
_MAX_EXTENSIONS = 40  # further integer digits looked at one count at a time


class DigitLimits:
    """How many integer and fraction digits a number may have where the schema's bounds do not need
    more: a weak model otherwise loops inside a number (`1000000...`) until max_tokens. Set once at start
    (`tokenloom serve --number-digits`); masks cache what they computed under it."""

    digits: ClassVar[int] = 20


def set_number_digits(digits: int) -> None:
    DigitLimits.digits = max(1, digits)
    number_chars.cache_clear()


def _integer_digit_limit(s: Schema) -> int:
    needed = [len(str(int(abs(b)))) for b in (s.minimum, s.maximum) if b is not None and math.isfinite(b)]
    return max([DigitLimits.digits, *needed])


def _fraction_digit_limit(s: Schema) -> int:
    m = s.multiple_of
    if m is None:
        return DigitLimits.digits
    denominator, places = m.denominator, 0
    while denominator % 10 == 0 or denominator % 2 == 0 or denominator % 5 == 0:
        if denominator % 10 == 0:
            denominator //= 10
        elif denominator % 2 == 0:
            denominator //= 2
        else:
            denominator //= 5
        places += 1
    return max(DigitLimits.digits, places)


def _is_integer_only(s: Schema) -> bool:
    return "integer" in s.types and "number" not in s.types


def _bounded(s: Schema) -> bool:
    return (
        s.minimum is not None or s.maximum is not None or s.multiple_of is not None or bool(s.not_multiples)
    )


# An interval end: exact (an int, or a Fraction for a prefix with decimals), or a float infinity. Floats
# held 20-digit integers only to about 4,000 apart, so a prefix's [v * 10, v * 10 + 10) was misjudged.
End = int | Fraction | float


def _overlaps(lo: End, hi: End, s: Schema, open_lo: bool = False, open_hi: bool = False) -> bool:
    """Whether the interval from `lo` to `hi` (an end left out where it is open: the completions of
    "54" are [54, 55)) meets the schema's [minimum, maximum] (exclusive bounds left out), and holds a
    multiple of `multipleOf` there."""
    low, low_open = _tighter(lo, open_lo, s.minimum, s.excl_min, 1)
    high, high_open = _tighter(hi, open_hi, s.maximum, s.excl_max, -1)
    if low > high or (low == high and (low_open or high_open)):
        return False
    if s.not_multiples:
        return _escapes(low, low_open, high, high_open, s)
    m = s.multiple_of
    if m is None or _infinite(low) or _infinite(high):
        return True
    if m.denominator == 1 and _whole(low) and _whole(high):  # the common case, in ints
        k, lo_i, hi_i = m.numerator, int(low), int(high)
        first_i = (lo_i // k + 1) * k if low_open else -(-lo_i // k) * k
        return first_i < hi_i or (first_i == hi_i and not high_open)
    low_f, high_f = _exact(low), _exact(high)
    first = math.floor(low_f / m) * m + m if low_open else math.ceil(low_f / m) * m
    return first < high_f or (first == high_f and not high_open)


def _escapes(low: End, low_open: bool, high: End, high_open: bool, s: Schema) -> bool:
    """Whether the (non-empty) interval holds a value of the schema's kind (a multiple of multipleOf, an
    integer, or any number) that is a multiple of none of its negated multipleOf values."""
    nots = s.not_multiples
    m = s.multiple_of
    if m is None and not _is_integer_only(s):
        if low != high:
            return True  # the reals between two numbers are not all multiples of anything
        return not _multiple_of_any(_exact(low), nots)
    step = m if m is not None else Fraction(1)
    if _multiple_of_any(step, nots):
        return False  # every candidate is a multiple of a refused one
    if _infinite(low) or _infinite(high):
        return True  # k * step escapes every refused multiple where k is 1 modulo all of them
    low_f, high_f = _exact(low), _exact(high)
    k = math.floor(low_f / step) + 1 if low_open else math.ceil(low_f / step)
    for _ in range(_ESCAPE_TRIES):
        value = k * step
        if value > high_f or (value == high_f and high_open):
            return False
        if not _multiple_of_any(value, nots):
            return True
        k += 1
    return True  # so many candidates that some escapes (a run of this many all refused is not seen)


def _multiple_of_any(value: Fraction, multiples: tuple[Fraction, ...]) -> bool:
    return any((value / m).denominator == 1 for m in multiples)


_ESCAPE_TRIES = 64


def _infinite(x: End) -> bool:
    return isinstance(x, float) and math.isinf(x)


def _whole(x: End) -> bool:
    """An integer, exactly (a float bound: one it holds exactly, as its repr reads it)."""
    if isinstance(x, int):
        return True
    if isinstance(x, Fraction):
        return x.denominator == 1
    return x.is_integer() and -_EXACT_INTEGERS < x < _EXACT_INTEGERS


def _exact(x: End) -> Fraction:
    """The value an end stands for; for a float bound, the decimal its shortest repr reads."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, int):
        return Fraction(x)
    return Fraction(int(x)) if _whole(x) else Fraction(repr(x))


_EXACT_INTEGERS = float(2**53)


def _tighter(end: End, end_open: bool, bound: float | None, bound_open: bool, side: int) -> tuple[End, bool]:
    """The stricter of an interval's end and the schema's bound on that side (side 1: the lower end,
    the larger wins; -1: the upper end, the smaller wins), and whether it is left out."""
    if bound is None or end * side > bound * side:
        return end, end_open
    if end == bound:
        return end, end_open or bound_open
    return bound, bound_open


def _fraction_ok(neg: bool, digits: str, frac: str, s: Schema) -> bool:
    """A prefix with fractional digits: some multiple of `multipleOf` must extend it exactly."""
    m = s.multiple_of
    if m is None:
        return True
    lo = Fraction(int(digits + frac), 10 ** len(frac))
    # completions lie in [lo, lo + 10**-len(frac)); for a negative number mirror the interval
    k = math.ceil(lo / m)
    return k * m < lo + Fraction(1, 10 ** len(frac)) and _finite_decimal(k * m)


def _finite_decimal(x: Fraction) -> bool:
    d = x.denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    return d == 1


def _prefix_ok(text: str, s: Schema) -> bool:
    m = _SHAPE.fullmatch(text)
    if m is None:
        return False
    digits, dot, frac, exp = m.group(1), m.group(2), m.group(3), m.group(4)
    if (dot or exp) and _is_integer_only(s):
        return False
    if digits and len(digits) > _integer_digit_limit(s):
        return False
    if frac and len(frac) > _fraction_digit_limit(s):
        return False
    if exp and len(exp.lstrip("eE+-")) > EXPONENT_DIGITS:
        return False
    if exp and _bounded(s):
        return False
    if not _bounded(s):
        return True
    neg = text.startswith("-")
    sign = -1 if neg else 1
    if digits is None:  # just "-"
        return _overlaps(-math.inf, 0, s)
    if dot:
        if not _fraction_ok(neg, digits, frac or "", s):
            return False
        places = 10 ** len(frac or "")
        lo: End = Fraction(int(digits + (frac or "")), places)
        hi: End = lo + Fraction(1, places)
        return _overlaps(-hi, -lo, s, open_lo=True) if neg else _overlaps(lo, hi, s, open_hi=True)
    value = int(digits)
    # the completions: the integer itself (and its decimals, up to the next integer, left out); then
    # the same with one, two, ... more digits; a point alone for integers
    intervals: list[tuple[End, End]] = [(value, value + (0 if _is_integer_only(s) else 1))]
    if value != 0:
        # one interval per count of further digits, as many as the digit cap leaves room for: past the
        # bounds' magnitude only an open side goes on, and only until an interval is wide enough to hold
        # a multiple (an open-ended interval here let a 19-digit prefix through whose every 20-digit
        # completion misses the multiple: a dead end at the cap)
        limit = max(abs(s.maximum or 0.0), abs(s.minimum or 0.0))
        open_side = (s.maximum is None and not neg) or (s.minimum is None and neg)
        room = _integer_digit_limit(s) - len(digits)
        wide = s.multiple_of if s.multiple_of is not None else Fraction(1)
        if s.not_multiples:  # wide enough that `_escapes` finds a candidate no refused value divides
            wide *= _ESCAPE_TRIES + 1
        scale = 10
        for _ in range(min(room, _MAX_EXTENSIONS)):
            intervals.append((value * scale, (value + 1) * scale))
            if value * scale > limit * 10 + 10 and (not open_side or scale >= wide):
                break
            scale *= 10
        else:
            if room > _MAX_EXTENSIONS and open_side:  # bounds past 10**40: the rest at once, as before
                intervals.append((value * scale, math.inf))
    for lo, hi in intervals:
        open_end = hi > lo  # a point (an integer-only prefix's own value) is closed
        if neg and _overlaps(sign * hi, sign * lo, s, open_lo=open_end):
            return True
        if not neg and _overlaps(lo, hi, s, open_hi=open_end):
            return True
    return False


@functools.lru_cache(maxsize=65536)
def number_chars(text: str, s: Schema) -> CharSet:
    """Characters that may follow the number prefix `text`."""
    ok = "".join(c for c in _CANDIDATES if _prefix_ok(text + c, s))
    return CharSet.of(ok) if ok else EMPTY


@functools.lru_cache(maxsize=65536)
def number_complete(text: str, s: Schema) -> bool:
    """Whether `text` is a whole number of the schema's type within its bounds."""
    m = _COMPLETE.fullmatch(text)
    if m is None or ((m.group(2) or m.group(3)) and _is_integer_only(s)):
        return False
    value = float(text)
    if s.not_multiples and _multiple_of_any(Fraction(text), s.not_multiples):
        return False
    mult = s.multiple_of
    if mult is not None:
        whole = mult.denominator == 1 and text.lstrip("-").isdigit()  # integers: `%`, not a Fraction parse
        if int(text) % mult.numerator if whole else (Fraction(text) / mult).denominator != 1:
            return False
    if s.minimum is not None and (value < s.minimum or (s.excl_min and value == s.minimum)):
        return False
    return not (s.maximum is not None and (value > s.maximum or (s.excl_max and value == s.maximum)))
