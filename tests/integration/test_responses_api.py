"""The OpenAI Responses API through the official `openai` client, unmodified, on the real model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import openai
import pytest

from tests.conftest import TEMPLATES
from tests.integration.conftest import TIMEOUT, _serve
from tests.integration.server_process import ServerProcess

pytestmark = pytest.mark.integration

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 20}},
    "required": ["city"],
    "additionalProperties": False,
}
TOOLS: Any = [{"type": "function", "name": "get_weather", "description": "Forecast", "parameters": WEATHER}]


def _text(response: Any) -> str:
    return "".join(part.text for item in response.output if item.type == "message" for part in item.content)


def test_create_and_stream_agree(client: openai.OpenAI) -> None:
    whole = client.responses.create(model="", input="Say hello.", max_output_tokens=12, temperature=0)
    assert whole.status in ("completed", "incomplete") and whole.usage is not None
    assert whole.usage.input_tokens > 0 and whole.output_text == _text(whole)
    with client.responses.stream(model="", input="Say hello.", max_output_tokens=12, temperature=0) as stream:
        events = list(stream)
    deltas = [event.delta for event in events if event.type == "response.output_text.delta"]
    terminal: Any = events[-1]
    assert terminal.type == f"response.{whole.status}"  # completed, or incomplete at max_output_tokens
    assert "".join(deltas) == whole.output_text == terminal.response.output_text


def test_stream_events_are_numbered_and_ordered(client: openai.OpenAI) -> None:
    with client.responses.stream(
        model="", input="Count to three.", max_output_tokens=8, temperature=0
    ) as stream:
        events = list(stream)
    assert [e.sequence_number for e in events] == list(range(len(events)))
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] in ("response.completed", "response.incomplete")
    assert kinds.index("response.output_item.added") < kinds.index("response.output_text.delta")


def test_previous_response_continues_and_store_bounds(client: openai.OpenAI) -> None:
    first = client.responses.create(model="", input="My name is Ada.", max_output_tokens=6, temperature=0)
    second = client.responses.create(
        model="", input="What is my name?", previous_response_id=first.id, max_output_tokens=6, temperature=0
    )
    assert second.usage is not None and first.usage is not None
    assert second.usage.input_tokens > first.usage.input_tokens  # the earlier turn is in the prompt
    assert second.usage.input_tokens_details.cached_tokens > 0  # and its KV was reused
    fetched = client.responses.retrieve(second.id)
    assert fetched.id == second.id and fetched.output_text == second.output_text
    client.responses.delete(second.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(second.id)
    with pytest.raises(openai.NotFoundError) as info:
        client.responses.create(model="", input="x", previous_response_id="resp_missing", max_output_tokens=2)
    assert info.value.body["param"] == "previous_response_id"  # type: ignore[index]


def test_json_schema_text_format(client: openai.OpenAI) -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "integer", "minimum": 0, "maximum": 9}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    response = client.responses.create(
        model="",
        input="What is 2 + 2? Answer in JSON.",
        text={"format": {"type": "json_schema", "name": "reply", "schema": schema, "strict": True}},
        max_output_tokens=400,
        temperature=0,
    )
    assert response.status == "completed", response.output_text
    jsonschema.validate(json.loads(response.output_text), schema)


def test_bad_input_names_the_field(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model="", input=[], max_output_tokens=2)  # type: ignore[arg-type]
    assert info.value.body["param"] == "input"  # type: ignore[index]


@pytest.fixture(scope="module")
def tool_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[openai.OpenAI]:
    template = TEMPLATES / "Qwen-Qwen2.5-7B-Instruct.jinja"  # <tool_call>{"name":..., "arguments":...}
    server: ServerProcess
    for server in _serve(
        tmp_path_factory, "responses-tools", "--parallel", "2", "--chat-template-file", str(template)
    ):
        yield openai.OpenAI(base_url=server.base_url, api_key="unused", timeout=TIMEOUT, max_retries=0)


def test_function_call_round_trip(tool_client: openai.OpenAI) -> None:
    ask = [{"role": "user", "content": "Weather in Paris?"}]
    first = tool_client.responses.create(
        model="",
        input=ask,
        tools=TOOLS,
        tool_choice="required",
        max_output_tokens=40,
        temperature=0,  # type: ignore[arg-type]
    )
    calls = [item for item in first.output if item.type == "function_call"]
    assert calls and calls[0].name == "get_weather"
    jsonschema.validate(json.loads(calls[0].arguments), WEATHER)
    with tool_client.responses.stream(
        model="",
        input=ask,
        tools=TOOLS,
        tool_choice="required",
        max_output_tokens=40,
        temperature=0,  # type: ignore[arg-type]
    ) as stream:
        fragments = [e.delta for e in stream if e.type == "response.function_call_arguments.delta"]
    assert "".join(fragments) == calls[0].arguments
    follow = [
        *ask,
        {
            "type": "function_call",
            "call_id": calls[0].call_id,
            "name": "get_weather",
            "arguments": calls[0].arguments,
        },
        {"type": "function_call_output", "call_id": calls[0].call_id, "output": "sunny, 21 C"},
    ]
    answer = tool_client.responses.create(
        model="", input=follow, tools=TOOLS, max_output_tokens=12, temperature=0
    )  # type: ignore[arg-type]
    assert answer.status in ("completed", "incomplete")
    assert answer.usage is not None and answer.usage.input_tokens > (
        first.usage.input_tokens if first.usage else 0
    )
