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
    return s.minimum is not None or s.maximum is not None or s.multiple_of is not None


def _overlaps(lo: float, hi: float, s: Schema) -> bool:
    """Whether [lo, hi] meets [minimum, maximum] (closed; exclusivity is checked on completion), and
    holds a multiple of `multipleOf` there."""
    if not ((s.maximum is None or lo <= s.maximum) and (s.minimum is None or hi >= s.minimum)):
        return False
    m = s.multiple_of
    if m is None or math.isinf(hi - lo):
        return True
    lo_f = Fraction(repr(max(lo, s.minimum))) if s.minimum is not None else Fraction(repr(lo))
    hi_f = Fraction(repr(min(hi, s.maximum))) if s.maximum is not None else Fraction(repr(hi))
    return math.ceil(lo_f / m) * m <= hi_f


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
    sign = -1.0 if neg else 1.0
    if digits is None:  # just "-"
        return _overlaps(-math.inf, 0.0, s)
    if dot:
        if not _fraction_ok(neg, digits, frac or "", s):
            return False
        base = float(f"{digits}.{frac or '0'}")
        width = 10.0 ** -len(frac or "")
        lo, hi = base, base + width
        return _overlaps(-hi, -lo, s) if neg else _overlaps(lo, hi, s)
    value = int(digits)
    intervals = [(float(value), float(value) + (0.0 if _is_integer_only(s) else 1.0))]
    if value != 0:
        limit = max(abs(s.maximum or 0.0), abs(s.minimum or 0.0))
        scale = 10
        while value * scale <= limit * 10 + 10 and scale < 10**40:
            intervals.append((float(value * scale), float((value + 1) * scale)))
            scale *= 10
        if (s.maximum is None and not neg) or (s.minimum is None and neg):
            intervals.append((float(value * scale), math.inf))
    for lo, hi in intervals:
        if (neg and _overlaps(sign * hi, sign * lo, s)) or (not neg and _overlaps(lo, hi, s)):
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
    if s.multiple_of is not None and (Fraction(text) / s.multiple_of).denominator != 1:
        return False
    if s.minimum is not None and (value < s.minimum or (s.excl_min and value == s.minimum)):
        return False
    return not (s.maximum is not None and (value > s.maximum or (s.excl_max and value == s.maximum)))
