"""Every real template renders the conversations it supports, faithfully and after adaptation."""

from __future__ import annotations

from typing import Any

import pytest
from chat_conversations import (
    MULTI_TURN,
    REASONING,
    SYSTEM,
    TEMPLATE_NAMES,
    TOOLS,
    TYPED,
    USER,
    load,
    parallel_calls,
    tool_call,
)

from tokenloom.chat.caps import detect_caps
from tokenloom.chat.render import render, render_chat

SPECIAL = {"bos_token": "<s>", "eos_token": "</s>"}
pytestmark = pytest.mark.parametrize("name", TEMPLATE_NAMES)


def test_plain_user_renders(name: str) -> None:
    assert len(TEMPLATE_NAMES) >= 100
    assert "Hi" in render(load(name), USER, **SPECIAL)


def test_supported_conversations_render_faithfully(name: str) -> None:
    template = load(name)
    caps = detect_caps(template)
    assert "joke" in render(template, MULTI_TURN, **SPECIAL)
    if caps.supports_system_role:
        assert "pirate" in render(template, SYSTEM, **SPECIAL)
    if caps.supports_typed_content:
        assert "there" in render(template, TYPED, **SPECIAL)
    if caps.reasoning_field:
        answer = {**REASONING[1], caps.reasoning_field: "Two plus two makes four."}
        out = render(template, [REASONING[0], answer], add_generation_prompt=False, **SPECIAL)
        assert "makes four" in out
    if caps.supports_tool_calls and caps.supports_tool_responses:
        arguments: Any = {"city": "Paris"} if caps.supports_object_arguments else '{"city": "Paris"}'
        out = render(template, tool_call(arguments=arguments), tools=TOOLS, **SPECIAL)
        assert "get_weather" in out and "Paris" in out and "Sunny" in out
    if caps.supports_null_content:
        assert "Sunny" in render(template, tool_call(content=None), tools=TOOLS, **SPECIAL)
    if caps.supports_parallel_tool_calls and caps.supports_object_arguments:
        out = render(template, parallel_calls(content=""), tools=TOOLS, **SPECIAL)
        assert "get_time" in out and "12:00" in out


def test_thinking_switch_changes_the_prompt(name: str) -> None:
    template = load(name)
    variable = detect_caps(template).thinking_variable
    on = render(template, USER, template_kwargs={variable or "enable_thinking": True}, **SPECIAL)
    off = render(template, USER, template_kwargs={variable or "enable_thinking": False}, **SPECIAL)
    assert (on != off) == (variable is not None)


def test_adapted_renders_keep_every_part_of_the_conversation(name: str) -> None:
    template = load(name)
    developer = [{"role": "developer", "content": "Answer like a pirate."}, *USER]
    assert "pirate" in render_chat(template, SYSTEM, **SPECIAL)
    assert "pirate" in render_chat(template, developer, **SPECIAL)
    assert "there" in render_chat(template, TYPED, **SPECIAL)
    assert "joke" in render_chat(template, MULTI_TURN, **SPECIAL)
    render_chat(template, REASONING, add_generation_prompt=False, **SPECIAL)
    out = render_chat(template, tool_call(call_id="call_1", content=None), tools=TOOLS, **SPECIAL)
    assert "Paris" in out and "Sunny" in out
    out = render_chat(template, parallel_calls(("call_1", "call_2"), as_string=True), tools=TOOLS, **SPECIAL)
    assert "get_time" in out and "CET" in out and "12:00" in out


def test_adapted_render_with_tools_and_kwargs(name: str) -> None:
    template = load(name)
    out = render_chat(template, SYSTEM, tools=TOOLS, template_kwargs={"enable_thinking": False}, **SPECIAL)
    assert "pirate" in out
    two_users = [*USER, {"role": "user", "content": "Anyone there?"}]
    assert "Anyone" in render_chat(template, two_users, **SPECIAL)
    late_system = [
        {"role": "system", "content": "Answer like a pirate."},
        {"role": "system", "content": "Be brief."},
        *MULTI_TURN,
        {"role": "system", "content": "Now speak French."},
        {"role": "user", "content": "Bonjour"},
    ]
    out = render_chat(template, late_system, **SPECIAL)
    assert all(text in out for text in ("pirate", "brief", "joke", "French", "Bonjour"))
