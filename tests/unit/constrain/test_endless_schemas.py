"""Schemas whose values never end ($ref cycles with no way out) are refused at compile time; optional ways
into such a cycle are closed, so generation cannot wander into it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.constrain.chars import schema_accepts
from tokenloom.errors import GrammarError

LOOP = {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/loop"}}


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
        {"type": "object", "properties": {"x": {"$ref": "#"}}, "required": ["x"]},
        {"anyOf": [{"$ref": "#"}, {"type": "array", "items": {"$ref": "#"}, "minItems": 1}]},
        {"$defs": {"loop": LOOP}, "$ref": "#/$defs/loop"},
        {
            "$defs": {
                "a": {"type": "object", "required": ["b"], "properties": {"b": {"$ref": "#/$defs/b"}}},
                "b": {"type": "array", "minItems": 2, "items": {"$ref": "#/$defs/a"}},
            },
            "$ref": "#/$defs/a",
        },
    ],
)
def test_a_schema_with_no_finite_value_is_refused(schema: Any) -> None:
    with pytest.raises(GrammarError, match=r"admits no (finite )?value") as refused:
        schema_accepts(schema, "{}")
    assert refused.value.param is not None


def test_recursive_schemas_that_can_end_still_compile() -> None:
    tree = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#"}}},
        "required": ["name"],
    }
    assert schema_accepts(tree, '{"name": "a", "kids": [{"name": "b", "kids": []}]}')
    assert schema_accepts({"type": "object", "properties": {"x": {"$ref": "#"}}}, '{"x": {"x": {}}}')


def test_optional_ways_into_an_endless_cycle_are_closed() -> None:
    schema = {
        "$defs": {"loop": LOOP},
        "type": "object",
        "properties": {"ok": {"type": "string"}, "bad": {"$ref": "#/$defs/loop"}},
    }
    assert schema_accepts(schema, '{"ok": "fine"}')
    assert not schema_accepts(schema, '{"bad": [')
    union = {"$defs": {"loop": LOOP}, "anyOf": [{"type": "integer"}, {"$ref": "#/$defs/loop"}]}
    assert schema_accepts(union, "12")
    assert not schema_accepts(union, "[")
    pairs = {
        "$defs": {"loop": LOOP},
        "type": "array",
        "prefixItems": [{"type": "integer"}, {"$ref": "#/$defs/loop"}],
    }
    assert schema_accepts(pairs, "[1]")
    assert not schema_accepts(pairs, "[1, [")
