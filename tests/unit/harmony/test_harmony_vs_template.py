"""The gpt-oss Jinja template and our renderer agree on the same conversations.

Intended differences, normalised before comparing (HARMONY.md §12):
- tool calls: the template writes the content type as plain ` json`; we write ` <|constrain|>json`, as the
  reference library does and as the model itself emits it;
- tool results: the template JSON-encodes the content (`"text"` gets quotes); we pass it verbatim;
- developer instructions without tools: the template leaves a blank line before `<|end|>`, the reference
  does not;
- defaults in tool schemas: the template's own TypeScript renderer adds a comma after the default
  comment (`// default: celsius,`); the reference has none;
- the date: the template always writes today's date (`strftime_now`); we write today's only when asked
  (`current_date="today"`, the default), so both print the same line here.
The template renders only the first tool call of a message and takes only a leading system message as
instructions, so the conversations below stay inside what both can express.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import harmony_cases as cases
import pytest

from tokenloom.chat.render import render
from tokenloom.harmony import render_chat_request

TEMPLATE = (
    Path(__file__).resolve().parents[4] / "shared" / "templates" / "openai-gpt-oss-120b.jinja"
).read_text()

CONVERSATIONS: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]] = {
    "user_only": ([{"role": "user", "content": "Hello!"}], {}),
    "instructions_and_history": (
        [
            {"role": "system", "content": "Answer like a pirate."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Ahoy!", "thinking": "Greet back."},
            {"role": "user", "content": "How are you?"},
        ],
        {},
    ),
    "tool_round_ongoing": (
        [
            {"role": "system", "content": "You are a weather bot."},
            {"role": "user", "content": "What is the weather in Tokyo?"},
            {
                "role": "assistant",
                "thinking": "Need to use function get_current_weather.",
                "tool_calls": [
                    {
                        **cases.WEATHER_CALL,
                        "function": {"name": "get_current_weather", "arguments": {"location": "Tokyo"}},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 20 degrees"},
        ],
        {"tools": [cases.LOCATION_TOOL, cases.WEATHER_TOOL]},
    ),
    "tool_round_finished": (
        [
            {"role": "user", "content": "What is the weather in Tokyo?"},
            {
                "role": "assistant",
                "thinking": "Need to use function get_current_weather.",
                "tool_calls": [
                    {
                        **cases.WEATHER_CALL,
                        "function": {"name": "get_current_weather", "arguments": {"location": "Tokyo"}},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 20 degrees"},
            {"role": "assistant", "content": "Sunny, 20°C.", "thinking": "Report it."},
            {"role": "user", "content": "Thanks!"},
        ],
        {"tools": [cases.WEATHER_TOOL]},
    ),
    "builtin_tools_low_effort": (
        [{"role": "user", "content": "Search the news."}],
        {
            "builtin_tools": ["browser", "python"],
            "reasoning_effort": "low",
            "model_identity": "You are Loom.",
        },
    ),
}


def _normalise_template(text: str, messages: list[dict[str, Any]]) -> str:
    text = text.replace(
        "<|channel|>commentary json<|message|>", "<|channel|>commentary <|constrain|>json<|message|>"
    )
    for message in messages:
        if message["role"] == "tool":
            text = text.replace(json.dumps(message["content"]), message["content"])
    text = re.sub(r"(// default: [^\n]*),\n", r"\1\n", text)
    return text.replace("\n\n<|end|>", "<|end|>")


@pytest.mark.parametrize("name", sorted(CONVERSATIONS))
def test_template_and_renderer_agree(name: str) -> None:
    messages, options = CONVERSATIONS[name]
    tools = options.get("tools")
    kwargs = {k: v for k, v in options.items() if k != "tools"}
    expected = render(TEMPLATE, messages, tools=tools, add_generation_prompt=True, template_kwargs=kwargs)
    got = render_chat_request(messages, tools=tools, **kwargs)
    assert got == _normalise_template(expected, messages)


def test_template_call_arguments_match_ours() -> None:
    # Object arguments are JSON-encoded the same way by both (json.dumps defaults, no ASCII escaping).
    messages = CONVERSATIONS["tool_round_ongoing"][0]
    assert '{"location": "Tokyo"}<|call|>' in render_chat_request(messages, tools=[cases.WEATHER_TOOL])
