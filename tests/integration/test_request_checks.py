"""Requests the adapter must refuse with a 400 naming the exact field, and a continued assistant message,
against the real server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from tests.integration.conftest import _serve
from tests.integration.server_process import ServerProcess
from tokenloom.engine.vocab import load_tokenizer

USER = {"role": "user", "content": "Hello"}
CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


def _tool(name: str, parameters: Any = None) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name}
    if parameters is not None:
        function["parameters"] = parameters
    return {"type": "function", "function": function}


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"messages": [USER, {"role": "tool", "content": "sunny"}]}, "messages[1].tool_call_id"),
        ({"messages": [USER, {"role": "assistant"}]}, "messages[1].content"),
        (
            {
                "messages": [
                    USER,
                    {
                        "role": "assistant",
                        "tool_calls": [{**CALL, "function": {"name": "f", "arguments": "{oops"}}],
                    },
                ]
            },
            "messages[1].tool_calls[0].function.arguments",
        ),
        ({"messages": [USER], "tools": [_tool("f"), _tool("f")]}, "tools[1].function.name"),
        ({"messages": [USER], "tools": [_tool("a.b")]}, "tools[0].function.name"),
        ({"messages": [USER], "tools": [_tool("x" * 65)]}, "tools[0].function.name"),
        ({"messages": [USER], "tools": [_tool("f", "not an object")]}, "tools[0].function.parameters"),
        (
            {
                "messages": [USER],
                "tools": [
                    _tool("ok", {"type": "object", "properties": {}}),
                    _tool("f", {"type": "object", "properties": {"reason": {"type": "strin"}}}),
                ],
            },
            "tools[1].function.parameters.properties.reason.type",
        ),
        ({"messages": [USER], "chat_template": "{{ messages }}"}, "chat_template"),
        ({"messages": [USER], "logit_bias": {"262144": 1}}, "logit_bias.262144"),
        (
            {
                "messages": [USER],
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {
                        "name": "loop",
                        "schema": {"type": "object", "properties": {"x": {"$ref": "#"}}, "required": ["x"]},
                    },
                },
            },
            "response_format.json_schema.schema",
        ),
        (
            {"messages": [USER], "chat_template_kwargs": {"chat_template": "{{ messages }}"}},
            "chat_template_kwargs.chat_template",
        ),
        *[
            ({"messages": [USER], "chat_template_kwargs": {name: value}}, f"chat_template_kwargs.{name}")
            for name, value in [
                ("tokenize", True),
                ("messages", []),
                ("tools", []),
                ("add_generation_prompt", False),
                ("raise_exception", "x"),
                ("bos_token", "<eos>"),
                ("eos_token", "x"),
                ("strftime_now", "x"),
                ("documents", []),
            ]
        ],
    ],
)
def test_bad_requests_name_the_field(http: httpx.Client, body: dict[str, Any], param: str) -> None:
    response = http.post("/v1/chat/completions", json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param


def test_nan_temperature_names_the_field(http: httpx.Client) -> None:
    raw = b'{"messages": [{"role": "user", "content": "x"}], "temperature": NaN}'
    response = http.post("/v1/chat/completions", content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "temperature"


def _usage(client: openai.OpenAI, messages: list[dict[str, Any]], **extra: Any) -> tuple[str, int]:
    reply = client.chat.completions.create(
        model="",
        messages=messages,
        max_tokens=6,
        temperature=0,
        extra_body=extra,  # type: ignore[arg-type]
    )
    assert reply.usage is not None
    return reply.choices[0].message.content or "", reply.usage.prompt_tokens


def test_a_final_assistant_message_is_continued(client: openai.OpenAI, http: httpx.Client) -> None:
    question = {"role": "user", "content": "Name a colour."}
    prefill = {"role": "assistant", "content": "My favourite colour is"}
    _, fresh_turn = _usage(client, [question])
    continued, continued_tokens = _usage(client, [question, prefill])
    _, new_turn_tokens = _usage(client, [question, prefill], continue_final_message=False)
    # the prompt ends inside the assistant message: the question's generation prompt plus the prefill ...
    assert fresh_turn + 4 <= continued_tokens <= fresh_turn + 7
    # ... and not a closed assistant turn followed by a new one
    assert new_turn_tokens > continued_tokens
    with client.chat.completions.create(
        model="",
        messages=[question, prefill],
        max_tokens=6,
        temperature=0,
        stream=True,  # type: ignore[list-item]
    ) as stream:
        streamed = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert streamed == continued


def test_a_huge_prompt_names_its_tokens_and_the_context(http: httpx.Client) -> None:
    body = {"messages": [{"role": "user", "content": "word " * 2_000_000}], "max_tokens": 4}  # 10 MB
    response = http.post("/v1/chat/completions", json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == "messages" and error["code"] == "context_length_exceeded"
    assert "tokens" in error["message"] and "2048" in error["message"]


def test_agui_errors_from_the_pipeline_name_agui_fields(http: httpx.Client) -> None:
    run = {
        "threadId": "t",
        "runId": "r",
        "messages": [{"id": "1", "role": "user", "content": "hi"}],
        "tools": [
            {
                "name": "f",
                "description": "d",
                "parameters": {"type": "object", "properties": {"x": {"type": "strin"}}},
            }
        ],
        "state": {},
        "context": [],
        "forwardedProps": {"toolChoice": "required"},
    }
    response = http.post("/agui", json=run)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == "tools[0].parameters.properties.x.type"


@pytest.fixture(scope="module")
def templates_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from _serve(tmp_path_factory, "request-templates", "--parallel", "1", "--allow-request-templates")


@pytest.mark.parametrize("where", ["chat_template", "chat_template_kwargs"])
def test_an_allowed_request_template_renders_the_prompt(templates_server: ServerProcess, where: str) -> None:
    template = "{{ bos_token }}Q: {{ messages[-1]['content'] }}\nA:"
    body: dict[str, Any] = {"messages": [USER], "max_tokens": 1, "temperature": 0}
    if where == "chat_template":
        body["chat_template"] = template
    else:
        body["chat_template_kwargs"] = {"chat_template": template}
    response = httpx.post(f"{templates_server.base_url}/chat/completions", json=body, timeout=60)
    assert response.status_code == 200, response.text
    expected = load_tokenizer().tokenize("<bos>Q: Hello\nA:", parse_special=True)
    assert response.json()["usage"]["prompt_tokens"] == len(expected)
