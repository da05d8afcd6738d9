"""Adaptation of messages to a template's capabilities: what it cannot express is rewritten."""

from __future__ import annotations

import copy
import json

from chat_conversations import TOOLS, parallel_calls, tool_call

from tokenloom.chat.adapt import adapt_messages
from tokenloom.chat.caps import TemplateCaps

FULL = TemplateCaps(
    supports_system_role=True,
    supports_tools=True,
    supports_tool_calls=True,
    supports_tool_responses=True,
    supports_parallel_tool_calls=True,
    supports_object_arguments=True,
    supports_typed_content=True,
    supports_null_content=True,
)
BARE = TemplateCaps()


def test_full_caps_keep_the_conversation() -> None:
    messages = parallel_calls(("call_1", "call_2"), as_string=True)
    out = adapt_messages(messages, FULL)
    assert [m["role"] for m in out] == ["user", "assistant", "tool", "tool"]
    assert out[1]["content"] is None
    assert out[1]["tool_calls"][0]["function"]["arguments"] == {"city": "Paris"}


def test_input_is_not_mutated() -> None:
    messages = parallel_calls(("call_1", "call_2"), as_string=True)
    before = copy.deepcopy(messages)
    adapt_messages(messages, BARE, TOOLS)
    assert messages == before


def test_system_folds_into_the_next_user_turn() -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert adapt_messages(messages, BARE) == [{"role": "user", "content": "Be brief.\n\nHi"}]
    assert adapt_messages(messages[:1], BARE) == [{"role": "user", "content": "Be brief."}]


def test_tools_are_described_when_the_template_has_none() -> None:
    out = adapt_messages([{"role": "user", "content": "Hi"}], BARE, TOOLS)
    assert out[0]["role"] == "user"
    assert '"get_weather"' in out[0]["content"] and out[0]["content"].endswith("Hi")
    with_system = adapt_messages([{"role": "user", "content": "Hi"}], FULL, TOOLS)
    assert with_system == [{"role": "user", "content": "Hi"}]


def test_calls_and_results_become_text_without_tool_support() -> None:
    out = adapt_messages(tool_call(content=None), BARE)
    assert [m["role"] for m in out] == ["user", "assistant", "user"]
    assert json.loads(out[1]["content"]) == {
        "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    }
    response = json.loads(out[2]["content"])["tool_response"]
    assert response == {"tool": "get_weather", "content": "Sunny, 24C", "tool_call_id": "call12345"}


def test_parallel_calls_are_split_with_their_results() -> None:
    caps = TemplateCaps(
        supports_tool_calls=True, supports_tool_responses=True, supports_object_arguments=True
    )
    messages = parallel_calls(("call_1", "call_2"))
    messages[2:] = messages[:1:-1]  # results in the other order: matched by id
    out = adapt_messages(messages, caps)
    assert [(m["role"], m.get("tool_call_id")) for m in out] == [
        ("user", None),
        ("assistant", None),
        ("tool", "call_1"),
        ("assistant", None),
        ("tool", "call_2"),
    ]
    assert [m["tool_calls"][0]["function"]["name"] for m in out if m["role"] == "assistant"] == [
        "get_weather",
        "get_time",
    ]


def test_fixed_call_ids_stay_paired() -> None:
    caps = TemplateCaps(supports_tool_calls=True, supports_tool_responses=True, requires_fixed_call_ids=True)
    out = adapt_messages(tool_call(call_id="call_abc"), caps)
    call_id = out[1]["tool_calls"][0]["id"]
    assert len(call_id) == 9 and call_id.isalnum() and out[2]["tool_call_id"] == call_id


def test_string_arguments_when_the_template_wants_strings() -> None:
    caps = TemplateCaps(supports_tool_calls=True, supports_string_arguments=True)
    out = adapt_messages(tool_call(), caps)
    assert out[1]["tool_calls"][0]["function"]["arguments"] == '{"city": "Paris"}'


def test_typed_and_null_content() -> None:
    typed = [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]
    assert adapt_messages(typed, BARE)[0]["content"] == "a\nb"
    assert adapt_messages(typed, FULL)[0]["content"] == typed[0]["content"]
    assert adapt_messages(tool_call(content=None), TemplateCaps(supports_tool_calls=True))[1]["content"] == ""


def test_reasoning_goes_to_the_field_the_template_reads() -> None:
    caps = TemplateCaps(supports_reasoning=True, reasoning_field="thinking")
    out = adapt_messages([{"role": "assistant", "content": "4", "reasoning_content": "2+2"}], caps)
    assert out[0]["thinking"] == "2+2"


def test_same_role_turns_merge_for_alternating_templates() -> None:
    messages = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "a"},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": "c"},
        {"role": "assistant", "content": "d"},
    ]
    out = adapt_messages(messages, TemplateCaps(requires_alternation=True))
    assert out == [{"role": "user", "content": "S\n\na\n\nb"}, {"role": "assistant", "content": "c\n\nd"}]


def test_tool_and_assistant_parts_are_joined_even_with_typed_content() -> None:
    parts = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    messages = [
        {"role": "assistant", "content": parts},
        {"role": "tool", "tool_call_id": "x", "content": parts},
    ]
    assert [m["content"] for m in adapt_messages(messages, FULL)] == ["a\nb", "a\nb"]


def test_late_system_messages_fold_into_the_next_user_turn() -> None:
    messages = [
        {"role": "system", "content": "A"},
        {"role": "system", "content": "B"},
        {"role": "user", "content": "u1"},
        {"role": "system", "content": "C"},
        {"role": "user", "content": "u2"},
    ]
    out = adapt_messages(messages, TemplateCaps(supports_system_role=True))
    assert out == [
        {"role": "system", "content": "A\n\nB"},
        {"role": "user", "content": "u1"},
        {"role": "user", "content": "C\n\nu2"},
    ]
    assert (
        adapt_messages(messages, TemplateCaps(supports_system_role=True, supports_late_system=True))
        == messages
    )
