"""The public entry points: `render` (faithful) and `render_chat` (adapted), and their inputs."""

from __future__ import annotations

import pytest
from chat_conversations import SYSTEM, TOOLS, USER, load, tool_call

from tokenloom.chat.fallback import GEMMA_TURNS
from tokenloom.chat.render import render, render_chat
from tokenloom.errors import InvalidRequest, TemplateError


def test_enable_thinking_reaches_a_template_that_calls_it_thinking() -> None:
    template = load("deepseek-ai-DeepSeek-V3.1.2025-09.jinja")
    on = render_chat(template, USER, template_kwargs={"enable_thinking": True})
    off = render_chat(template, USER, template_kwargs={"enable_thinking": False})
    assert on == render(template, USER, template_kwargs={"thinking": True})
    assert on != off


def test_render_is_not_adapted() -> None:
    template = load("google-gemma-2-2b-it.jinja")
    with pytest.raises(TemplateError, match="System role not supported") as info:
        render(template, SYSTEM)
    assert info.value.status == 400
    assert "pirate" in render_chat(template, SYSTEM)


def test_render_chat_refuses_reserved_kwargs() -> None:
    with pytest.raises(InvalidRequest) as info:
        render_chat(GEMMA_TURNS, USER, template_kwargs={"messages": []})
    assert info.value.param == "chat_template_kwargs.messages"


def test_render_chat_reports_bad_messages_by_field() -> None:
    with pytest.raises(InvalidRequest) as info:
        render_chat(GEMMA_TURNS, [{"role": "user", "content": [{"type": "image_url"}]}])
    assert info.value.param == "messages[0].content[0]"


def test_custom_kwargs_reach_the_template() -> None:
    assert render("{{ custom_flag }}", [], template_kwargs={"custom_flag": "on"}) == "on"


def test_documents_reach_the_template() -> None:
    template = load("CohereForAI-c4ai-command-r-plus-rag.jinja")
    documents = [{"title": "Tides", "text": "The moon pulls the sea."}]
    assert "moon pulls" in render(template, USER, documents=documents)
    assert "moon pulls" not in render(template, USER)


def test_generation_prompt_switch() -> None:
    template = load("Qwen-Qwen2.5-7B-Instruct.jinja")
    assert render(template, USER).endswith("<|im_start|>assistant\n")
    assert not render(template, USER, add_generation_prompt=False).endswith("assistant\n")


def test_bos_and_eos_tokens_are_passed() -> None:
    out = render(
        load("mistralai-Mistral-7B-Instruct-v0.2.jinja"), [*USER, {"role": "assistant", "content": "Yo"}]
    )
    assert out == " [INST] Hi [/INST] Yo"
    out = render(
        load("mistralai-Mistral-7B-Instruct-v0.2.jinja"),
        [*USER, {"role": "assistant", "content": "Yo"}],
        bos_token="<s>",
        eos_token="</s>",
    )
    assert out == "<s> [INST] Hi [/INST] Yo</s>"


def test_fallback_template_renders_tool_use_as_text() -> None:
    out = render_chat(GEMMA_TURNS, tool_call(), tools=TOOLS)
    assert '{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}' in out
    assert '{"tool_response": {"tool": "get_weather", "content": "Sunny, 24C"' in out
    assert out.endswith("<start_of_turn>model\n")


def test_a_conversation_that_breaks_a_working_template_is_a_400() -> None:
    template = load("NVIDIA-Nemotron-Nano-v2.jinja")
    with pytest.raises(TemplateError) as info:
        render_chat(template, [{"role": "system", "content": "Only a system prompt."}])
    assert info.value.status == 400 and info.value.param == "messages"


def test_a_broken_template_is_a_500() -> None:
    with pytest.raises(TemplateError) as info:
        render_chat("{{ messages[0].content.nope() }}", USER)
    assert info.value.status == 500
