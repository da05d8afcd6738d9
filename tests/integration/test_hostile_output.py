"""Malformed model output through the real server: the output is forced with a regex response format (the
default model would never write it by itself), then parsed as any answer is."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import TEMPLATES
from tests.integration.conftest import _serve
from tests.integration.server_process import ServerProcess

pytestmark = pytest.mark.integration

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


@pytest.fixture(scope="module")
def lfm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    template = TEMPLATES / "LFM2.5-8B-A1B.jinja"  # Pythonic calls: <|tool_call_start|>[NAME(k=v)]
    yield from _serve(tmp_path_factory, "lfm", "--parallel", "1", "--ctx-size", "2048",
                      "--chat-template-file", str(template))  # fmt: skip


@pytest.fixture(scope="module")
def hermes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    template = TEMPLATES / "Qwen-Qwen2.5-7B-Instruct.jinja"  # <tool_call>{"name", "arguments"}</tool_call>
    yield from _serve(tmp_path_factory, "hermes", "--parallel", "1", "--ctx-size", "2048",
                      "--chat-template-file", str(template))  # fmt: skip


def _forced(server: ServerProcess, pattern: str, stream: bool) -> tuple[str, list[Any], str]:
    """Content, tool calls and finish reason of an answer forced to match `pattern`."""
    body = {
        "messages": [{"role": "user", "content": "Weather?"}],
        "tools": TOOLS,
        "max_tokens": 600,
        "temperature": 0,
        "stream": stream,
        "response_format": {"type": "regex", "regex": pattern},
    }
    with httpx.Client(timeout=600) as client:
        if not stream:
            reply = client.post(f"{server.base_url}/chat/completions", json=body)
            assert reply.status_code == 200, reply.text
            choice = reply.json()["choices"][0]
            return (
                choice["message"]["content"] or "",
                choice["message"].get("tool_calls") or [],
                choice["finish_reason"],
            )
        content, calls, finish = "", [], ""
        with client.stream("POST", f"{server.base_url}/chat/completions", json=body) as r:
            for line in r.iter_lines():
                if line.startswith("data: {"):
                    choice = json.loads(line[6:])["choices"][0]
                    content += choice["delta"].get("content") or ""
                    calls += choice["delta"].get("tool_calls") or []
                    finish = choice.get("finish_reason") or finish
        return content, calls, finish


@pytest.mark.parametrize("stream", [False, True])
def test_unclosed_pythonic_calls_lose_no_character(lfm: ServerProcess, stream: bool) -> None:
    heads = 40
    text = "<|tool_call_start|>[" + "get_weather(city=" * heads
    content, calls, finish = _forced(lfm, re.escape(text), stream)
    assert finish == "stop"
    assert content == text and calls == []


@pytest.mark.parametrize("stream", [False, True])
def test_arguments_nested_past_the_cap_end_the_call(hermes: ServerProcess, stream: bool) -> None:
    """Arguments nested deeper than 64 levels: the call ends with what was streamed and the rest is
    content, never a failed request."""
    head = '<tool_call>\n{"name": "get_weather", "arguments": {"city": '
    text = head + "[" * 70 + "1" + "]" * 70 + "}}\n</tool_call>"
    content, calls, finish = _forced(hermes, re.escape(text), stream)
    assert finish in ("stop", "tool_calls")
    assert {call.get("index", 0) for call in calls} == {0}  # one call (streamed: its deltas)
    assert calls[0]["function"]["name"] == "get_weather"
    assert "]]]" in content  # the text past the fault is content
