"""Requests the adapter must refuse with a 400 naming the exact field, and a continued assistant message,
against the real server."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

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
