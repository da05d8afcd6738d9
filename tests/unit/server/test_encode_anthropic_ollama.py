"""The Anthropic and Ollama encoders over Events: tool calls, malformed arguments, stop reasons."""

from __future__ import annotations

import json

from tokenloom.events import (
    ContentDelta,
    Finish,
    ReasoningDelta,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from tokenloom.server.encode_anthropic import MessageBuilder
from tokenloom.server.encode_ollama import OllamaEncoder

CALL = [
    ToolCallStart(0, "call_1", "get_weather"),
    ToolCallArgsDelta(0, '{"city": '),
    ToolCallArgsDelta(0, '"Paris"}'),
    ToolCallEnd(0),
]


def test_anthropic_blocks_in_order_with_joined_input_fragments() -> None:
    builder = MessageBuilder("m")
    events = [ReasoningDelta("hmm"), ContentDelta("Sure."), *CALL, Finish("tool_calls", Usage(10, 5, 4))]
    stream = [e for event in events for e in builder.encode(event)]
    message = builder.message()
    assert [b["type"] for b in message["content"]] == ["thinking", "text", "tool_use"]
    assert message["content"][0]["signature"]
    assert message["content"][2]["input"] == {"city": "Paris"}
    fragments = "".join(
        e["delta"]["partial_json"] for e in stream if e.get("delta", {}).get("type") == "input_json_delta"
    )
    assert json.loads(fragments) == message["content"][2]["input"]
    assert message["stop_reason"] == "tool_use"
    assert message["usage"] == {
        "input_tokens": 6,
        "output_tokens": 5,
        "cache_read_input_tokens": 4,
        "cache_creation_input_tokens": 0,
    }
    starts = [e["index"] for e in stream if e["type"] == "content_block_start"]
    stops = [e["index"] for e in stream if e["type"] == "content_block_stop"]
    assert starts == stops == [0, 1, 2]


def test_anthropic_stop_sequence_only_when_the_request_asked_for_it() -> None:
    asked = MessageBuilder("m", ("END",))
    asked.encode(Finish("stop", Usage(), "END"))
    assert (asked.stop_reason, asked.stop_sequence) == ("stop_sequence", "END")
    other = MessageBuilder("m")
    other.encode(Finish("stop", Usage(), "<|end|>"))  # a format's own stop string is a normal end
    assert (other.stop_reason, other.stop_sequence) == ("end_turn", None)


def test_a_cut_short_call_keeps_its_text() -> None:
    builder = MessageBuilder("m")
    for event in [ToolCallStart(0, "c", "f"), ToolCallArgsDelta(0, '{"a": "b'), ToolCallEnd(0)]:
        builder.encode(event)
    assert builder.message()["content"][0]["input"] == {"_raw": '{"a": "b'}
    encoder = OllamaEncoder("m", "chat")
    for event in [ToolCallStart(0, "c", "f"), ToolCallArgsDelta(0, "[1"), ToolCallEnd(0)]:
        encoder.encode(event)
    assert encoder.tool_calls == [{"function": {"name": "f", "arguments": {"_raw": "[1"}}}]


def test_ollama_chat_stream_and_collected_answer_agree() -> None:
    encoder = OllamaEncoder("m", "chat")
    events = [
        ReasoningDelta("hmm"),
        ContentDelta("It is "),
        ContentDelta("sunny."),
        *CALL,
        Finish("stop", Usage(7, 3)),
    ]
    stream = [obj for event in events for obj in encoder.encode(event)]
    whole = encoder.response()
    assert "".join(o["message"]["content"] for o in stream) == whole["message"]["content"] == "It is sunny."
    assert "".join(o["message"].get("thinking", "") for o in stream) == whole["message"]["thinking"]
    calls = [c for o in stream for c in o["message"].get("tool_calls", [])]
    assert (
        calls
        == whole["message"]["tool_calls"]
        == [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]
    )
    assert stream[-1]["done"] and whole["done"]
    assert whole["prompt_eval_count"] == 7 and whole["eval_count"] == 3 and whole["done_reason"] == "stop"


def test_ollama_generate_uses_response() -> None:
    encoder = OllamaEncoder("m", "generate")
    stream = [obj for e in [ContentDelta("hi"), Finish("length", Usage(2, 1))] for obj in encoder.encode(e)]
    assert stream[0]["response"] == "hi" and stream[-1]["done_reason"] == "length"
