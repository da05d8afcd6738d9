"""Strict JSON bodies and field-naming validation, without a server."""

from __future__ import annotations

import pytest

from tokenloom.errors import InvalidRequest
from tokenloom.server.errors import parse_json_body, validate_body
from tokenloom.server.wire import ChatCompletionRequest

USER = {"role": "user", "content": "x"}


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": NaN}',
        b'{"a": -Infinity}',
        b"[" * 100_000,
        b"\xff",
        b'{"a": "\\udc00"}',
        b'{"a": 1' + b"0" * 5000 + b"}",
    ],
)
def test_hostile_bodies_are_invalid_requests(raw: bytes) -> None:
    with pytest.raises(InvalidRequest):
        parse_json_body(raw)


def test_arguments_accepted_as_string_or_object() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}},
                    {"id": "b", "type": "function", "function": {"name": "g", "arguments": '{"y": 2}'}},
                ],
            },
        ]
    }
    request = validate_body(ChatCompletionRequest, body)
    calls = request.messages[1].tool_calls or []
    assert [c.function.arguments for c in calls] == ['{"x": 1}', '{"y": 2}']


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (
            {"messages": [{"role": "user", "content": "x"}, {"role": "bot", "content": "x"}]},
            "messages[1].role",
        ),
        ({"messages": [{"role": "user", "content": [{"type": "input_audio"}]}]}, "messages[0].content[0]"),
        ({"messages": [{"role": "user", "content": "x"}], "seed": 2**32 + 5}, "seed"),
        (
            {"messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "function"}},
            "tool_choice.function",
        ),
    ],
)
def test_validation_errors_name_the_field(body: dict, param: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        validate_body(ChatCompletionRequest, body)
    assert info.value.param == param
