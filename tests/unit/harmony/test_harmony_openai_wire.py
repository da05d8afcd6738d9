"""Harmony output through the server's OpenAI encoders: `tool_calls` and `reasoning_content` come out.

The default model does not speak harmony, so this feeds gpt-oss-style text (token-sized pieces) through
`HarmonyOutputParser` into `server.encode_openai`, as `openai_routes` does with engine pieces, and
validates the result with the official `openai` client's types.
"""

from __future__ import annotations

import json
from typing import Any

import harmony_cases as cases
import openai.types.chat as openai_types

from tokenloom.events import Event, Finish
from tokenloom.harmony import HarmonyOutputParser, render_chat_request
from tokenloom.server import encode_openai

OUTPUT = (
    "<|channel|>analysis<|message|>User wants Tokyo weather. Call get_current_weather.<|end|>"
    "<|start|>assistant to=functions.get_current_weather<|channel|>commentary <|constrain|>json<|message|>"
    '{"location": "Tokyo", "format": "celsius"}<|call|>'
)


def _events() -> list[Event]:
    prompt = render_chat_request(
        [{"role": "user", "content": "Weather in Tokyo?"}], tools=[cases.WEATHER_TOOL]
    )
    assert prompt.endswith("<|start|>assistant")
    parser = HarmonyOutputParser(tools=["get_current_weather"])
    pieces = [OUTPUT[i : i + 4] for i in range(0, len(OUTPUT), 4)]
    events = [e for piece in pieces for e in parser.feed(piece)] + parser.finish()
    return [*events, Finish("tool_calls" if parser.message().tool_calls else "stop")]


def test_non_streaming_response_has_tool_calls_and_reasoning() -> None:
    collector = encode_openai.ResponseCollector()
    for event in _events():
        collector.add(event)
    body: dict[str, Any] = collector.response("chatcmpl-1", "gpt-oss")
    completion = openai_types.ChatCompletion.model_validate(body)
    message = completion.choices[0].message
    assert completion.choices[0].finish_reason == "tool_calls"
    assert message.tool_calls is not None and message.tool_calls[0].function.name == "get_current_weather"
    assert json.loads(message.tool_calls[0].function.arguments) == {"location": "Tokyo", "format": "celsius"}
    assert (
        body["choices"][0]["message"]["reasoning_content"]
        == "User wants Tokyo weather. Call get_current_weather."
    )
    assert message.content is None


def test_streamed_chunks_have_tool_calls_and_reasoning() -> None:
    encoder = encode_openai.ChunkEncoder("chatcmpl-1", "gpt-oss")
    chunks = [encoder.opening()] + [c for e in _events() for c in encoder.encode(e)]
    parsed = [openai_types.ChatCompletionChunk.model_validate(c) for c in chunks]
    reasoning = "".join(c["choices"][0]["delta"].get("reasoning_content", "") for c in chunks if c["choices"])
    arguments = "".join(
        call.function.arguments or ""
        for chunk in parsed
        for call in chunk.choices[0].delta.tool_calls or []
        if call.function is not None
    )
    assert reasoning == "User wants Tokyo weather. Call get_current_weather."
    assert json.loads(arguments) == {"location": "Tokyo", "format": "celsius"}
    assert parsed[-1].choices[0].finish_reason == "tool_calls"
