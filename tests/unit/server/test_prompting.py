"""Chat-format selection and per-request parsers, with a vocab-only tokenizer (no weights)."""

from __future__ import annotations

import pytest

from tests.conftest import TEMPLATES
from tokenloom.engine.vocab import Tokenizer, load_tokenizer
from tokenloom.errors import InvalidRequest
from tokenloom.events import ReasoningDelta
from tokenloom.server.prompting import ChatFormat
from tokenloom.server.wire import ChatCompletionRequest

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return load_tokenizer()


def _request(**fields: object) -> ChatCompletionRequest:
    return ChatCompletionRequest.model_validate({"messages": [{"role": "user", "content": "hi"}], **fields})


def test_the_gpt_oss_template_selects_harmony(tokenizer: Tokenizer) -> None:
    template = (TEMPLATES / "openai-gpt-oss-120b.jinja").read_text()
    chat_format = ChatFormat.for_model(tokenizer, template, None)
    assert chat_format.kind == "harmony"
    text, tokens = chat_format.prompt(_request(tools=[WEATHER_TOOL], reasoning_effort="high"))
    assert text.endswith("<|start|>assistant") and "Reasoning: high" in text and "get_weather" in text
    assert tokens
    parser = chat_format.output_parser(_request(tools=[WEATHER_TOOL]), text)
    parser.feed(
        "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>commentary to=functions."
    )
    parser.feed('get_weather <|constrain|>json<|message|>{"city":"Paris"}')
    parser.finish()
    message = parser.message()
    assert message.reasoning_content == "Think."
    assert [(c.name, c.arguments) for c in message.tool_calls] == [("get_weather", '{"city":"Paris"}')]


def test_forced_formats_and_builtin_tools(tokenizer: Tokenizer) -> None:
    assert ChatFormat.for_model(tokenizer, None, None, forced_kind="harmony").kind == "harmony"
    assert ChatFormat.for_model(tokenizer, None, None).kind == "jinja"
    harmony = ChatFormat.for_model(tokenizer, None, None, forced_kind="harmony")
    text, _ = harmony.prompt(_request(chat_template_kwargs={"builtin_tools": ["python"]}))
    assert "## python" in text
    with pytest.raises(InvalidRequest) as info:
        harmony.prompt(_request(chat_template_kwargs={"builtin_tools": ["shell"]}))
    assert info.value.param == "chat_template_kwargs.builtin_tools"


@pytest.mark.parametrize(("reasoning_format", "expect_reasoning"), [("auto", True), ("none", False)])
def test_reasoning_format_reaches_the_auto_parser(
    tokenizer: Tokenizer, reasoning_format: str, expect_reasoning: bool
) -> None:
    template = (TEMPLATES / "Qwen-QwQ-32B.2025-03.jinja").read_text()
    chat_format = ChatFormat.for_model(tokenizer, template, None, reasoning_format=reasoning_format)
    request = _request()
    text, _ = chat_format.prompt(request)
    parser = chat_format.output_parser(request, text)
    events = parser.feed("Let me think.</think>The answer.") + parser.finish()
    assert any(isinstance(e, ReasoningDelta) for e in events) is expect_reasoning
    assert (parser.message().content or "").endswith("The answer.")
