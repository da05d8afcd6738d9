"""The AG-UI endpoint against the real server: a RunAgentInput streams back AG-UI events that the
ag-ui-protocol package parses, in a well-formed order; bad input is a 400 naming the AG-UI field."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
import openai
import pytest
from ag_ui.core import Event as AguiEvent
from ag_ui.core import EventType, RunAgentInput, TextMessageStartEvent
from pydantic import TypeAdapter

from tests.integration.server_process import ServerProcess

pytestmark = pytest.mark.integration

EVENTS: TypeAdapter[Any] = TypeAdapter(AguiEvent)
T = EventType
TIMEOUT = httpx.Timeout(60.0, connect=10.0)
MESSAGES = [
    {"id": "m1", "role": "system", "content": "You answer briefly."},
    {"id": "m2", "role": "user", "content": "Name three colors."},
]


def run_input(**fields: Any) -> dict[str, Any]:
    body = {
        "threadId": f"thread-{uuid.uuid4().hex[:8]}",
        "runId": f"run-{uuid.uuid4().hex[:8]}",
        "messages": MESSAGES,
        "forwardedProps": {"max_tokens": 12, "temperature": 0},
    }
    body.update(fields)
    RunAgentInput.model_validate(body)  # the test sends what the protocol's own client would
    return body


def stream_run(http: httpx.Client, body: dict[str, Any], path: str = "/agui") -> list[Any]:
    """POSTs a run and parses every SSE `data:` line with ag-ui-protocol's event models."""
    events = []
    with http.stream("POST", path, json=body, timeout=TIMEOUT) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append(EVENTS.validate_json(line.removeprefix("data: ")))
            else:
                assert line == "", line
    return events


def assert_well_formed(events: list[Any], body: dict[str, Any]) -> None:
    assert events[0].type is T.RUN_STARTED
    assert (events[0].thread_id, events[0].run_id) == (body["threadId"], body["runId"])
    assert events[-1].type is T.RUN_FINISHED
    assert (events[-1].thread_id, events[-1].run_id) == (body["threadId"], body["runId"])
    open_id: str | None = None
    for event in events[1:-1]:
        assert event.type not in (T.RUN_STARTED, T.RUN_FINISHED, T.RUN_ERROR)
        if event.type is T.TEXT_MESSAGE_START:
            assert open_id is None
            open_id = event.message_id
        elif event.type is T.TEXT_MESSAGE_CONTENT:
            assert event.message_id == open_id and event.delta
        elif event.type is T.TEXT_MESSAGE_END:
            assert event.message_id == open_id
            open_id = None
    assert open_id is None


def text_of(events: list[Any]) -> str:
    return "".join(e.delta for e in events if e.type is T.TEXT_MESSAGE_CONTENT)


@pytest.mark.parametrize("path", ["/agui", "/v1/agui"])
def test_run_streams_a_well_formed_text_message(http: httpx.Client, path: str) -> None:
    body = run_input()
    events = stream_run(http, body, path)
    assert_well_formed(events, body)
    starts = [e for e in events if isinstance(e, TextMessageStartEvent)]
    assert len(starts) == 1 and starts[0].role == "assistant"
    assert text_of(events).strip()
    finished = events[-1]
    assert finished.result == {"finishReason": "length"}
    assert finished.usage[0].output_tokens == 12 and finished.usage[0].input_tokens > 10


def test_run_gives_the_same_text_as_chat_completions(http: httpx.Client, client: openai.OpenAI) -> None:
    """Same conversation and sampling as the OpenAI route, so the same greedy text."""
    events = stream_run(http, run_input(forwardedProps={"maxTokens": 16, "temperature": 0}))
    chat = client.chat.completions.create(
        model="",
        messages=[{"role": m["role"], "content": m["content"]} for m in MESSAGES],  # type: ignore[misc]
        max_tokens=16,
        temperature=0,
    )
    assert text_of(events) == chat.choices[0].message.content


def test_run_with_tools_and_a_tool_round_finishes(http: httpx.Client) -> None:
    messages = [
        {"id": "m1", "role": "user", "content": "What is the weather in Paris?"},
        {
            "id": "m2",
            "role": "assistant",
            "toolCalls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"id": "m3", "role": "tool", "toolCallId": "call_1", "content": "sunny, 21 C"},
    ]
    tools = [
        {
            "name": "get_weather",
            "description": "Current weather of a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        }
    ]
    body = run_input(messages=messages, tools=tools, context=[{"description": "units", "value": "metric"}])
    events = stream_run(http, body)
    assert_well_formed(events, body)
    assert events[-1].result["finishReason"] in ("stop", "length", "tool_calls")


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"threadId": "t", "messages": []}, "runId"),
        ({"threadId": "t", "runId": "r", "messages": [{"id": "1", "role": "user"}]}, "messages[0].content"),
        ({"threadId": "t", "runId": "r", "messages": []}, "messages"),
        (
            {
                "threadId": "t",
                "runId": "r",
                "messages": [{"id": "1", "role": "user", "content": "hi"}],
                "forwardedProps": {"temperature": "hot"},
            },
            "forwardedProps.temperature",
        ),
    ],
)
def test_bad_run_input_is_400_naming_the_field(http: httpx.Client, body: dict[str, Any], param: str) -> None:
    response = http.post("/agui", json=body, timeout=TIMEOUT)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == param


def test_malformed_json_is_400(http: httpx.Client) -> None:
    response = http.post("/agui", content=b'{"threadId": ', timeout=TIMEOUT)
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"


def _busy_slots(server: ServerProcess) -> float:
    for line in httpx.get(f"{server.url}/metrics", timeout=10).text.splitlines():
        if line.startswith("tokenloom_busy_slots "):
            return float(line.split()[1])
    raise AssertionError("no busy-slots metric")


def test_disconnecting_a_run_frees_its_slot(server: ServerProcess) -> None:
    body = run_input(
        messages=[{"id": "1", "role": "user", "content": "Tell me a long story."}],
        forwardedProps={"max_tokens": 1500},
    )
    with httpx.Client(timeout=TIMEOUT) as c, c.stream("POST", f"{server.url}/agui", json=body) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data: ") and '"TEXT_MESSAGE_CONTENT"' in line:
                break  # hang up mid-generation
    deadline = time.monotonic() + 5
    while _busy_slots(server) > 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _busy_slots(server) == 0
