"""Chat-format selection, prompts and per-request parsers, with a vocab-only tokenizer (no weights)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import TEMPLATES
from tokenloom.engine.vocab import Tokenizer, load_tokenizer
from tokenloom.errors import InvalidRequest
from tokenloom.events import ReasoningDelta
from tokenloom.pipeline import HarmonyFormat, JinjaFormat, PrefixPolicy, format_for_model
from tokenloom.pipeline.request import ChatRequest
from tokenloom.server.adapt_openai import chat_request
from tokenloom.server.wire import ChatCompletionRequest

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
NO_CACHE = PrefixPolicy()


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return load_tokenizer()


def _request(**fields: Any) -> ChatRequest:
    body = ChatCompletionRequest.model_validate({"messages": [{"role": "user", "content": "hi"}], **fields})
    return chat_request(body, n_vocab=300_000)


def test_the_gpt_oss_template_selects_harmony(tokenizer: Tokenizer) -> None:
    template = (TEMPLATES / "openai-gpt-oss-120b.jinja").read_text()
    chat_format = format_for_model(tokenizer, template, None)
    assert isinstance(chat_format, HarmonyFormat)
    prompt = chat_format.prompt(_request(tools=[WEATHER_TOOL], reasoning_effort="high"), NO_CACHE)
    assert prompt.text.endswith("<|start|>assistant") and "Reasoning: high" in prompt.text
    assert "get_weather" in prompt.text and prompt.tokens
    parser = chat_format.output_parser(_request(tools=[WEATHER_TOOL]), prompt)
    parser.feed(
        "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>commentary to=functions."
    )
    parser.feed('get_weather <|constrain|>json<|message|>{"city":"Paris"}')
    parser.finish()
    message = parser.message()
    assert message.reasoning_content == "Think."
    assert [(c.name, c.arguments) for c in message.tool_calls] == [("get_weather", '{"city":"Paris"}')]


def test_forced_formats_and_builtin_tools(tokenizer: Tokenizer) -> None:
    assert isinstance(format_for_model(tokenizer, None, None, forced_kind="harmony"), HarmonyFormat)
    assert isinstance(format_for_model(tokenizer, None, None), JinjaFormat)
    harmony = format_for_model(tokenizer, None, None, forced_kind="harmony")
    text = harmony.prompt(_request(chat_template_kwargs={"builtin_tools": ["python"]}), NO_CACHE).text
    assert "## python" in text
    with pytest.raises(InvalidRequest) as info:
        harmony.prompt(_request(chat_template_kwargs={"builtin_tools": ["shell"]}), NO_CACHE)
    assert info.value.param == "chat_template_kwargs.builtin_tools"


@pytest.mark.parametrize(("reasoning_format", "expect_reasoning"), [("auto", True), ("none", False)])
def test_reasoning_format_reaches_the_auto_parser(
    tokenizer: Tokenizer, reasoning_format: str, expect_reasoning: bool
) -> None:
    template = (TEMPLATES / "Qwen-QwQ-32B.2025-03.jinja").read_text()
    chat_format = format_for_model(tokenizer, template, None, reasoning_format=reasoning_format)
    request = _request()
    parser = chat_format.output_parser(request, chat_format.prompt(request, NO_CACHE))
    events = parser.feed("Let me think.</think>The answer.") + parser.finish()
    assert any(isinstance(e, ReasoningDelta) for e in events) is expect_reasoning
    assert (parser.message().content or "").endswith("The answer.")


def test_a_request_can_ask_for_reasoning_in_the_content(tokenizer: Tokenizer) -> None:
    template = (TEMPLATES / "Qwen-QwQ-32B.2025-03.jinja").read_text()
    chat_format = format_for_model(tokenizer, template, None)
    request = _request(reasoning_format="none")
    parser = chat_format.output_parser(request, chat_format.prompt(request, NO_CACHE))
    events = parser.feed("Let me think.</think>The answer.") + parser.finish()
    assert not any(isinstance(e, ReasoningDelta) for e in events)


def test_a_final_assistant_message_is_continued(tokenizer: Tokenizer) -> None:
    template = (TEMPLATES / "Qwen-Qwen3-0.6B.jinja").read_text()
    chat_format = format_for_model(tokenizer, template, None)
    messages = [{"role": "user", "content": "Say hello"}, {"role": "assistant", "content": "Hello, "}]
    body = ChatCompletionRequest.model_validate({"messages": messages})
    prompt = chat_format.prompt(chat_request(body, 300_000), NO_CACHE)
    assert prompt.text.endswith("Hello, ") and prompt.prefill == "Hello, "
    assert prompt.generation_prompt + "Hello, " == prompt.text
    fresh = ChatCompletionRequest.model_validate({"messages": messages, "continue_final_message": False})
    assert not chat_format.prompt(chat_request(fresh, 300_000), NO_CACHE).text.endswith("Hello, ")
