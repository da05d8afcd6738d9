"""`not` over object names and values, rewritten into plain branches (`negation`), and the bounds a
checked combination exposes as a free run: accepted values, and masks equal to brute force."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.unit.constrain.chars import schema_accepts
from tests.unit.constrain.conftest import Greedy, mask_ids
from tests.unit.constrain.test_vocab_masks import _brute_force
from tokenloom.constrain.api import compile
from tokenloom.constrain.json_schema import SchemaCompiler
from tokenloom.constrain.schema_ir import Schema
from tokenloom.engine.vocab import Vocab

# The shape of schemastore's chrome-manifest: a condition on one property's const, dependencies whose
# branches forbid names, a bounded string everyone shares. It took 32 s for one mask inside that string.
CONDITIONAL: dict[str, Any] = {
    "type": "object",
    "properties": {
        "version": {"enum": [2, 3]},
        "name": {"type": "string", "maxLength": 12},
        "page": {"type": "string"},
        "action": {"type": "string"},
    },
    "required": ["version"],
    "if": {"properties": {"version": {"const": 3}}},
    "then": {"not": {"required": ["page"]}},
    "else": {"not": {"anyOf": [{"required": ["action"]}, {"required": ["page", "name"]}]}},
    "dependencies": {"page": {"not": {"required": ["action"]}}},
}


def _both(schema: Any, value: Any) -> bool:
    compact = schema_accepts(schema, json.dumps(value, separators=(",", ":")))
    pretty = schema_accepts(schema, json.dumps(value, indent=2))
    assert compact == pretty, value
    return compact


def _combos(schema: Any) -> int:
    """How many checked combinations the compiled schema holds."""
    root = SchemaCompiler(schema).compile()
    seen: set[Schema] = set()
    todo = [root]
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(n.children())
    return sum(n.combo is not None for n in seen)


def test_not_required_forbids_the_name() -> None:
    s = {"type": "object", "not": {"required": ["a", "b"]}}
    assert _combos(s) == 0
    assert _both(s, {}) and _both(s, {"a": 1}) and _both(s, {"b": 1, "c": 2})
    assert not _both(s, {"a": 1, "b": 2}) and not _both(s, {"b": 1, "a": 2})
    assert not _both({"not": {"required": ["a"]}}, "text")  # a string satisfies `required`: refused


def test_not_of_a_typed_object_lets_other_types_through() -> None:
    s = {"not": {"type": "object", "required": ["a"]}}
    assert _combos(s) == 0
    assert _both(s, "text") and _both(s, 3) and _both(s, [1]) and _both(s, {"b": 1})
    assert not _both(s, {"a": 1})


def test_not_of_a_property_value_is_decided_on_that_value() -> None:
    s = {
        "type": "object",
        "properties": {"v": {"type": "integer"}, "w": {"type": "string"}},
        "not": {"properties": {"v": {"const": 3}}},
    }
    assert _combos(s) == 1  # only `not {"const": 3}` on the value of "v" stays checked
    assert _both(s, {"v": 2}) and _both(s, {"v": 33, "w": "x"})
    assert not _both(s, {"v": 3}) and not _both(s, {"v": 3, "w": "x"}) and not _both(s, {"w": "x"})


def test_not_of_values_next_to_listed_values_keeps_the_others() -> None:
    s = {"enum": [1, 2.0, [3.0], "x"], "not": {"enum": [2, [3], "y"]}}
    assert _combos(s) == 0
    assert _both(s, 1) and _both(s, "x")
    assert not _both(s, 2) and not _both(s, [3]) and not _both(s, "y")


def test_double_negation_of_a_condition() -> None:
    s = {
        "type": "object",
        "properties": {"w": {"type": "boolean"}, "n": {"type": "integer"}},
        "if": {"not": {"properties": {"w": {"const": False}}}},
        "then": {"required": ["n"]},
    }
    assert _combos(s) <= 1  # at most `not {"const": false}` on the value of "w"
    assert _both(s, {"w": False}) and _both(s, {"w": True, "n": 1}) and _both(s, {"n": 1}) and _both(s, {})
    assert not _both(s, {"w": True})  # w is not false: the condition holds and n is required


def test_not_of_types_and_of_booleans() -> None:
    no_string = {"not": {"type": "string"}}
    assert _combos(no_string) == 0
    assert _both(no_string, 1) and _both(no_string, None) and _both(no_string, {"a": "b"})
    assert not _both(no_string, "a")
    no_number = {"not": {"type": "number"}}
    assert _combos(no_number) == 0
    assert not _both(no_number, 1) and not _both(no_number, 1.5) and _both(no_number, "1")
    no_integer = {"not": {"type": "integer"}}  # 1.5 is a number but no integer: stays checked
    assert _combos(no_integer) == 1
    assert _both(no_integer, 1.5) and not _both(no_integer, 1)
    not_true = {"type": "boolean", "not": {"const": True}}
    assert _combos(not_true) == 0
    assert _both(not_true, False) and not _both(not_true, True)


def test_not_over_undeclared_names_stays_checked() -> None:
    s = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "not": {"properties": {"z": {"type": "string"}}},
    }
    assert _combos(s) == 1  # "z" is not declared: the side-by-side check stays
    assert _both(s, {"a": 1, "z": 2}) and _both(s, {"z": None})
    assert not _both(s, {"a": 1}) and not _both(s, {"a": 1, "z": "s"})


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ({"version": 3, "name": "n", "action": "x"}, True),
        ({"version": 3, "name": "n", "page": "p"}, False),  # then: no page
        ({"version": 2, "name": "n", "page": "p"}, False),  # else: not page and name
        ({"version": 2, "page": "p"}, True),
        ({"version": 2, "action": "x"}, False),  # else: no action
        ({"version": 2, "name": "n"}, True),
        ({"version": 3, "page": "p", "action": "x"}, False),  # page forbids action
    ],
)
def test_conditional_manifest_shape(value: dict[str, Any], valid: bool) -> None:
    assert _combos(CONDITIONAL) == 0
    assert _both(CONDITIONAL, value) == valid


NOT_NAMES = {
    "type": "object",
    "maxProperties": 1,
    "allOf": [
        {"not": {"propertyNames": {"not": {"pattern": "a5b"}}}},
        {"not": {"propertyNames": {"not": {"pattern": "(^[^5]*$)|7"}}}},
    ],
}


@pytest.mark.parametrize(
    ("schema", "prefix"),
    [
        (CONDITIONAL, '{"version": 3, "name": "ab'),
        (CONDITIONAL, '{"version": 2, "'),
        (CONDITIONAL, '{"version": '),
        (
            {
                "type": "object",
                "properties": {"v": {"type": "integer"}},
                "not": {"properties": {"v": {"const": 3}}},
            },
            '{"v": ',
        ),
        # the bound of a combination's run: a part that dies inside it must not cut longer tokens
        (
            {
                "oneOf": [
                    {"type": "string", "maxLength": 3},
                    {"type": "string", "maxLength": 10, "minLength": 2},
                ]
            },
            '"',
        ),
        ({"type": "string", "maxLength": 10, "not": {"type": "string", "maxLength": 3}}, '"'),
        ({"type": "string", "not": {"type": "string", "maxLength": 3}}, '"a'),
        # a `not` whose names take a narrower run than the free names beside it (JSONSchemaBench's
        # notnames): the run is the free names' own, stateful, and the veto still holds where a name ends
        (NOT_NAMES, '{"'),
        (NOT_NAMES, '{"xa5'),
        (NOT_NAMES, '{"a5b'),
        ({"type": "string", "not": {"pattern": "^a5b"}}, '"a5'),
    ],
)
def test_masks_equal_brute_force(schema: dict[str, Any], prefix: str, vocab: Vocab, greedy: Greedy) -> None:
    c = compile({"json_schema": schema}, vocab)
    assert greedy.tokens(c, prefix) is not None
    assert mask_ids(c.allowed()) == _brute_force(c, vocab)  # type: ignore[arg-type]


def test_a_value_that_can_take_no_more_chars_must_still_end_well() -> None:
    """At 20 digits (the digit cap) a number takes no more chars: the checked `not` took that as the end of
    a valid value whether or not the main part could end there, so any 20-digit number got through."""
    schema = {"type": "number", "allOf": [{"multipleOf": 429}, {"not": {"multipleOf": 8}}]}
    assert not schema_accepts(schema, "12345678901234567890")  # not a multiple of 429
    assert schema_accepts(schema, str(429 * 10**17 + 429))  # 20 digits, a multiple of 429, not of 8
    assert not schema_accepts(schema, str(429 * 8 * 10**16))  # 20 digits, a multiple of 429 and of 8


def test_not_multiple_of_is_decided_inside_the_number() -> None:
    """`not: {multipleOf: m}` is a number that is no multiple of m (multipleOf holds for every value
    that is no number, so those fail the `not`), decided by the number's own prefixes: no side-by-side
    parse that could only veto once the number had ended (allany7 reached dead ends at the digit cap)."""
    schema = {"not": {"multipleOf": 2}}
    assert schema_accepts(schema, "3")
    assert schema_accepts(schema, "2.5")
    assert not schema_accepts(schema, "4")
    assert not schema_accepts(schema, '"abc"')
    assert not schema_accepts(schema, "null")
    node = SchemaCompiler({"type": "integer", "not": {"multipleOf": 2}}).compile()
    assert all(alt.combo is None for alt in node.alternatives())
    assert [alt.not_multiples for alt in node.alternatives() if alt.not_multiples] != []
