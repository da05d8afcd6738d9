"""Whether two compiled schemas can never accept the same value, by cheap sufficient tests.

A `oneOf` whose branches are pairwise disjoint is exactly an `anyOf`, so it needs no side-by-side
check (`json_checks`) and keeps the plain, fast parse. "False" only means "could not prove it".
Knows nothing of frames or vocabularies.
"""

from __future__ import annotations

from tokenloom.constrain.charset import CharSet
from tokenloom.constrain.schema_ir import Schema

_OBJECT = CharSet.of("{")
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
    if shared != _OBJECT or x.literals is not None or y.literals is not None:
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
