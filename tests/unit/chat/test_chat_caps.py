"""Capabilities found by probing real templates match what their text says."""

from __future__ import annotations

import pytest
from chat_conversations import load

from tokenloom.chat.bounds import RenderLimits
from tokenloom.chat.caps import TemplateCaps, detect_caps
from tokenloom.errors import TemplateError

EXPECTED: dict[str, dict[str, object]] = {
    # ChatML with a tools block, <tool_call> JSON, tool results as user turns with <tool_response>.
    "Qwen-Qwen2.5-7B-Instruct.jinja": {
        "supports_user_turn": True,
        "supports_system_role": True,
        "supports_tools": True,
        "supports_tool_calls": True,
        "supports_tool_responses": True,
        "supports_parallel_tool_calls": True,
        "requires_object_arguments": True,  # `tool_call.arguments | tojson` escapes a string
        "supports_typed_content": False,
        "supports_reasoning": False,
    },
    # An optional first system message is folded into the first [INST]; roles must alternate.
    "mistralai-Mistral-7B-Instruct-v0.2.jinja": {
        "supports_system_role": True,
        "supports_tools": False,
        "supports_tool_calls": False,
        "supports_tool_responses": False,
        "requires_alternation": True,
    },
    # raise_exception('System role not supported') and strict alternation.
    "google-gemma-2-2b-it.jinja": {
        "supports_system_role": False,
        "supports_tools": False,
        "requires_alternation": True,
    },
    # System messages are silently dropped.
    "microsoft-Phi-3-medium-4k-instruct.jinja": {
        "supports_system_role": False,
        "requires_alternation": False,
    },
    # "This model only supports single tool-calls at once!"
    "meta-llama-Llama-3.1-8B-Instruct.jinja": {
        "supports_tools": True,
        "supports_tool_calls": True,
        "supports_tool_responses": True,
        "supports_parallel_tool_calls": False,
        "requires_object_arguments": True,
    },
    # <think> from reasoning_content, enable_thinking switch; arguments as string or object.
    "Qwen-Qwen3-0.6B.jinja": {
        "supports_reasoning": True,
        "reasoning_field": "reasoning_content",
        "supports_enable_thinking": True,
        "thinking_variable": "enable_thinking",
        "supports_string_arguments": True,
        "supports_object_arguments": True,
    },
    # harmony reads message.thinking.
    "openai-gpt-oss-120b.jinja": {"supports_reasoning": True, "reasoning_field": "thinking"},
    # The switch is called `thinking` here.
    "deepseek-ai-DeepSeek-V3.1.2025-09.jinja": {"thinking_variable": "thinking"},
    # Tool call ids must be 9 alphanumerics ([CALL_ID], [TOOL_RESULTS] ... call_id).
    "Mistral-Small-3.2-24B-Instruct-2506.jinja": {
        "requires_fixed_call_ids": True,
        "supports_typed_content": True,
    },
    "mistralai-Mistral-Small-3.1-24B-Instruct-2503.jinja": {"requires_fixed_call_ids": True},
    # Lists tools but renders no assistant tool calls (the model writes them as content).
    "LFM2-8B-A1B.jinja": {"supports_tools": True, "supports_tool_calls": False},
    # Apertus as first released reads tool.name, tool.parameters: tools without the "function" wrapper.
    "Apertus-8B-Instruct.2025-10.jinja": {"supports_tools": True, "requires_flat_tools": True},
    "Apertus-8B-Instruct.jinja": {"supports_tools": True, "requires_flat_tools": False},
    # Prints argument objects as Python dicts ({'city': 'Paris'}), JSON strings as they are: use strings.
    "unsloth-Apriel-1.5.2025-11.jinja": {
        "supports_object_arguments": False,
        "supports_string_arguments": True,
    },
    "unsloth-Apriel-1.5.jinja": {"supports_object_arguments": True},
    # A chat-only variant: no tools at all.
    "NousResearch-Hermes-2-Pro-Llama-3-8B-default.jinja": {"supports_tools": False},
    # firefunction reads `functions`, filled from the request's tools.
    "fireworks-ai-llama-3-firefunction-v2.jinja": {"supports_tools": True, "supports_tool_calls": True},
    # Kimi K2 keeps call ids in a list it appends to and pops from.
    "Kimi-K2-Instruct.jinja": {"supports_tool_calls": True, "supports_tool_responses": True},
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_known_template_caps(name: str) -> None:
    caps = detect_caps(load(name))
    actual = {field: getattr(caps, field) for field in EXPECTED[name]}
    assert actual == EXPECTED[name]


def test_caps_are_cached_per_template_text() -> None:
    template = load("Qwen-Qwen2.5-7B-Instruct.jinja")
    assert detect_caps(template) is detect_caps(template)


def test_a_template_that_fails_everything_has_no_caps() -> None:
    caps = detect_caps("{{ raise_exception('nope') }}")
    assert caps == TemplateCaps()


def test_a_template_too_slow_to_probe_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tokenloom.chat.caps._PROBE_LIMITS", RenderLimits(timeout_s=0.05))
    slow = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}{{ messages }}"
    with pytest.raises(TemplateError, match="too slow to probe"):
        detect_caps(slow)
