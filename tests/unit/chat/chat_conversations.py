"""Shared test data for the chat tests: template paths and a standard set of OpenAI-shaped conversations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

TEMPLATES_DIR = Path(__file__).resolve().parents[3] / ".." / "shared" / "templates"
TEMPLATE_NAMES = sorted(p.name for p in TEMPLATES_DIR.glob("*.jinja"))
GOLDEN_DIR = Path(__file__).resolve().parents[2] / "golden" / "chat"


def load(name: str) -> str:
    """A real chat template's text, read from the shared folder beside the repo."""
    return (TEMPLATES_DIR / name).read_text(encoding="utf-8")


TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather of a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Current time in a time zone",
            "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]},
        },
    },
]


def call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


USER = [{"role": "user", "content": "Hi"}]
SYSTEM = [{"role": "system", "content": "Answer like a pirate."}, {"role": "user", "content": "Hi"}]
MULTI_TURN = [
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello! How can I help?"},
    {"role": "user", "content": "Tell me a joke."},
]
REASONING = [
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": "4", "reasoning_content": "Two plus two makes four."},
]
TYPED = [{"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "there"}]}]


def tool_call(
    call_id: str = "call12345", arguments: Any = None, content: str | None = ""
) -> list[dict[str, Any]]:
    """One tool call and its result."""
    args = {"city": "Paris"} if arguments is None else arguments
    return [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": content, "tool_calls": [call(call_id, "get_weather", args)]},
        {"role": "tool", "tool_call_id": call_id, "name": "get_weather", "content": "Sunny, 24C"},
    ]


def parallel_calls(
    ids: tuple[str, str] = ("call12345", "call67890"), as_string: bool = False, content: str | None = None
) -> list[dict[str, Any]]:
    """Two tool calls in one assistant turn and both results."""
    weather: Any = '{"city": "Paris"}' if as_string else {"city": "Paris"}
    time: Any = '{"tz": "CET"}' if as_string else {"tz": "CET"}
    return [
        {"role": "user", "content": "Weather and time in Paris?"},
        {
            "role": "assistant",
            "content": content,
            "tool_calls": [call(ids[0], "get_weather", weather), call(ids[1], "get_time", time)],
        },
        {"role": "tool", "tool_call_id": ids[0], "name": "get_weather", "content": "Sunny, 24C"},
        {"role": "tool", "tool_call_id": ids[1], "name": "get_time", "content": "12:00"},
    ]
