"""Names an object must hold, against the names maxProperties leaves.

`not {"propertyNames": {"not": P}}` says some property name matches P. The checked `not` decides that
once the object ends, but with maxProperties the walk could spend the last names on others and reach
an object that can neither end nor take another name (JSONSchemaBench's object6 and notnames7/9: a dead
end). Here, for the patterns not met yet and the names left, are the patterns the next name must meet
so the rest can still be met by the names after it. Pruning only, and always a superset: a pattern set
too large to build, or not known to be empty, counts as one that some name meets.
"""

from __future__ import annotations

from functools import lru_cache

from tokenloom.constrain.regex import DState, Regex, shared_regex
from tokenloom.constrain.schema_ir import Schema
from tokenloom.constrain.schema_merge import both_patterns
from tokenloom.errors import GrammarError

MAX_MUSTS = 5  # patterns an object tracks (the names to cover are subsets of them: 2**5 at most)


MAX_NAME = 64  # chars: a name the names' pattern lets run longer is not tracked (see `names_bounded`)


def names_bounded(pattern: str | None) -> bool:
    """Whether propertyNames' pattern caps a name's length at MAX_NAME chars. A tracked name is kept
    whole while it is written (a state per name, not per pattern state), which only short names afford."""
    if pattern is None:
        return False
    try:
        regex = shared_regex(pattern, search=True)
    except GrammarError:
        return False
    if regex.lenient:
        return False
    frontier = {regex.initial}
    for _ in range(MAX_NAME):
        after: set[DState] = set()
        for d in frontier:
            for k in regex.classes_within(d.chars):
                t = d.step_class_index(k)
                if t is not None:
                    after.add(t)
        if not after:
            return True
        frontier = after
    return False


@lru_cache(maxsize=1 << 12)
def _musts(schema: Schema) -> tuple[Regex, ...] | None:
    """The musts as search regexes (None: one cannot be built, so none is tracked)."""
    try:
        return tuple(shared_regex(p, search=True) for p in schema.name_musts)
    except GrammarError:
        return None


def tracked(schema: Schema) -> bool:
    """Whether the names of this object are matched against its musts (a bound on names, musts known)."""
    return bool(schema.name_musts) and schema.max_props is not None and _musts(schema) is not None


def all_bits(schema: Schema) -> int:
    return (1 << len(schema.name_musts)) - 1


@lru_cache(maxsize=1 << 14)
def met_by(schema: Schema, name: str) -> int:
    """The musts `name` meets, as bits."""
    regexes = _musts(schema) or ()
    return sum(1 << i for i, r in enumerate(regexes) if r.fullmatch(name))


def meeting_all(names: str | None, musts: list[str]) -> tuple[str, Regex] | None:
    """One pattern (and its regex) for a name matching `names` (propertyNames' pattern, if any) and every
    pattern of `musts` (at least one), as look-aheads; None when it cannot be built exactly (too large,
    or a look-around dropped)."""
    parts = list(musts)
    pattern = names if names is not None else parts.pop(0)
    for part in parts:
        pattern = both_patterns(pattern, part)
    try:
        regex = shared_regex(pattern, search=True)
    except GrammarError:
        return None
    return None if regex.lenient else (pattern, regex)


@lru_cache(maxsize=1 << 12)
def _conjunction(schema: Schema, bits: int) -> Regex | None:
    """One regex for a name meeting every must in `bits` and propertyNames' pattern (None: too large)."""
    joined = meeting_all(schema.names_pattern, [p for i, p in enumerate(schema.name_musts) if bits >> i & 1])
    return None if joined is None else joined[1]


def _some_name_meets(schema: Schema, bits: int) -> bool:
    regex = _conjunction(schema, bits)
    return regex is None or regex.initial.accepting or not regex.initial.chars.is_empty()


@lru_cache(maxsize=1 << 14)
def _coverable(schema: Schema, bits: int, names: int) -> bool:
    """Whether `names` names can meet every must in `bits` between them."""
    if bits == 0:
        return True
    if names <= 0:
        return False
    low = bits & -bits
    rest = bits & ~low
    sub = rest
    while True:  # every subset of `bits` holding its lowest must: one name meets those
        group = sub | low
        if _some_name_meets(schema, group) and _coverable(schema, bits & ~group, names - 1):
            return True
        if sub == 0:
            return False
        sub = (sub - 1) & rest


@lru_cache(maxsize=1 << 12)
def gate(schema: Schema, unmet: int, names: int) -> tuple[Regex, ...] | None:
    """What the next name must match when `names` names are left (this one included) and the musts
    `unmet` are not met yet: one of these regexes (an empty tuple: no name will do), or None when any
    name leaves the rest coverable."""
    if names <= 0 or _coverable(schema, unmet, names - 1):
        return None
    chosen: list[int] = []
    subsets = sorted((b for b in range(1, unmet + 1) if b & unmet == b), key=int.bit_count)
    for group in subsets:
        if any(c & group == c for c in chosen):
            continue  # a smaller group already does: a name meeting this one meets that one
        if _some_name_meets(schema, group) and _coverable(schema, unmet & ~group, names - 1):
            chosen.append(group)
    regexes = [_conjunction(schema, group) for group in chosen]
    if any(r is None for r in regexes):
        return None
    return tuple(r for r in regexes if r is not None)


_STATES: dict[tuple[tuple[Regex, ...], str], tuple[DState, ...]] = {}
_MAX_STATES = 1 << 16


def states(gates: tuple[Regex, ...], key: str) -> tuple[DState, ...]:
    """The states the name `key` leaves the gate regexes in (those still able to match). A name grows
    one char at a time, so the state of its prefix is usually known."""
    known = _STATES.get((gates, key))
    if known is not None:
        return known
    before = _STATES.get((gates, key[:-1])) if key else None
    if before is not None:
        out = _step(before, key[-1])
    else:
        out = tuple(r.initial for r in gates)
        for c in key:
            out = _step(out, c)
    if len(_STATES) >= _MAX_STATES:
        _STATES.clear()
    _STATES[(gates, key)] = out
    return out


def _step(current: tuple[DState, ...], c: str) -> tuple[DState, ...]:
    out: list[DState] = []
    for d in current:
        t = d.step(c)
        if t is not None:
            out.append(t)
    return tuple(out)
