"""Many if/then/else in one allOf, decided by the value of one property, as one chain of branches.

Nested one in another, n conditionals make 2^n branches, so json_schema.py nests at most MAX_CONDITIONS
of them. Real schemas hold more, of one kind: each `if` asks only about one same property D (whether it
is present, and which of some constants it is), through `properties`/`required` and `not`, `anyOf`,
`allOf`. Then D's value decides every `if` at once: D one of the constants, D another value, or D
absent. `value_chain` writes one branch per such case, each with the `then` or the `else` of every
conditional, as a chain of if/then/else whose conditions exclude each other: |constants| + 2 branches
however many conditionals there are. Knows nothing of IR nodes or parsing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tokenloom.constrain.formats import ANNOTATIONS
from tokenloom.constrain.json_equality import value_key
from tokenloom.constrain.schema_merge import json_type

# Where a value of D falls: ("value", constant), ("other",) for a value that is none of the constants,
# ("absent",) when the object does not hold D.
Case = tuple[Any, ...]
Test = Callable[[Case], bool]


def _same(a: Any, b: Any) -> bool:
    return value_key(a) == value_key(b)


def _types_of(declared: Any) -> set[str]:
    names = set(declared) if isinstance(declared, list) else {declared}
    return names | {"integer"} if "number" in names else names


def _among(values: list[Any]) -> Test:
    """A `properties` entry's test: D, if present, is one of `values` (so not some other value)."""
    return lambda case: case[0] == "absent" or (case[0] == "value" and any(_same(case[1], v) for v in values))


def _negated(test: Test) -> Test:
    return lambda case: not test(case)


def _combined(tests: list[Test], combine: Callable[[Any], bool]) -> Test:
    return lambda case: combine(t(case) for t in tests)


class _Reader:
    """Reads `if` schemas as tests of one property's case; `None` from `test` once one is of another kind."""

    def __init__(self, inline: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self.inline = inline  # $ref resolved into a plain dict
        self.target: str | None = None
        self.constants: list[Any] = []

    def _property(self, name: str) -> bool:
        if self.target not in (None, name):
            return False
        self.target = name
        return True

    def _values(self, schema: Any) -> list[Any] | None:
        """The constants a `properties` entry allows (`const`, or an `enum` of scalars)."""
        if not isinstance(schema, dict) or set(schema) - {"const", "enum", "type", *ANNOTATIONS}:
            return None
        if "const" in schema and "enum" not in schema:
            values = [schema["const"]]
        elif "enum" in schema and "const" not in schema and isinstance(schema["enum"], list):
            values = schema["enum"]
        else:
            return None
        if not all(isinstance(v, (str, int, float, bool)) or v is None for v in values):
            return None
        declared = schema.get("type")
        if declared is not None and not all(json_type(v) in _types_of(declared) for v in values):
            return None  # a value its own `type` refuses: left to the general way
        for v in values:
            if not any(_same(v, c) for c in self.constants):
                self.constants.append(v)
        return values

    def test(self, schema: Any) -> Test | None:
        if schema is True or schema == {}:
            return lambda _case: True
        if not isinstance(schema, dict):
            return None
        if "$ref" in schema:
            schema = self.inline(schema)
        keys = set(schema) - ANNOTATIONS
        if keys - {"properties", "required", "type", "not", "anyOf", "allOf"}:
            return None
        if schema.get("type", "object") not in ("object", ["object"]):
            return None  # the chain is only built where the value is an object
        tests: list[Test] = []
        props = schema.get("properties", {})
        if not isinstance(props, dict) or len(props) > 1:
            return None
        for name, allowed in props.items():
            values = self._values(allowed)
            if values is None or not self._property(name):
                return None
            tests.append(_among(values))
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(
            isinstance(n, str) and self._property(n) for n in required
        ):
            return None
        if required:
            tests.append(lambda case: case[0] != "absent")
        if "not" in schema:
            inner = self.test(schema["not"])
            if inner is None:
                return None
            tests.append(_negated(inner))
        for kw, combine in (("anyOf", any), ("allOf", all)):
            if kw not in schema:
                continue
            subs = schema[kw]
            if not isinstance(subs, list) or not subs:
                return None
            parts = [self.test(sub) for sub in subs]
            if any(p is None for p in parts):
                return None
            tests.append(_combined([p for p in parts if p is not None], combine))
        return lambda case: all(t(case) for t in tests)


def value_chain(
    conditionals: list[dict[str, Any]], inline: Callable[[dict[str, Any]], dict[str, Any]]
) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """The dicts holding `if` (with `then`/`else`) as one if/then/else chain over the cases of the one
    property their conditions ask about, and the new dicts it made (to keep alive). For objects only:
    the caller makes sure the value is one (a `properties`/`required` test holds for any other value).
    None when some condition asks about anything else."""
    reader = _Reader(inline)
    read = [reader.test(d["if"]) for d in conditionals]
    tests = [t for t in read if t is not None]
    if reader.target is None or len(tests) < len(read):
        return None
    target, constants = reader.target, reader.constants

    def branch(case: Case) -> dict[str, Any]:
        return {
            "allOf": [
                d.get("then", True) if test(case) else d.get("else", True)
                for d, test in zip(conditionals, tests, strict=True)
            ]
        }

    made: list[dict[str, Any]] = []
    chain = branch(("absent",))
    made.append(chain)
    # outermost first: each constant, then "present" (so another value), then absent (the innermost else)
    cases: list[tuple[dict[str, Any], Case]] = [
        ({"properties": {target: {"const": v}}, "required": [target]}, ("value", v)) for v in constants
    ]
    cases.append(({"required": [target]}, ("other",)))
    for condition, case in reversed(cases):
        then = branch(case)
        chain = {"if": condition, "then": then, "else": chain}
        made.extend((condition, then, chain))
    return chain, made
