"""OpenAI request -> harmony: history mapping and request validation beyond the golden files."""

from __future__ import annotations

from typing import Any

import harmony_cases as cases
import pytest

from tokenloom.errors import InvalidRequest
from tokenloom.harmony import final_channel_constraint, render_chat_request
from tokenloom.harmony.request import chat_to_harmony


def _history(messages: list[dict[str, Any]], **kwargs: Any) -> str:
    """The prompt after the system/developer messages."""
    text = render_chat_request(messages, current_date=None, **kwargs)
    return text[text.index("<|start|>user") :]


def test_preamble_reasoning_and_parallel_calls() -> None:
    second = {
        "id": "call_2",
        "type": "function",
        "function": {"name": "get_current_weather", "arguments": {"location": "Paris"}},
    }
    messages = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "Tokyo "}, {"type": "text", "text": "and Paris?"}],
        },
        {
            "role": "assistant",
            "content": "Checking both.",
            "reasoning": "Two calls.",
            "tool_calls": [cases.WEATHER_CALL, second],
        },
        {"role": "tool", "tool_call_id": "call_2", "content": "rain"},
        {"role": "tool", "tool_call_id": "call_1", "content": "sun"},
    ]
    assert _history(messages, tools=[cases.WEATHER_TOOL]) == (
        "<|start|>user<|message|>Tokyo and Paris?<|end|>"
        "<|start|>assistant<|channel|>analysis<|message|>Two calls.<|end|>"
        "<|start|>assistant<|channel|>commentary<|message|>Checking both.<|end|>"
        "<|start|>assistant to=functions.get_current_weather<|channel|>commentary <|constrain|>json"
        '<|message|>{"location": "Tokyo"}<|call|>'
        "<|start|>assistant to=functions.get_current_weather<|channel|>commentary <|constrain|>json"
        '<|message|>{"location": "Paris"}<|call|>'
        "<|start|>functions.get_current_weather to=assistant<|channel|>commentary<|message|>rain<|end|>"
        "<|start|>functions.get_current_weather to=assistant<|channel|>commentary<|message|>sun<|end|>"
        "<|start|>assistant"
    )


def test_builtin_call_in_history() -> None:
    call = {
        "id": "b1",
        "type": "function",
        "function": {"name": "browser.search", "arguments": '{"query": "x"}'},
    }
    messages = [
        {"role": "user", "content": "Search x"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "b1", "content": "results"},
    ]
    assert _history(messages, builtin_tools=["browser"]) == (
        "<|start|>user<|message|>Search x<|end|>"
        '<|start|>assistant to=browser.search<|channel|>analysis<|message|>{"query": "x"}<|call|>'
        "<|start|>browser.search to=assistant<|channel|>analysis<|message|>results<|end|>"
        "<|start|>assistant"
    )
    # Without the built-in enabled, the same name is an ordinary function.
    assert "to=functions.browser.search" in _history(messages)


def test_no_argument_functions() -> None:
    tools = [{"type": "function", "function": {"name": "now"}}, cases.LOCATION_TOOL]
    text = render_chat_request([{"role": "user", "content": "?"}], tools=tools)
    assert (
        "type now = () => any;\n\n// Gets the location of the user.\ntype get_location = () => any;" in text
    )


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"reasoning_effort": "extreme"}, "reasoning_effort"),
        ({"builtin_tools": ["shell"]}, "builtin_tools"),
        ({"tools": [{"type": "function", "function": {}}]}, "tools[0]"),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": 3}}},
            "response_format",
        ),
    ],
)
def test_bad_requests_name_the_field(kwargs: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        chat_to_harmony([{"role": "user", "content": "hi"}], **kwargs)
    assert info.value.param == param


def test_bad_messages_name_the_field() -> None:
    with pytest.raises(InvalidRequest) as info:
        chat_to_harmony([{"role": "tool", "content": "orphan"}])
    assert info.value.param == "messages[0]"
    with pytest.raises(InvalidRequest):
        chat_to_harmony([{"role": "wizard", "content": "hi"}])


def test_structured_output_hook() -> None:
    hook = final_channel_constraint(cases.SHOPPING_FORMAT)
    assert hook is not None
    assert hook.trigger == "<|channel|>final<|message|>"
    assert hook.schema == cases.SHOPPING_FORMAT["json_schema"]["schema"]
    assert final_channel_constraint({"type": "json_object"}) is not None
    assert final_channel_constraint({"type": "text"}) is None
    assert final_channel_constraint(None) is None


def test_pydantic_style_refs_are_inlined() -> None:
    # The reference renders `$ref` as `any`; we inline local definitions (recursion stops at depth 8).
    params = {
        "$defs": {
            "Point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]},
            "Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}},
        },
        "type": "object",
        "properties": {
            "at": {"$ref": "#/$defs/Point", "description": "Where"},
            "via": {"allOf": [{"$ref": "#/$defs/Point"}]},
            "chain": {"$ref": "#/$defs/Node"},
            "definitions": {"type": "string"},
        },
        "required": ["at"],
    }
    tool = {"type": "function", "function": {"name": "move", "description": "Move.", "parameters": params}}
    text = render_chat_request([{"role": "user", "content": "go"}], tools=[tool])
    assert "// Where\nat:     // Where\n{\n    x: number,\n    },\nvia?: {\n    x: number,\n    },\n" in text
    assert "next?: any," in text  # depth limit reached
    assert "definitions?: string," in text
