"""Events -> AG-UI events: every event validates as an ag_ui.core model after SSE encoding, every START has
its END with the same id, and the conversion of a RunAgentInput names AG-UI fields in its errors."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from ag_ui.core import BaseEvent, EventType
from ag_ui.core import Event as AguiEvent
from ag_ui.encoder import EventEncoder
from pydantic import TypeAdapter

from tokenloom.errors import InvalidRequest
from tokenloom.events import (
    ContentDelta,
    Event,
    Finish,
    ParseError,
    ReasoningDelta,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from tokenloom.server.adapt_agui import chat_request, parse_run_input
from tokenloom.server.encode_agui import PARSE_ERROR_EVENT, AguiEncoder

EVENTS: TypeAdapter[Any] = TypeAdapter(AguiEvent)
T = EventType


def run(events: list[Event]) -> list[Any]:
    """Encodes a run, sends each event through ag_ui's SSE encoder and parses it back with ag_ui's models."""
    counter = itertools.count()
    encoder = AguiEncoder("thread-1", "run-1", "model-x", make_id=lambda prefix: f"{prefix}-{next(counter)}")
    out: list[BaseEvent] = encoder.opening()
    for event in events:
        out += encoder.encode(event)
    sse = EventEncoder()
    parsed = []
    for event in out:
        frame = sse.encode(event)
        assert frame.startswith("data: ") and frame.endswith("\n\n")
        parsed.append(EVENTS.validate_json(frame.removeprefix("data: ")))
    check_pairing(parsed)
    return parsed


def check_pairing(events: list[Any]) -> None:
    """RUN_STARTED first, one terminal event last, and balanced, id-matched message and call lifecycles."""
    assert events[0].type is T.RUN_STARTED
    assert events[-1].type in (T.RUN_FINISHED, T.RUN_ERROR)
    assert all(e.type not in (T.RUN_STARTED, T.RUN_FINISHED, T.RUN_ERROR) for e in events[1:-1])
    text: str | None = None
    span: str | None = None
    reasoning: str | None = None
    calls: set[str] = set()
    seen_ids: set[str] = set()
    for e in events[1:-1]:
        if e.type is T.TEXT_MESSAGE_START:
            assert text is None and reasoning is None and e.message_id not in seen_ids
            text = e.message_id
            seen_ids.add(text)
        elif e.type is T.TEXT_MESSAGE_CONTENT:
            assert e.message_id == text and e.delta
        elif e.type is T.TEXT_MESSAGE_END:
            assert e.message_id == text
            text = None
        elif e.type is T.REASONING_START:
            assert span is None and text is None
            span = e.message_id
        elif e.type is T.REASONING_MESSAGE_START:
            assert span is not None and reasoning is None
            reasoning = e.message_id
        elif e.type is T.REASONING_MESSAGE_CONTENT:
            assert e.message_id == reasoning and e.delta
        elif e.type is T.REASONING_MESSAGE_END:
            assert e.message_id == reasoning
            reasoning = None
        elif e.type is T.REASONING_END:
            assert e.message_id == span and reasoning is None
            span = None
        elif e.type is T.TOOL_CALL_START:
            assert text is None and span is None and e.tool_call_id not in calls
            calls.add(e.tool_call_id)
        elif e.type is T.TOOL_CALL_ARGS:
            assert e.tool_call_id in calls
        elif e.type is T.TOOL_CALL_END:
            calls.remove(e.tool_call_id)
    assert text is None and span is None and reasoning is None and not calls


def types(events: list[Any]) -> list[EventType]:
    return [e.type for e in events]


def test_reasoning_then_content() -> None:
    events = run(
        [
            ReasoningDelta("Let me "),
            ReasoningDelta("think."),
            ContentDelta("The answer"),
            ContentDelta(" is 42."),
            Finish("stop", Usage(10, 7, 2)),
        ]
    )
    assert types(events) == [
        T.RUN_STARTED,
        T.REASONING_START,
        T.REASONING_MESSAGE_START,
        T.REASONING_MESSAGE_CONTENT,
        T.REASONING_MESSAGE_CONTENT,
        T.REASONING_MESSAGE_END,
        T.REASONING_END,
        T.TEXT_MESSAGE_START,
        T.TEXT_MESSAGE_CONTENT,
        T.TEXT_MESSAGE_CONTENT,
        T.TEXT_MESSAGE_END,
        T.RUN_FINISHED,
    ]
    assert events[0].thread_id == "thread-1" and events[0].run_id == "run-1"
    assert events[0].protocol_version
    assert events[2].role == "reasoning" and events[1].message_id != events[2].message_id
    assert "".join(e.delta for e in events if e.type is T.REASONING_MESSAGE_CONTENT) == "Let me think."
    assert events[7].role == "assistant"
    assert "".join(e.delta for e in events if e.type is T.TEXT_MESSAGE_CONTENT) == "The answer is 42."
    finished = events[-1]
    assert finished.thread_id == "thread-1" and finished.run_id == "run-1"
    assert finished.result == {"finishReason": "stop"} and finished.outcome is None
    usage = finished.usage[0]
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (10, 7, 17)
    assert usage.cached_input_tokens == 2 and usage.model == "model-x"


def test_content_then_two_tool_calls() -> None:
    events = run(
        [
            ContentDelta("Checking."),
            ToolCallStart(0, "call_a", "get_weather"),
            ToolCallArgsDelta(0, '{"city": '),
            ToolCallArgsDelta(0, '"Paris"}'),
            ToolCallEnd(0),
            ToolCallStart(1, "call_b", "get_time"),
            ToolCallArgsDelta(1, "{}"),
            ToolCallEnd(1),
            Finish("tool_calls"),
        ]
    )
    assert types(events) == [
        T.RUN_STARTED,
        T.TEXT_MESSAGE_START,
        T.TEXT_MESSAGE_CONTENT,
        T.TEXT_MESSAGE_END,
        T.TOOL_CALL_START,
        T.TOOL_CALL_ARGS,
        T.TOOL_CALL_ARGS,
        T.TOOL_CALL_END,
        T.TOOL_CALL_START,
        T.TOOL_CALL_ARGS,
        T.TOOL_CALL_END,
        T.RUN_FINISHED,
    ]
    message_id = events[1].message_id
    starts = [e for e in events if e.type is T.TOOL_CALL_START]
    assert [(s.tool_call_id, s.tool_call_name) for s in starts] == [
        ("call_a", "get_weather"),
        ("call_b", "get_time"),
    ]
    assert all(s.parent_message_id == message_id for s in starts)
    args = "".join(e.delta for e in events if e.type is T.TOOL_CALL_ARGS and e.tool_call_id == "call_a")
    assert json.loads(args) == {"city": "Paris"}
    assert events[-1].outcome.pending_tool_call_ids == ["call_a", "call_b"]
    assert events[-1].result == {"finishReason": "tool_calls"}


def test_tool_call_without_text_has_a_parent_message_and_is_closed_at_finish() -> None:
    events = run([ToolCallStart(0, "call_a", "f"), ToolCallArgsDelta(0, "{"), Finish("length")])
    assert types(events) == [
        T.RUN_STARTED,
        T.TOOL_CALL_START,
        T.TOOL_CALL_ARGS,
        T.TOOL_CALL_END,
        T.RUN_FINISHED,
    ]
    assert events[1].parent_message_id


def test_alternating_kinds_open_a_new_message_each_time() -> None:
    events = run(
        [
            ContentDelta("a"),
            ReasoningDelta("b"),
            ContentDelta("c"),
            ContentDelta(""),
            ReasoningDelta(""),
            Finish("stop"),
        ]
    )
    starts = [e.message_id for e in events if e.type is T.TEXT_MESSAGE_START]
    assert len(starts) == 2 and starts[0] != starts[1]
    assert types(events)[-2:] == [T.TEXT_MESSAGE_END, T.RUN_FINISHED]


def test_parse_errors_are_reported_after_the_message_closes() -> None:
    events = run(
        [
            ContentDelta('<tool_call>{"name": '),
            ParseError("unterminated tool call", "unterminated_section"),
            ContentDelta("oops"),
            Finish("stop"),
        ]
    )
    assert types(events) == [
        T.RUN_STARTED,
        T.TEXT_MESSAGE_START,
        T.TEXT_MESSAGE_CONTENT,
        T.TEXT_MESSAGE_CONTENT,
        T.TEXT_MESSAGE_END,
        T.CUSTOM,
        T.RUN_FINISHED,
    ]
    assert events[5].name == PARSE_ERROR_EVENT
    assert events[5].value == {"message": "unterminated tool call", "kind": "unterminated_section"}


def test_finish_alone_is_an_empty_run() -> None:
    assert types(run([Finish("stop")])) == [T.RUN_STARTED, T.RUN_FINISHED]


def test_error_closes_what_is_open_and_ends_the_run() -> None:
    encoder = AguiEncoder("t", "r")
    out = (
        encoder.opening()
        + encoder.encode(ReasoningDelta("hm"))
        + encoder.error("engine died", "server_error")
    )
    parsed = [EVENTS.validate_python(e.model_dump(by_alias=True)) for e in out]
    check_pairing(parsed)
    assert parsed[-1].type is T.RUN_ERROR
    assert (parsed[-1].message, parsed[-1].code) == ("engine died", "server_error")
    assert encoder.encode(ContentDelta("late")) == [] and encoder.error("again") == []


RUN = {"threadId": "t", "runId": "r"}


def test_run_input_becomes_a_chat_request() -> None:
    body = {
        **RUN,
        "messages": [
            {"id": "1", "role": "system", "content": "Be brief."},
            {
                "id": "2",
                "role": "user",
                "content": [{"type": "text", "text": "Weather "}, {"type": "text", "text": "?"}],
            },
            {"id": "3", "role": "reasoning", "content": "Need a tool."},
            {
                "id": "4",
                "role": "assistant",
                "toolCalls": [{"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}],
            },
            {"id": "5", "role": "tool", "toolCallId": "c1", "content": "sunny"},
            {"id": "6", "role": "activity", "activityType": "progress", "content": {"pct": 50}},
        ],
        "tools": [
            {"name": "w", "description": "weather", "parameters": {"type": "object", "properties": {}}}
        ],
        "context": [{"description": "city", "value": "Paris"}],
        "forwardedProps": {"max_tokens": 8, "temperature": 0, "seed": 3, "topK": 5, "unrelated": True},
    }
    request = chat_request(parse_run_input(body), n_vocab=300_000).request
    roles = [m.role for m in request.messages]
    assert roles == ["system", "user", "assistant", "tool"]
    assert request.messages[0].text() == "Be brief.\n\nContext:\n- city: Paris"
    assert request.messages[1].text() == "Weather ?"
    assistant = request.messages[2]
    assert assistant.reasoning_content == "Need a tool."
    assert assistant.tool_calls and assistant.tool_calls[0].name == "w"
    assert request.messages[3].tool_call_id == "c1" and request.messages[3].text() == "sunny"
    assert request.tools and request.tools[0].description == "weather"
    sampling = request.sampling
    assert (sampling.max_tokens, sampling.temperature, sampling.seed, sampling.top_k) == (8, 0, 3, 5)


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"threadId": "t", "messages": []}, "runId"),
        ({**RUN, "messages": [{"id": "1", "role": "user"}]}, "messages[0].content"),
        ({**RUN, "messages": [{"id": "1", "role": "wizard", "content": "x"}]}, "messages[0]"),
        (
            {**RUN, "messages": [{"id": "1", "role": "user", "content": [{"type": "image", "source": {}}]}]},
            "messages[0].content[0].source",
        ),
        (
            {
                **RUN,
                "messages": [
                    {
                        "id": "1",
                        "role": "user",
                        "content": [{"type": "image", "source": {"type": "url", "value": "u"}}],
                    }
                ],
            },
            "messages[0].content[0]",
        ),
        ({**RUN, "messages": []}, "messages"),
        (
            {**RUN, "messages": [{"id": "1", "role": "user", "content": "hi"}], "tools": [{"name": "f"}]},
            "tools[0].description",
        ),
        (
            {
                **RUN,
                "messages": [{"id": "1", "role": "user", "content": "hi"}],
                "tools": [{"name": "bad name!", "description": "d"}],
            },
            "tools[0].name",
        ),
        (
            {
                **RUN,
                "messages": [
                    {"id": "1", "role": "user", "content": "hi"},
                    {"id": "2", "role": "activity", "activityType": "x", "content": {}},
                    {"id": "3", "role": "tool", "content": "r", "toolCallId": 5},
                ],
            },
            "messages[2].toolCallId",
        ),
        (
            {
                **RUN,
                "messages": [{"id": "1", "role": "user", "content": "hi"}],
                "forwardedProps": {"temperature": 9},
            },
            "forwardedProps.temperature",
        ),
        (
            {
                **RUN,
                "messages": [{"id": "1", "role": "user", "content": "hi"}],
                "forwardedProps": {"maxTokens": 0},
            },
            "forwardedProps.maxTokens",
        ),
    ],
)
def test_bad_run_inputs_name_the_agui_field(body: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        chat_request(parse_run_input(body), n_vocab=300_000)
    assert caught.value.param == param
    assert caught.value.message.startswith(param)
