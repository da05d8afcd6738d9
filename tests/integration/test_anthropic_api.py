"""The Anthropic Messages API with the official `anthropic` SDK, unmodified, against the real server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import jsonschema
import pytest

from tests.conftest import TEMPLATES
from tests.integration.conftest import _serve
from tests.integration.server_process import ServerProcess

pytestmark = pytest.mark.integration

KEY = "anthropic-test-key"
GREEDY = {"temperature": 0}  # the SDK no longer has sampling arguments; the API still takes them
ASK = [{"role": "user", "content": "Name three colours."}]
WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
WEATHER_ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from _serve(
        tmp_path_factory, "anthropic", "--parallel", "2", "--ctx-size", "2048", "--api-key", KEY
    )


@pytest.fixture(scope="module")
def claude(keyed_server: ServerProcess) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=keyed_server.url, api_key=KEY, max_retries=0, timeout=120)


def _streamed(client: anthropic.Anthropic, **kwargs: Any) -> tuple[anthropic.types.Message, list[Any]]:
    with client.messages.stream(**kwargs) as stream:
        events = list(stream)
        return stream.get_final_message(), events


def test_create_and_stream_agree(claude: anthropic.Anthropic) -> None:
    # a cold prompt's last token is computed inside its prefill batch, a cached one alone, and llama.cpp's
    # kernels may round those apart; the comparison below is between two requests that both hit the cache
    claude.messages.create(model="x", max_tokens=1, messages=ASK, extra_body=GREEDY)
    created = claude.messages.create(model="claude-local", max_tokens=24, messages=ASK, extra_body=GREEDY)
    assert created.type == "message" and created.role == "assistant"
    assert created.content[0].type == "text" and created.content[0].text
    assert created.stop_reason in ("end_turn", "max_tokens")
    assert created.usage.input_tokens > 0 and created.usage.output_tokens > 0
    final, events = _streamed(claude, model="claude-x", max_tokens=24, messages=ASK, extra_body=GREEDY)
    assert [block.model_dump() for block in final.content] == [b.model_dump() for b in created.content]
    assert final.stop_reason == created.stop_reason
    kinds = [event.type for event in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert "content_block_start" in kinds and "content_block_delta" in kinds and "message_delta" in kinds


def test_a_stop_sequence_is_reported(claude: anthropic.Anthropic) -> None:
    reply = claude.messages.create(
        model="x", max_tokens=40, stop_sequences=["\n"], messages=ASK, extra_body=GREEDY
    )
    assert reply.stop_reason == "stop_sequence"
    assert reply.stop_sequence == "\n"
    assert "\n" not in reply.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize("choice", [{"type": "any"}, {"type": "tool", "name": "get_weather"}])
def test_forced_tool_use_streamed_and_not(claude: anthropic.Anthropic, choice: dict[str, Any]) -> None:
    common: dict[str, Any] = {
        "model": "x",
        "max_tokens": 40,
        "messages": WEATHER_ASK,
        "tools": [WEATHER],
        "tool_choice": {**choice, "disable_parallel_tool_use": True},
        "extra_body": GREEDY,
    }
    created = claude.messages.create(**common)
    uses = [block for block in created.content if block.type == "tool_use"]
    assert len(uses) == 1 and uses[0].name == "get_weather"
    assert isinstance(uses[0].input, dict) and isinstance(uses[0].input.get("city"), str)
    assert created.stop_reason == "tool_use"
    final, events = _streamed(claude, **common)
    partial = "".join(
        e.delta.partial_json
        for e in events
        if e.type == "content_block_delta" and e.delta.type == "input_json_delta"
    )
    streamed_use = next(block for block in final.content if block.type == "tool_use")
    assert json.loads(partial) == streamed_use.input == uses[0].input  # fragments join to the input


def test_tool_result_round_trip(claude: anthropic.Anthropic) -> None:
    history: list[Any] = [
        *WEATHER_ASK,
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "Sunny, 24 C"}],
        },
    ]
    reply = claude.messages.create(
        model="x", max_tokens=16, messages=history, tools=[WEATHER], extra_body=GREEDY
    )
    assert reply.content and reply.usage.input_tokens > 20


def test_output_config_format_validates(claude: anthropic.Anthropic) -> None:
    schema = {
        "type": "object",
        "properties": {"colour": {"type": "string", "enum": ["red", "green", "blue"]}},
        "required": ["colour"],
        "additionalProperties": False,
    }
    reply = claude.messages.create(
        model="x",
        max_tokens=120,
        messages=[{"role": "user", "content": "Pick a colour, in JSON."}],
        output_config={"format": {"type": "json_schema", "schema": schema}},
        extra_body=GREEDY,
    )
    jsonschema.validate(json.loads(reply.content[0].text), schema)  # type: ignore[union-attr]


def test_count_tokens_matches_the_prompt(claude: anthropic.Anthropic) -> None:
    counted = claude.messages.count_tokens(model="x", messages=ASK)
    created = claude.messages.create(model="x", max_tokens=1, messages=ASK, extra_body=GREEDY)
    usage = created.usage
    assert counted.input_tokens == usage.input_tokens + (usage.cache_read_input_tokens or 0)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"model": "x", "messages": ASK}, "max_tokens"),
        ({"model": "x", "max_tokens": 5, "messages": [{"role": "bot", "content": "x"}]}, "messages[0].role"),
        (
            {
                "model": "x",
                "max_tokens": 5,
                "messages": ASK,
                "tools": [WEATHER],
                "tool_choice": {"type": "tool"},
            },
            "tool_choice.name",
        ),
        (
            {
                "model": "x",
                "max_tokens": 5,
                "messages": ASK,
                "tools": [WEATHER],
                "tool_choice": {"type": "tool", "name": "nope"},
            },
            "tool_choice.name",
        ),
        (
            {
                "model": "x",
                "max_tokens": 5,
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "image",
                                "source": {"type": "base64", "media_type": "image/png", "data": "AA=="},
                            }
                        ],
                    }
                ],
            },
            "messages[0].content[0]",
        ),
    ],
)
def test_errors_are_anthropic_shaped_and_name_the_field(
    keyed_server: ServerProcess, body: dict[str, Any], field: str
) -> None:
    response = httpx.post(
        f"{keyed_server.url}/v1/messages", json=body, headers={"x-api-key": KEY}, timeout=60
    )
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert error["error"]["message"].startswith(field)


def test_keys_by_header_or_bearer_and_wrong_keys_refused(keyed_server: ServerProcess) -> None:
    body = {"model": "x", "max_tokens": 1, "messages": ASK}
    url = f"{keyed_server.url}/v1/messages"
    assert httpx.post(url, json=body, headers={"x-api-key": KEY}, timeout=60).status_code == 200
    assert (
        httpx.post(url, json=body, headers={"authorization": f"Bearer {KEY}"}, timeout=60).status_code == 200
    )
    refused = httpx.post(url, json=body, headers={"x-api-key": "wrong"}, timeout=60)
    assert refused.status_code == 401
    assert refused.json()["error"]["type"] == "authentication_error"
    with pytest.raises(anthropic.AuthenticationError):
        anthropic.Anthropic(base_url=keyed_server.url, api_key="wrong", max_retries=0).messages.create(
            model="x", max_tokens=1, messages=ASK
        )


@pytest.fixture(scope="module")
def thinking_claude(tmp_path_factory: pytest.TempPathFactory) -> Iterator[anthropic.Anthropic]:
    template = TEMPLATES / "GLM-4.7-Flash.jinja"  # its generation prompt opens the reasoning
    for server in _serve(
        tmp_path_factory, "anthropic-thinking", "--parallel", "1", "--chat-template-file", str(template)
    ):
        yield anthropic.Anthropic(base_url=server.url, api_key="x", max_retries=0, timeout=120)


def test_thinking_with_a_budget_then_the_answer(thinking_claude: anthropic.Anthropic) -> None:
    common: dict[str, Any] = {
        "model": "x",
        "max_tokens": 40,
        "messages": [{"role": "user", "content": "Tell me about the sea."}],
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "extra_body": {**GREEDY, "thinking": {"type": "enabled", "budget_tokens": 8}},
    }
    # Warm the prompt's KV prefix first: on some CPUs a cold prefill and one that reuses the cached
    # prefix round differently (other matmul kernels for the shorter batch), so greedy text can differ
    # between them. Both compared requests then start from the same cache state.
    thinking_claude.messages.create(**common)
    created = thinking_claude.messages.create(**common)
    kinds = [block.type for block in created.content]
    assert kinds[0] == "thinking" and "text" in kinds  # the budget ended the reasoning; the answer followed
    thinking = created.content[0]
    assert thinking.thinking and thinking.signature  # type: ignore[union-attr]
    final, events = _streamed(thinking_claude, **common)
    assert [b.model_dump() for b in final.content] == [b.model_dump() for b in created.content]
    deltas = {e.delta.type for e in events if e.type == "content_block_delta"}
    assert {"thinking_delta", "signature_delta", "text_delta"} <= deltas
    off = thinking_claude.messages.create(
        **{**common, "extra_body": {**GREEDY, "thinking": {"type": "disabled"}}}
    )
    assert all(block.type != "thinking" for block in off.content)
