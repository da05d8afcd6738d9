"""`allOf` of two flattened schema dicts, as one dict: the compiler's approximation of an intersection.

Properties and required names are united, bounds take the stricter side, enum/const keep the common
values, type lists intersect. Knows nothing of IR nodes or frames.
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from typing import Any

from tokenloom.errors import GrammarError


def _values(s: dict[str, Any]) -> list[Any]:
    if "const" in s:
        return [s["const"]]
    return s["enum"] if isinstance(s.get("enum"), list) else []


def _common_values(a: dict[str, Any], b: dict[str, Any]) -> list[Any]:
    """allOf of two enum/const lists: the values in both (compared as JSON texts)."""
    keys = {json.dumps(v, sort_keys=True) for v in _values(b)}
    return [v for v in _values(a) if json.dumps(v, sort_keys=True) in keys]


# Keywords holding one subschema that every value (item, name, extra property) must meet: in both dicts,
# it must meet both.
_BOTH_SCHEMAS = ("items", "additionalItems", "additionalProperties", "propertyNames", "unevaluatedItems")


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _positive(v: Any) -> bool:
    return _number(v) and v > 0


def _common_multiple(a: float, b: float) -> float:
    """The least common multiple of two positive multipleOf values (a multiple of both is a multiple of
    it), decimals included: of a/b and c/d in lowest terms it is lcm(a, c) / gcd(b, d)."""
    fa, fb = decimal_fraction(a), decimal_fraction(b)
    both = Fraction(math.lcm(fa.numerator, fb.numerator), math.gcd(fa.denominator, fb.denominator))
    return int(both) if both.denominator == 1 else float(both)


def decimal_fraction(v: float) -> Fraction:
    """The exact value a JSON number stands for (a float as the decimal its shortest repr reads)."""
    return Fraction(repr(v)) if isinstance(v, float) else Fraction(v)


def _both_by_name(mine: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    """Subschemas by name (properties, patternProperties) from two parts: a name in both must meet both."""
    out = dict(mine)
    for name, sub in theirs.items():
        out[name] = {"allOf": [out[name], sub]} if name in out and out[name] != sub else sub
    return out


_LOOK_START = ("^(?=", "^(?!")


def both_patterns(first: str, second: str, *, whole: bool = False) -> str:
    """One `pattern` (search semantics) matching where both do: `second` becomes a leading look-ahead
    of `first` (which the regex compiler takes exactly, beside look-aheads `first` leads with itself).
    whole: `second` must match the whole string (a `format`'s regex), not just somewhere in it."""
    if second.startswith(_LOOK_START) and not first.startswith(_LOOK_START) and not whole:
        first, second = second, first  # the one leading with look-aheads stays the body
    look = f"(?=(?:{second})$)" if whole else f"(?=[\\s\\S]*?(?:{second}))"
    if first.startswith(_LOOK_START):
        return "^" + look + first[1:]
    return f"^{look}[\\s\\S]*?(?:{first})"


def _asks_of(part: dict[str, Any], name: str) -> list[Any] | None:
    """What `part` asks of the value of a property it does not name itself: its patternProperties that
    match the name, else its additionalProperties (nothing: []). None when a pattern cannot be read."""
    matched = []
    pats = part.get("patternProperties")
    for pattern, sub in (pats if isinstance(pats, dict) else {}).items():
        try:
            if re.search(pattern, name):
                matched.append(sub)
        except (re.error, TypeError):
            return None
    if matched:
        return matched
    extra = part.get("additionalProperties")
    return [extra] if extra is not None and extra is not True else []


def _cross_named(a: dict[str, Any], b: dict[str, Any]) -> dict[str, list[Any]]:
    """For each property one part names and the other does not, what the other asks of its value: merged
    into one dict, the names of `a` would escape `b`'s additionalProperties (which there only judges the
    names `b` itself leaves out), and an `additionalProperties: false` part let `a`'s names through."""
    out: dict[str, list[Any]] = {}
    for mine, other in ((a, b), (b, a)):
        props, theirs = mine.get("properties"), other.get("properties")
        if not isinstance(props, dict):
            continue
        for name in props:
            if isinstance(theirs, dict) and name in theirs:
                continue
            asked = _asks_of(other, name)
            if asked:
                out.setdefault(name, []).extend(asked)
    return out


def merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """allOf of two flattened schemas, approximately: unions for properties/required, stricter bounds."""
    cross = _cross_named(a, b)
    out = dict(a)
    for k, v in b.items():
        if k in ("const", "enum") and ("const" in out or "enum" in out):
            out["enum"] = _common_values(out, b)
            out.pop("const", None)
            out["_merged"] = True
        elif k not in out:
            out[k] = v
        elif k in ("properties", "patternProperties") and isinstance(v, dict) and isinstance(out[k], dict):
            out[k] = _both_by_name(out[k], v)
        elif k == "not":  # neither a nor b: not (a or b)
            out[k] = {"anyOf": [out[k], v]}
        elif k == "required" and isinstance(v, list) and isinstance(out[k], list):
            out[k] = list(dict.fromkeys(out[k] + v))
        elif k == "type":
            ta = set(out[k] if isinstance(out[k], list) else [out[k]])
            tb = set(v if isinstance(v, list) else [v])
            if ("number" in ta and "integer" in tb) or ("number" in tb and "integer" in ta):
                ta |= {"integer"}
                tb |= {"integer"}
            out[k] = sorted(ta & tb)
            out["_merged"] = True
        elif k in ("minimum", "minLength", "minItems", "minProperties") and isinstance(v, int | float):
            out[k] = max(out[k], v)
        elif k in ("maximum", "maxLength", "maxItems", "maxProperties") and isinstance(v, int | float):
            out[k] = min(out[k], v)
        elif k == "multipleOf" and _positive(v) and _positive(out[k]):
            out[k] = _common_multiple(out[k], v)
        elif k in ("_not_multiple_of", "_some_names") and isinstance(v, list) and isinstance(out[k], list):
            out[k] = out[k] + v
        elif k == "exclusiveMinimum" and _number(v) and _number(out[k]):
            out[k] = max(out[k], v)
        elif k == "exclusiveMaximum" and _number(v) and _number(out[k]):
            out[k] = min(out[k], v)
        elif k == "pattern" and isinstance(v, str) and isinstance(out[k], str) and v != out[k]:
            out[k] = both_patterns(out[k], v)
        elif k == "uniqueItems" and isinstance(v, bool) and isinstance(out[k], bool):
            out[k] = out[k] or v
        elif k in _BOTH_SCHEMAS and out[k] != v and not isinstance(v, list) and not isinstance(out[k], list):
            out[k] = {"allOf": [out[k], v]}
        elif k in ("anyOf", "oneOf") and k in out and isinstance(v, list) and isinstance(out[k], list):
            pairs = [{"allOf": [x, y]} for x in out[k] for y in v]
            if len(pairs) > 256:
                raise GrammarError("allOf of anyOf lists is too large to combine")
            out[k] = pairs
        else:
            out[k] = v
    if cross:
        props = dict(out["properties"])
        for name, asked in cross.items():
            props[name] = {"allOf": [props[name], *asked]}
        out["properties"] = props
    return out


def json_type(v: Any) -> str:
    """The JSON Schema type name of a Python JSON value (integral floats count as integers)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer()):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}.get(type(v), "object")


def has_constraints(base: dict[str, Any]) -> bool:
    """Whether a schema dict says anything beyond annotations and definitions."""
    return any(
        k
        not in (
            "description",
            "title",
            "$comment",
            "default",
            "examples",
            "$schema",
            "$id",
            "$defs",
            "definitions",
        )
        for k in base
    )
