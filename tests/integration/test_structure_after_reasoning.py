"""Structured output after reasoning, on the real engine with a reasoning template: the reasoning budget
ends the (forced-open) reasoning, the JSON answer lands in `content` and validates."""

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

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "integer", "minimum": 0, "maximum": 99}},
    "required": ["answer"],
    "additionalProperties": False,
}
FORMAT = {"type": "json_schema", "json_schema": {"name": "reply", "schema": SCHEMA, "strict": True}}
ASK = [{"role": "user", "content": "What is 2 + 2? Reply in JSON."}]


@pytest.fixture(scope="module")
def thinking_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[openai.OpenAI]:
    template = TEMPLATES / "Qwen3.5-4B.jinja"  # its generation prompt opens "<think>\n"
    server: ServerProcess
    for server in _serve(
        tmp_path_factory,
        "qwen35",
        "--parallel",
        "2",
        "--ctx-size",
        "2048",
        "--chat-template-file",
        str(template),
    ):
        yield openai.OpenAI(base_url=server.base_url, api_key="unused", timeout=TIMEOUT, max_retries=0)


def _ask(client: openai.OpenAI, **extra: Any) -> Any:
    return client.chat.completions.create(
        model="",
        messages=ASK,  # type: ignore[arg-type]
        response_format=FORMAT,  # type: ignore[arg-type]
        max_tokens=60,
        temperature=0,
        extra_body={"reasoning_budget": 6, **extra},
    )


def test_json_follows_a_budgeted_reasoning(thinking_client: openai.OpenAI) -> None:
    reply = _ask(thinking_client)
    message = reply.choices[0].message
    assert message.reasoning_content  # the model reasoned (6 tokens) before the answer
    jsonschema.validate(json.loads(message.content or ""), SCHEMA)
    assert reply.choices[0].finish_reason == "stop"


def test_streamed_answer_equals_the_collected_one(thinking_client: openai.OpenAI) -> None:
    whole = _ask(thinking_client).choices[0].message
    stream = thinking_client.chat.completions.create(
        model="",
        messages=ASK,  # type: ignore[arg-type]
        response_format=FORMAT,  # type: ignore[arg-type]
        max_tokens=60,
        temperature=0,
        stream=True,
        extra_body={"reasoning_budget": 6},
    )
    content, reasoning = [], []
    for chunk in stream:
        if chunk.choices:
            delta: Any = chunk.choices[0].delta
            content.append(delta.content or "")
            reasoning.append(getattr(delta, "reasoning_content", None) or "")
    assert "".join(content) == whole.content
    assert "".join(reasoning) == whole.reasoning_content


def test_thinking_off_answers_at_once(thinking_client: openai.OpenAI) -> None:
    reply = _ask(thinking_client, chat_template_kwargs={"enable_thinking": False})
    message = reply.choices[0].message
    assert not getattr(message, "reasoning_content", None)
    jsonschema.validate(json.loads(message.content or ""), SCHEMA)


@pytest.fixture(scope="module")
def lfm_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[openai.OpenAI]:
    template = TEMPLATES / "LFM2.5-8B-A1B.jinja"  # <|tool_call_start|>[name(arg="v")]<|tool_call_end|>
    server: ServerProcess
    for server in _serve(tmp_path_factory, "lfm25", "--parallel", "1", "--chat-template-file", str(template)):
        yield openai.OpenAI(base_url=server.base_url, api_key="unused", timeout=TIMEOUT, max_retries=0)


@pytest.mark.parametrize("stream", [False, True])
def test_reasoning_format_none_still_returns_tool_calls(lfm_client: openai.OpenAI, stream: bool) -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 12}},
        "required": ["city"],
    }
    tools: Any = [{"type": "function", "function": {"name": "get_time", "parameters": schema}}]
    args: dict[str, Any] = {
        "model": "",
        "messages": [{"role": "user", "content": "Time in Paris?"}],
        "tools": tools,
        "tool_choice": "required",
        "max_tokens": 60,
        "temperature": 0,
        "extra_body": {"reasoning_format": "none"},
    }
    if not stream:
        calls = lfm_client.chat.completions.create(**args).choices[0].message.tool_calls or []
        assert [call.function.name for call in calls] == ["get_time"]
        jsonschema.validate(json.loads(calls[0].function.arguments), schema)
        return
    names = [
        call.function.name
        for chunk in lfm_client.chat.completions.create(**args, stream=True)
        if chunk.choices
        for call in chunk.choices[0].delta.tool_calls or []
        if call.function and call.function.name
    ]
    assert names == ["get_time"]


@pytest.fixture(scope="module")
def qwen3_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[openai.OpenAI]:
    template = TEMPLATES / "Qwen-Qwen3-0.6B.jinja"  # its generation prompt leaves reasoning to the model
    server: ServerProcess
    for server in _serve(
        tmp_path_factory,
        "qwen3",
        "--parallel",
        "2",
        "--ctx-size",
        "1024",
        "--chat-template-file",
        str(template),
    ):
        yield openai.OpenAI(base_url=server.base_url, api_key="unused", timeout=TIMEOUT, max_retries=0)


def test_a_prefill_that_opened_reasoning_is_continued_inside_it(qwen3_client: openai.OpenAI) -> None:
    """The final assistant message opened `<think>`: the continuation is reasoning until the (budgeted) end
    marker, which never leaks into the content; streamed and collected agree."""
    messages: Any = [*ASK, {"role": "assistant", "content": "<think>\nLet me add"}]
    extra = {"reasoning_budget": 5}
    reply = qwen3_client.chat.completions.create(
        model="", messages=messages, max_tokens=30, temperature=0, extra_body=extra
    )
    message = reply.choices[0].message
    reasoning = getattr(message, "reasoning_content", None)
    assert reasoning, message
    assert "</think>" not in (message.content or "") and "<think>" not in (message.content or "")
    stream = qwen3_client.chat.completions.create(
        model="", messages=messages, max_tokens=30, temperature=0, extra_body=extra, stream=True
    )
    content, streamed_reasoning = "", ""
    for chunk in stream:
        if chunk.choices:
            delta = chunk.choices[0].delta
            content += delta.content or ""
            streamed_reasoning += getattr(delta, "reasoning_content", None) or ""
    assert (content, streamed_reasoning) == ((message.content or ""), reasoning)
