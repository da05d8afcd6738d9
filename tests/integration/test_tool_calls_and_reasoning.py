"""Tool calls and reasoning through the HTTP API on the real default model, in other models' formats.

The 270M model knows none of these formats, so the test forces the shape: tool calls with tool_choice
(constrained decoding writes the template's own call syntax) and reasoning with a template whose generation
prompt opens the reasoning block. Assertions are on structure, never on the model's choices.
"""

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
    "properties": {
        "city": {"type": "string", "minLength": 1, "maxLength": 30},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
        "unit": {"enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city", "days", "unit"],
}
TIME = {"type": "object", "properties": {"zone": {"type": "string", "maxLength": 20}}, "required": ["zone"]}
TOOLS = [
    {
        "type": "function",
        "function": {"name": "get_weather", "description": "Forecast", "parameters": WEATHER},
    },
    {"type": "function", "function": {"name": "get_time", "description": "Clock", "parameters": TIME}},
]
SCHEMAS = {"get_weather": WEATHER, "get_time": TIME}
ASK = [{"role": "user", "content": "What's the weather in Paris for three days?"}]

FORMATS = {
    "json-in-tags": "Qwen-Qwen2.5-7B-Instruct.jinja",  # <tool_call>{"name":..., "arguments":...}</tool_call>
    "tagged-arguments": "Qwen3-Coder.jinja",  # <function=x><parameter=k>v</parameter></function>
    "bracket-tag": "Mistral-Small-3.2-24B-Instruct-2506.jinja",  # [TOOL_CALLS]name[ARGS]{...}
}


@pytest.fixture(scope="module", params=sorted(FORMATS), ids=sorted(FORMATS))
def format_client(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[openai.OpenAI]:
    template = TEMPLATES / FORMATS[request.param]
    for server in _serve(
        tmp_path_factory,
        request.param,
        "--parallel",
        "2",
        "--ctx-size",
        "2048",
        "--chat-template-file",
        str(template),
    ):
        yield openai.OpenAI(base_url=server.base_url, api_key="x", timeout=TIMEOUT, max_retries=0)


def _forced(client: openai.OpenAI, tool_choice: Any, **extra: Any) -> Any:
    return client.chat.completions.create(
        model="", messages=ASK, tools=TOOLS, tool_choice=tool_choice, parallel_tool_calls=False,
        max_tokens=200, temperature=0, **extra,
    )  # fmt: skip


@pytest.mark.parametrize("tool_choice", ["required", {"type": "function", "function": {"name": "get_time"}}])
def test_forced_tool_call_is_well_formed_and_valid(format_client: openai.OpenAI, tool_choice: Any) -> None:
    r = _forced(format_client, tool_choice)
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    assert len(calls) == 1
    call = calls[0]
    assert call.id and call.type == "function"
    if isinstance(tool_choice, dict):
        assert call.function.name == "get_time"
    jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[call.function.name])


def test_streamed_tool_call_reassembles_to_the_non_streamed_one(format_client: openai.OpenAI) -> None:
    whole = _forced(format_client, "required").choices[0].message.tool_calls[0]
    chunks = list(_forced(format_client, "required", stream=True))
    deltas = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    first = deltas[0]
    assert first.index == 0 and first.id and first.type == "function"
    assert first.function is not None and first.function.name == whole.function.name
    assert first.function.arguments == ""
    fragments = [d.function.arguments for d in deltas[1:] if d.function and d.function.arguments]
    assert len(fragments) > 1  # the arguments arrive while the model writes them, not in one piece at the end
    assert "".join(fragments) == whole.function.arguments
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == [
        "tool_calls"
    ]


@pytest.fixture(scope="module")
def reasoning_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    # QwQ's generation prompt ends with "<think>\n": everything up to "</think>" is reasoning
    template = TEMPLATES / "Qwen-QwQ-32B.2025-03.jinja"
    yield from _serve(
        tmp_path_factory,
        "qwq",
        "--parallel",
        "1",
        "--ctx-size",
        "1024",
        "--chat-template-file",
        str(template),
    )


def test_reasoning_is_kept_apart_streamed_and_not(reasoning_server: ServerProcess) -> None:
    client = openai.OpenAI(base_url=reasoning_server.base_url, api_key="x", timeout=TIMEOUT, max_retries=0)
    whole = client.chat.completions.create(model="", messages=ASK, max_tokens=12, temperature=0)
    message = whole.choices[0].message
    reasoning = message.model_extra["reasoning_content"]  # type: ignore[index]
    assert reasoning and "<think>" not in reasoning and "</think>" not in reasoning
    assert (message.content or "") + reasoning
    assert whole.model_extra["extensions"]["reasoning_chunks"]  # type: ignore[index]
    chunks = client.chat.completions.create(model="", messages=ASK, max_tokens=12, temperature=0, stream=True)
    streamed_reasoning, streamed_content = "", ""
    for c in chunks:
        if c.choices:
            streamed_reasoning += (c.choices[0].delta.model_extra or {}).get("reasoning_content") or ""
            streamed_content += c.choices[0].delta.content or ""
    assert streamed_reasoning == reasoning
    assert streamed_content == (message.content or "")
