"""`not` over object keywords rewritten into plain branches, so no side-by-side parse is needed.

`not {"required": [k, ...], "properties": {k: S, ...}}` holds exactly when the value is an object that
lacks one required name, or holds one listed name whose value fails its schema (plus every non-object
when the negated schema says `"type": "object"`). Each such case is a branch merged with the rest of the
schema: a missing name is `properties: {k: false}`, a failing value is `not S` pushed down to that one
value, where it is decided within the value; `not` of values next to listed values keeps the others,
`not (not S)` is S, and `not {"type": ...}` is the other types.
Knows nothing of IR nodes, frames or vocabularies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tokenloom.constrain.json_equality import value_key
from tokenloom.constrain.schema_merge import has_constraints

_ANNOTATIONS = frozenset(
    {"description", "title", "$comment", "default", "examples", "$schema", "$id", "_merged"}
)
_NEGATABLE = _ANNOTATIONS | {"type", "properties", "required"}
_NOT_OBJECT = ["array", "boolean", "integer", "null", "number", "string"]
_ALL_TYPES = frozenset({*_NOT_OBJECT, "object"})
_FEW_VALUES: dict[Any, list[Any]] = {"boolean": [True, False], "null": [None]}


NOT_MULTIPLE_OF = "_not_multiple_of"  # a merged dict's negated multipleOf values (schema_ir.not_multiples)
SOME_NAMES = "_some_names"  # a merged dict's patterns some property name must match (schema_ir.name_musts)
MAX_BRANCHES = 16  # branches a negated anyOf may multiply into before the checked `not` is kept
Flatten = Callable[[dict[str, Any]], dict[str, Any]]


def negated_branches(negated: Any, main: dict[str, Any], flatten: Flatten) -> list[list[Any]] | None:
    """The branches whose union is `not negated` next to `main`, each a list of schemas to merge with
    `main`; None when `negated` uses anything else than object names and values, or when it would
    take too many branches (the checked `not` stays then).

    `not (A or B)` is `not A and not B`: every pair of their branches. `flatten` inlines `$ref`/`allOf`."""
    out: list[list[Any]] = [[]]
    for leaf in _disjuncts(negated, flatten, 0):
        if leaf is None:
            return None
        branches = _leaf_branches(leaf, main)
        if branches is None:
            return None
        out = [[*mine, b] for mine in out for b in branches]
        if len(out) > MAX_BRANCHES:
            return None
    return out


def negated_name_schemas(negated: Any, flatten: Flatten) -> list[Any]:
    """For each disjunct of `negated` that says only `propertyNames: S` (of an object): S. Its
    negation holds of an object only where some name fails S, so `not negated` asks for such a name
    (where S is `not P`: a name matching P). The `not` stays checked; these only tell the object."""
    out = []
    for leaf in _disjuncts(negated, flatten, 0):
        if not isinstance(leaf, dict) or set(leaf) - _ANNOTATIONS - {"type"} != {"propertyNames"}:
            continue
        if leaf.get("type", "object") in ("object", ["object"]):
            out.append(leaf["propertyNames"])
    return out


def _disjuncts(s: Any, flatten: Flatten, depth: int) -> list[Any]:
    """The schemas of a (nested) anyOf, flattened; [None] for a shape this module does not rewrite."""
    if isinstance(s, dict):
        s = flatten(s)
        if set(s) - _ANNOTATIONS == {"anyOf"} and isinstance(s["anyOf"], list) and s["anyOf"] and depth < 8:
            return [d for sub in s["anyOf"] for d in _disjuncts(sub, flatten, depth + 1)]
    return [s]


def _leaf_branches(negated: Any, main: dict[str, Any]) -> list[Any] | None:
    """`not negated` for one schema over object names and values, as branches (None: not such a one).

    A branch naming a value `main` does not declare is not written: merged, that name would become a
    declared property and lose `main`'s rule for undeclared names and its place in the key order."""
    if negated is True:
        return []
    if negated is False:
        return [{}]
    if not isinstance(negated, dict):
        return None
    if not has_constraints(negated):
        return []
    if set(negated) - _ANNOTATIONS == {"not"}:
        return [negated["not"]]  # not (not S) is S
    if set(negated) - _ANNOTATIONS in ({"const"}, {"enum"}):
        return _other_values(negated, main)
    if set(negated) - _ANNOTATIONS == {"type"}:
        return _other_types(negated["type"])
    if set(negated) - _ANNOTATIONS == {"multipleOf"}:
        # multipleOf holds for every value that is no number: its negation is a number, and no multiple
        m = negated["multipleOf"]
        if isinstance(m, bool) or not isinstance(m, int | float) or m <= 0:
            return None
        return [{"type": ["integer", "number"], NOT_MULTIPLE_OF: [m]}]
    if any(k not in _NEGATABLE for k in negated):
        return None
    typ = negated.get("type")
    if typ not in (None, "object", ["object"]):
        return None
    required = negated.get("required", [])
    props = negated.get("properties", {})
    if not isinstance(required, list) or not all(isinstance(k, str) for k in required):
        return None
    if not isinstance(props, dict):
        return None
    declared = main.get("properties")
    declared = declared if isinstance(declared, dict) else {}
    main_required = main.get("required")
    must_have = set(main_required) if isinstance(main_required, list) else set()
    branches: list[dict[str, Any]] = [] if typ is None else [{"type": _NOT_OBJECT}]
    for name in dict.fromkeys(required):
        if name not in must_have:  # the rest requires it: a branch without it has no value
            branches.append({"type": "object", "properties": {name: False}})
    for name, sub in props.items():
        if sub is True or (isinstance(sub, dict) and not has_constraints(sub)):
            continue  # every value satisfies it: no value fails it
        if name not in declared:
            return None
        failing: Any = True if sub is False else {"not": sub}
        branches.append({"type": "object", "required": [name], "properties": {name: failing}})
    return branches


def _other_values(negated: dict[str, Any], main: dict[str, Any]) -> list[dict[str, Any]] | None:
    """`not` of a const/enum next to a `main` that lists its own values: the values it leaves."""
    refused = [negated["const"]] if "const" in negated else negated["enum"]
    listed = [main["const"]] if "const" in main else main.get("enum")
    if listed is None:  # booleans and null can be listed: every value they have
        types = main.get("type")
        names = types if isinstance(types, list) else [types]
        if not names or not all(n in _FEW_VALUES for n in names):
            return None
        listed = [v for n in names for v in _FEW_VALUES[n]]
    if not isinstance(refused, list) or not isinstance(listed, list):
        return None
    keys = {value_key(v) for v in refused}
    return [{"enum": [v for v in listed if value_key(v) not in keys]}]


def _other_types(refused: Any) -> list[dict[str, Any]] | None:
    """`not {"type": ...}`: the other types (None for "integer" without "number": the numbers that are
    not integers are no type of their own)."""
    names = set(refused if isinstance(refused, list) else [refused])
    if not names <= _ALL_TYPES or ("integer" in names and "number" not in names):
        return None
    if "number" in names:
        names.add("integer")
    others = sorted(_ALL_TYPES - names)
    return [{"type": others}] if others else []
