"""The server's validated request models, dumped as the lead will dump them, render like plain dicts."""

from __future__ import annotations

from typing import Any

import harmony_cases as cases

from tokenloom.harmony import render_chat_request
from tokenloom.server import wire

BODY: dict[str, Any] = {
    "model": "gpt-oss",
    "messages": [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        *cases.TOOL_ROUND,
    ],
    "tools": [cases.WEATHER_TOOL, {"type": "function", "function": {"name": "now"}}],
    "reasoning_effort": "minimal",
    "response_format": cases.SHOPPING_FORMAT,
}


def _options(request: Any) -> dict[str, Any]:
    fmt = request.response_format
    return {
        "tools": [t.model_dump(exclude_none=True) for t in request.tools] if request.tools else None,
        "reasoning_effort": request.reasoning_effort,
        "response_format": fmt.model_dump(exclude_none=True, by_alias=True) if fmt else None,
        "current_date": "2025-06-28",
    }


def test_wire_request_renders_like_dicts() -> None:
    request = wire.ChatCompletionRequest.model_validate(BODY)
    messages = [m.model_dump(exclude_none=True) for m in request.messages]
    got = render_chat_request(messages, **_options(request))
    expected = render_chat_request(
        [{"role": "system", "content": "Be brief."}, *cases.TOOL_ROUND],
        tools=BODY["tools"],
        reasoning_effort="low",
        response_format=cases.SHOPPING_FORMAT,
        current_date="2025-06-28",
    )
    assert got == expected
    assert "Reasoning: low" in got
    assert "type now = () => any;" in got
    assert '<|message|>{"location": "Tokyo"}<|call|>' in got


def test_boolean_schema_is_accepted() -> None:
    body = {
        **BODY,
        "response_format": {"type": "json_schema", "json_schema": {"name": "any", "schema": True}},
    }
    request = wire.ChatCompletionRequest.model_validate(body)
    messages = [m.model_dump(exclude_none=True) for m in request.messages]
    assert "# Response Formats\n\n## any\n\n{}<|end|>" in render_chat_request(messages, **_options(request))
