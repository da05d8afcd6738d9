"""allOf parts naming the same keyword: both hold (before, the later part's value replaced the earlier's,
and outputs breaking the earlier one got through)."""

from __future__ import annotations

import json
import random

import jsonschema
import pytest

from tests.unit.constrain.chars import initial, schema_accepts
from tokenloom.constrain.parser import accepts
from tokenloom.constrain.schema_merge import merge

# JSONSchemaBench's Handwritten allany7: any1 asks for a multiple of 33, 12 or 77, any3 lets a multiple of
# 13 through; merged, a multiple of 13 alone replaced the first (13, 26, 39, ... were let through)
ALLANY7 = {
    "type": "number",
    "allOf": [
        {"$ref": "#/definitions/any1"},
        {"$ref": "#/definitions/any2"},
        {"$ref": "#/definitions/any3"},
        {"not": {"multipleOf": 8}},
    ],
    "definitions": {
        "any1": {"anyOf": [{"multipleOf": 33}, {"multipleOf": 12}, {"multipleOf": 77}]},
        "any2": {
            "anyOf": [{"allOf": [{"not": {"multipleOf": 6}}, {"not": {"multipleOf": 7}}]}, {"multipleOf": 44}]
        },
        "any3": {"anyOf": [{"not": {"multipleOf": 11}}, {"multipleOf": 13}]},
    },
}


def test_multiples_of_both_parts() -> None:
    check = jsonschema.Draft7Validator(ALLANY7)
    rng = random.Random(7)
    numbers = [*range(700), *(rng.randrange(10**12) for _ in range(60)), 531285842433954114]
    start = initial({"json_schema": ALLANY7})
    wrong = [n for n in numbers if accepts(start, str(n)) != check.is_valid(n)]
    assert not wrong, wrong[:10]
    assert schema_accepts(ALLANY7, "1716")  # 12 * 11 * 13: valid, so the check above is not vacuous


def test_common_multiple_of_decimals() -> None:
    assert merge({"multipleOf": 0.1}, {"multipleOf": 0.15})["multipleOf"] == 0.3
    assert merge({"multipleOf": 4}, {"multipleOf": 6})["multipleOf"] == 12
    schema = {"allOf": [{"type": "number", "multipleOf": 0.1}, {"multipleOf": 0.15}]}
    assert schema_accepts(schema, "0.6")
    assert not schema_accepts(schema, "0.45")  # a multiple of 0.15 only
    assert not schema_accepts(schema, "0.2")  # a multiple of 0.1 only


@pytest.mark.parametrize(
    ("text", "ok"), [('"ab-12"', True), ('"ab-1"', False), ('"xy-12"', False), ('"AB-12"', False)]
)
def test_both_patterns(text: str, ok: bool) -> None:
    schema = {"allOf": [{"type": "string", "pattern": "^[a-z]+-"}, {"pattern": "\\d{2}$"}, {"pattern": "a"}]}
    assert not merge(merge(schema["allOf"][0], schema["allOf"][1]), schema["allOf"][2])["pattern"].startswith(
        "^(?=[\\s\\S]*?(?:^(?="
    )
    assert schema_accepts(schema, text) is ok


@pytest.mark.parametrize(
    ("text", "ok"), [('"2024-05-06"', True), ('"2024-13-06"', False), ('"1999-05-06"', False)]
)
def test_pattern_beside_a_format(text: str, ok: bool) -> None:
    """The format was dropped without a word where a pattern stood beside it."""
    assert schema_accepts({"type": "string", "format": "date", "pattern": "^20"}, text) is ok


def test_both_items_schemas_and_bounds() -> None:
    schema = {
        "allOf": [
            {"type": "array", "items": {"type": "integer", "minimum": 0}, "uniqueItems": True},
            {"items": {"maximum": 9}, "uniqueItems": False},
            {"type": "array", "items": {"exclusiveMaximum": 8}},
        ]
    }
    assert schema_accepts(schema, "[0,7]")
    assert not schema_accepts(schema, "[0,9]")  # the third part's exclusiveMaximum
    assert not schema_accepts(schema, "[12]")  # the second part's maximum
    assert not schema_accepts(schema, "[-1]")  # the first part's minimum
    assert not schema_accepts(schema, "[3,3]")  # uniqueItems: true in one part holds


def test_additional_properties_of_one_part_judge_the_names_of_another() -> None:
    """In one dict, `b`'s additionalProperties would judge only the names the merged dict leaves out; in
    the allOf it judges every name `b` itself does not name (validators reject {"a": 1} below)."""
    closed = {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}},
            {"additionalProperties": False},
        ]
    }
    assert not schema_accepts(closed, '{"a":1}')
    assert schema_accepts(closed, "{}")
    patterned = {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}, "b": {}}},
            {
                "properties": {"a": {}},
                "patternProperties": {"^b": {"type": "string"}},
                "additionalProperties": False,
            },
        ]
    }
    assert schema_accepts(patterned, '{"a":1,"b":"x"}')
    assert not schema_accepts(patterned, '{"a":1,"b":2}')  # the second part's pattern judges "b"


def _nested(depth: int) -> str:
    return '{"a":' * depth + "{}" + "}" * depth


# JSONSchemaBench's Handwritten mod303, scaled down: a chain of "a"s whose depth is a multiple of 2 and 3,
# at least 1, and not the witness 6 (so 12, 18, ...). `word` names "a"; each cycle's additionalProperties,
# a $ref, judges that name too (before, such an additionalProperties was left out and 1, 2, 3, ... passed).
MOD6 = {
    "allOf": [
        {"$ref": "#/definitions/word"},
        {"$ref": "#/definitions/x0"},
        {"$ref": "#/definitions/y0"},
        {"minProperties": 1},
        {"not": {"const": {"a": {"a": {"a": {"a": {"a": {"a": {}}}}}}}}},
    ],
    "definitions": {
        "word": {
            "type": "object",
            "properties": {"a": {"$ref": "#/definitions/word"}},
            "additionalProperties": False,
        },
        "x0": {"additionalProperties": {"$ref": "#/definitions/x1"}},
        "x1": {"additionalProperties": {"$ref": "#/definitions/x0"}, "minProperties": 1},
        "y0": {"additionalProperties": {"$ref": "#/definitions/y1"}},
        "y1": {"additionalProperties": {"$ref": "#/definitions/y2"}, "minProperties": 1},
        "y2": {"additionalProperties": {"$ref": "#/definitions/y0"}, "minProperties": 1},
    },
}


def test_additional_properties_through_a_ref_judge_the_names_of_another_part() -> None:
    """Each level merges new parts into a new dict; the compiler names such a dict by its parts, so the
    chain of levels closes into a cycle of six nodes instead of recursing for ever."""
    for depth in range(20):
        expected = jsonschema.Draft7Validator(MOD6).is_valid(json.loads(_nested(depth)))
        assert schema_accepts(MOD6, _nested(depth)) is expected, depth
    assert [d for d in range(20) if schema_accepts(MOD6, _nested(d))] == [12, 18]
