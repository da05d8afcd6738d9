"""Whether two compiled schemas can never accept the same value, by cheap sufficient tests.

A `oneOf` whose branches are pairwise disjoint is exactly an `anyOf`, so it needs no side-by-side
check (`json_checks`) and keeps the plain, fast parse. "False" only means "could not prove it".
Knows nothing of frames or vocabularies.
"""

from __future__ import annotations

import json

from tokenloom.constrain.charset import CharSet
from tokenloom.constrain.regex import DState, Regex
from tokenloom.constrain.schema_ir import Schema
from tokenloom.constrain.schema_merge import json_type

_OBJECT = CharSet.of("{")
_STRING = frozenset({"string"})
_MAX_PAIRS = 2_000  # product states explored before two patterns count as "could not prove"
_MAX_DEPTH = 4


def pairwise_disjoint(parts: tuple[Schema, ...]) -> bool:
    return all(disjoint(a, b) for i, a in enumerate(parts) for b in parts[i + 1 :])


def disjoint(a: Schema, b: Schema, depth: int = 0) -> bool:
    if depth > _MAX_DEPTH:
        return False
    return all(_alts_disjoint(x, y, depth) for x in a.alternatives() for y in b.alternatives())


def _alts_disjoint(x: Schema, y: Schema, depth: int) -> bool:
    shared = x.first_chars() & y.first_chars()
    if shared.is_empty():
        return True
    if x.combo is not None or y.combo is not None:
        return False
    if x.literals is not None and y.literals is not None:
        return not set(x.literals) & set(y.literals)
    if x.literals is not None or y.literals is not None:
        listed, other = (x, y) if x.literals is not None else (y, x)
        return _outside(listed.literals or (), other)
    if x.types == _STRING and y.types == _STRING:
        return x.regex is not None and y.regex is not None and _patterns_disjoint(x.regex, y.regex)
    if shared != _OBJECT:
        return False
    return _objects_disjoint(x, y, depth) or _objects_disjoint(y, x, depth)


def _objects_disjoint(x: Schema, y: Schema, depth: int) -> bool:
    """x and y differ on a property both require (a discriminator), or x is closed to a name y requires."""
    x_props, y_props = dict(x.props), dict(y.props)
    for name in x.required & y.required:
        if name in x_props and name in y_props and disjoint(x_props[name], y_props[name], depth + 1):
            return True
    closed = x.additional is None and not x.pattern_props
    return closed and any(name not in x_props for name in y.required)


def _outside(literals: tuple[str, ...], other: Schema) -> bool:
    """No listed value (JSON texts) is a string `other` could take, or of a type it has."""
    for text in literals:
        value = json.loads(text)
        kind = json_type(value)
        if kind == "integer" and "number" in other.types:
            return False
        if kind not in other.types:
            continue
        if not isinstance(value, str) or other.regex is None or other.regex.fullmatch(value):
            return False
    return True


def _patterns_disjoint(a: Regex, b: Regex) -> bool:
    """No string matches both (the product of the two automata reaches no pair of accepting states);
    False also when the product is too large to explore."""
    start = (a.initial, b.initial)
    seen = {start}
    todo = [start]
    while todo:
        da, db = todo.pop()
        if da.accepting and db.accepting:
            return False
        for lo in _cuts(da, db):
            c = chr(lo)
            if not (da.chars.contains_cp(lo) and db.chars.contains_cp(lo)):
                continue
            na, nb = da.step(c), db.step(c)
            if na is not None and nb is not None and (na, nb) not in seen:
                if len(seen) >= _MAX_PAIRS:
                    return False
                seen.add((na, nb))
                todo.append((na, nb))
    return True


def _cuts(da: DState, db: DState) -> list[int]:
    """The first code point of each range on which every edge of both states agrees."""
    cuts = {0}
    for d in (da, db):
        for state in d.states:
            for klass, _ in d.regex.nfa.edges[state]:
                for lo, hi in klass.ranges:
                    cuts.add(lo)
                    cuts.add(hi + 1)
    return sorted(c for c in cuts if c <= 0x10FFFF)
