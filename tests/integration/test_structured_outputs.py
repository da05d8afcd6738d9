"""Structured outputs on the real default model: a weak 270M model, so every guarantee comes from the mask."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import openai
import pytest

pytestmark = pytest.mark.integration

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 24},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 3},
    },
    "required": ["name", "age", "tags"],
    "additionalProperties": False,
}
NESTED = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "maxLength": 30},
        "owner": {
            "type": "object",
            "properties": {
                "id": {"type": "integer", "minimum": 1, "maximum": 9999},
                "admin": {"type": "boolean"},
            },
            "required": ["id", "admin"],
            "additionalProperties": False,
        },
    },
    "required": ["title", "owner"],
    "additionalProperties": False,
}
ANY_OF = {
    "type": "object",
    "properties": {
        "value": {
            "anyOf": [{"type": "integer", "minimum": -5, "maximum": 5}, {"type": "string", "maxLength": 8}]
        },
        "kind": {"const": "sample"},
    },
    "required": ["value", "kind"],
    "additionalProperties": False,
}
REFS = {
    "$defs": {
        "point": {
            "type": "object",
            "properties": {
                "x": {"type": "integer", "minimum": 0, "maximum": 99},
                "y": {"type": "integer", "minimum": 0, "maximum": 99},
            },
            "required": ["x", "y"],
            "additionalProperties": False,
        }
    },
    "type": "object",
    "properties": {"start": {"$ref": "#/$defs/point"}, "end": {"$ref": "#/$defs/point"}},
    "required": ["start", "end"],
    "additionalProperties": False,
}  # fmt: skip
SCHEMA_PARAM = "response_format.json_schema.schema"


def _json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": True}}


@pytest.mark.parametrize(
    "schema", [PERSON, NESTED, ANY_OF, REFS], ids=["enum-array", "nested", "anyOf", "ref"]
)
@pytest.mark.parametrize("seed", [1, 2])
def test_json_schema_outputs_validate(client: openai.OpenAI, schema: dict[str, Any], seed: int) -> None:
    r = client.chat.completions.create(
        model="",
        messages=[{"role": "user", "content": "Answer with JSON."}],
        max_tokens=500,
        temperature=0.8,
        seed=seed,
        response_format=_json_schema(schema),  # type: ignore[arg-type]
    )
    assert r.choices[0].finish_reason == "stop"
    jsonschema.validate(json.loads(r.choices[0].message.content or ""), schema)


def test_json_schema_streamed_validates(client: openai.OpenAI) -> None:
    chunks = client.chat.completions.create(
        model="",
        messages=[{"role": "user", "content": "Describe a person."}],
        max_tokens=500,
        temperature=0.7,
        seed=5,
        stream=True,
        response_format=_json_schema(PERSON),  # type: ignore[arg-type]
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    jsonschema.validate(json.loads(text), PERSON)


def test_json_object_outputs_parse(client: openai.OpenAI) -> None:
    for seed in (1, 2, 3):
        r = client.chat.completions.create(
            model="",
            messages=[{"role": "user", "content": "Give me a JSON object."}],
            max_tokens=300,
            temperature=0.7,
            seed=seed,
            response_format={"type": "json_object"},
        )
        if r.choices[0].finish_reason == "stop":
            assert isinstance(json.loads(r.choices[0].message.content or ""), dict)
        else:  # an open-ended object may run out of tokens, but what exists is a valid prefix
            assert (r.choices[0].message.content or "").lstrip().startswith("{")


@pytest.mark.parametrize("pattern", [r"\d{4}-\d{2}-\d{2}", r"(yes|no)", r"[A-Z][a-z]{2,6} [0-9]{1,3}"])
def test_regex_outputs_match(client: openai.OpenAI, pattern: str) -> None:
    r = client.chat.completions.create(
        model="",
        messages=[{"role": "user", "content": "Reply."}],
        max_tokens=40,
        temperature=0.9,
        seed=11,
        extra_body={"response_format": {"type": "regex", "regex": pattern}},
    )
    assert r.choices[0].finish_reason == "stop"
    assert re.fullmatch(pattern, r.choices[0].message.content or "")


@pytest.mark.parametrize(
    ("response_format", "param"),
    [
        (_json_schema({"type": "nope"}), SCHEMA_PARAM),
        ({"type": "regex", "regex": "(unclosed"}, "response_format.regex"),
        (_json_schema({"enum": list(range(100_000))}), SCHEMA_PARAM),
        (_json_schema({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}}), SCHEMA_PARAM),
    ],
    ids=["bad-type", "bad-regex", "enum-bomb", "ref-cycle"],
)
def test_bad_constraints_are_400_naming_the_field(
    client: openai.OpenAI, response_format: dict[str, Any], param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(
            model="",
            messages=[{"role": "user", "content": "x"}],
            max_tokens=5,
            extra_body={"response_format": response_format},
        )
    assert info.value.body["param"].startswith(param)  # type: ignore[index]


def test_unenforced_keywords_are_named_in_a_header_and_refused_when_strict(client: openai.OpenAI) -> None:
    """`contains` beside uniqueItems is accepted but not enforced: the response says so; with `strict` it
    is a 400. The rest holds."""
    enforced = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9}, "maxItems": 3}
    enforced["uniqueItems"] = True
    schema = {**enforced, "contains": {"const": 3}}

    def ask(schema: dict[str, Any]) -> Any:
        return client.chat.completions.with_raw_response.create(
            model="",
            messages=[{"role": "user", "content": "Three numbers:"}],
            max_tokens=80,
            temperature=0,
            extra_body={
                "response_format": {"type": "json_schema", "json_schema": {"name": "out", "schema": schema}}
            },
        )

    raw = ask(schema)
    assert raw.headers.get("x-tokenloom-unenforced") == "contains"
    choice = raw.parse().choices[0]
    assert choice.finish_reason == "stop", choice.message.content
    jsonschema.validate(json.loads(choice.message.content or ""), enforced)
    assert "x-tokenloom-unenforced" not in ask(enforced).headers
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(
            model="",
            messages=[{"role": "user", "content": "x"}],
            max_tokens=5,
            extra_body={"response_format": _json_schema(schema)},
        )
    assert "contains" in info.value.body["message"]  # type: ignore[index]


@pytest.mark.parametrize("thinking", [False, True])
def test_a_number_ends_where_a_weak_model_would_loop(client: openai.OpenAI, thinking: bool) -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    reply = client.chat.completions.create(
        model="",
        messages=[{"role": "user", "content": "How many stars are there? Answer in JSON."}],
        response_format={"type": "json_schema", "json_schema": {"name": "n", "schema": schema}},  # type: ignore[typeddict-item]
        max_tokens=120,
        temperature=0,
        extra_body={"chat_template_kwargs": {"enable_thinking": thinking}},
    )
    assert reply.choices[0].finish_reason == "stop"  # the digits are capped, so the object closes
    value = json.loads(reply.choices[0].message.content or "")["answer"]
    assert isinstance(value, int) and len(str(abs(value))) <= 20
