"""Bad specs and schema bombs fail fast with GrammarError naming the problem (and a param path)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.unit.constrain.chars import schema_accepts
from tokenloom.constrain import check_spec
from tokenloom.constrain.api import build
from tokenloom.errors import GrammarError


def _nested(depth: int) -> dict[str, Any]:
    s: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        s = {"type": "object", "properties": {"x": s}}
    return s


BOMBS: list[tuple[dict[str, Any], str]] = [
    ({"json_schema": {"enum": list(range(100_000))}}, "enum"),
    ({"json_schema": {"type": "array", "maxItems": 10**12}}, "maxItems"),  # 10**9 compiles now
    ({"json_schema": {"type": "string", "minLength": 10**7}}, "minLength"),
    (
        {
            "json_schema": {
                "$ref": "#/$defs/a",
                "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
            }
        },
        "no value",
    ),
    ({"json_schema": _nested(200)}, "deeper"),
    ({"json_schema": {"type": "string", "pattern": "(a{1000}){1000}"}}, "too large"),
    ({"regex": "x{99999999}"}, "too large"),
]


@pytest.mark.parametrize(("spec", "words"), BOMBS)
def test_bombs_fail_fast(spec: dict[str, Any], words: str) -> None:
    t0 = time.monotonic()
    with pytest.raises(GrammarError, match=words):
        check_spec(spec)
    assert time.monotonic() - t0 < 10


@pytest.mark.parametrize(
    ("spec", "param"),
    [
        (
            {"json_schema": {"type": "object", "properties": {"x": {"type": "strin"}}}},
            "response_format.json_schema.schema.properties.x.type",
        ),
        (
            {"json_schema": {"type": "object", "properties": {"x": {"$ref": "#/nope"}}}},
            "response_format.json_schema.schema.properties.x.$ref",
        ),
        ({"json_schema": {"$ref": "http://example.com/s.json"}}, "response_format.json_schema.schema.$ref"),
        (
            {"json_schema": {"type": "string", "pattern": "(a)\\1"}},
            "response_format.json_schema.schema.pattern",
        ),
        ({"json_schema": {"type": "array", "minItems": -1}}, "response_format.json_schema.schema.minItems"),
        ({"json_schema": {"type": "object", "required": "x"}}, "response_format.json_schema.schema.required"),
        ({"regex": "(unclosed"}, "regex"),
        ({"grammar": "root ::= x"}, "response_format"),
    ],
)
def test_errors_name_the_field(spec: dict[str, Any], param: str) -> None:
    with pytest.raises(GrammarError) as info:
        check_spec(spec)
    assert info.value.param == param
    assert info.value.status == 400


def test_strict_refuses_unenforced_keywords() -> None:
    spec = {"json_schema": {"type": "array", "contains": {"type": "integer"}, "uniqueItems": True}}
    check_spec(spec)
    with pytest.raises(GrammarError, match="contains"):
        check_spec({**spec, "strict": True})


def test_look_around_pattern_is_reported_not_refused() -> None:
    spec = {"json_schema": {"type": "string", "pattern": "^[a-z]*(?<!x)$"}}  # a look-behind: dropped
    assert build(spec)[1] == frozenset({"pattern"})
    with pytest.raises(GrammarError, match="pattern") as info:
        check_spec({**spec, "strict": True})
    assert info.value.status == 400


def _chain(n: int) -> dict[str, Any]:
    """n definitions, each an object whose "x" is the next one (the last a string): a document 4 deep."""
    defs: dict[str, Any] = {
        f"d{i}": {"type": "object", "properties": {"x": {"$ref": f"#/$defs/d{i + 1}"}}, "required": ["x"]}
        for i in range(n)
    }
    defs[f"d{n}"] = {"type": "string"}
    return {"$ref": "#/$defs/d0", "$defs": defs}


def _instance(n: int, leaf: str) -> str:
    return '{"x":' * n + leaf + "}" * n


def test_a_long_chain_of_definitions_is_not_deep_nesting() -> None:
    """The compile walks through $refs into each definition it has not built yet, so a chain of 300
    definitions took it 300 deep, and it refused the schema as nested too deep (schemastore's web-types
    was refused so). The document itself nests 4 deep; the chain compiles and is enforced to its end."""
    schema = _chain(300)
    assert schema_accepts(schema, _instance(300, '"leaf"'))
    assert not schema_accepts(schema, _instance(300, "1"))
    assert not schema_accepts(schema, _instance(299, '"leaf"'))
