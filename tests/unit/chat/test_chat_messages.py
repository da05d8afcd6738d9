"""Normalisation of OpenAI-shaped messages: roles, content, arguments, ids, and field-named errors."""

from __future__ import annotations

from typing import Any

import pytest
from chat_conversations import call

from tokenloom.chat.messages import normalize_messages
from tokenloom.errors import InvalidRequest


def test_normalize_maps_developer_and_parses_arguments() -> None:
    messages = [
        {"role": "developer", "content": "Rules."},
        {"role": "assistant", "content": None, "tool_calls": [call("c1", "f", '{"a": 1}')]},
    ]
    out = normalize_messages(messages)
    assert out[0] == {"role": "system", "content": "Rules."}
    assert out[1]["tool_calls"][0] == {
        "id": "c1",
        "type": "function",
        "function": {"name": "f", "arguments": {"a": 1}},
    }


def test_empty_arguments_become_an_empty_object() -> None:
    out = normalize_messages([{"role": "assistant", "content": "", "tool_calls": [call("c1", "f", "")]}])
    assert out[0]["tool_calls"][0]["function"]["arguments"] == {}


def test_reasoning_alias_is_accepted() -> None:
    out = normalize_messages([{"role": "assistant", "content": "4", "reasoning": "think"}])
    assert out[0]["reasoning_content"] == "think"


@pytest.mark.parametrize(
    ("messages", "param"),
    [
        ([{"role": "robot", "content": "x"}], "messages[0].role"),
        (["hello"], "messages[0]"),
        ([], "messages"),
        ([{"role": "user", "content": 5}], "messages[0].content"),
        (
            [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url"}]}],
            "messages[0].content[1]",
        ),
        (
            [
                {"role": "user", "content": "q"},
                {"role": "assistant", "tool_calls": [call("c", "f", "{oops")]},
            ],
            "messages[1].tool_calls[0].function.arguments",
        ),
        ([{"role": "assistant", "tool_calls": [{"function": {}}]}], "messages[0].tool_calls[0].function"),
        ([{"role": "user", "content": "x", "tool_calls": [call("c", "f", {})]}], "messages[0]"),
        ([{"role": "assistant", "content": "", "tool_calls": {"id": "c"}}], "messages[0].tool_calls"),
    ],
)
def test_bad_messages_name_the_field(messages: list[Any], param: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        normalize_messages(messages)
    assert info.value.param == param


def test_missing_ids_and_names_are_linked() -> None:
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": {}}}]},
        {"role": "tool", "content": "r"},
    ]
    out = normalize_messages(messages)
    call_id = out[1]["tool_calls"][0]["id"]
    assert out[2]["tool_call_id"] == call_id and out[2]["name"] == "f"


def test_legacy_function_role_is_a_tool_result() -> None:
    out = normalize_messages([{"role": "function", "name": "f", "content": "r"}])
    assert out == [{"role": "tool", "name": "f", "content": "r"}]
