"""A JSON response format or a forced call starts after the template's reasoning, not inside it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import TEMPLATES
from tokenloom.constrain.api import build
from tokenloom.constrain.parser import Grammar, accepts
from tokenloom.engine.vocab import Tokenizer, load_tokenizer
from tokenloom.grammar import Constrained
from tokenloom.pipeline import PrefixPolicy, format_for_model
from tokenloom.server.adapt_openai import chat_request
from tokenloom.server.wire import ChatCompletionRequest

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
JSON_FORMAT = {"type": "json_schema", "json_schema": {"name": "r", "schema": SCHEMA}}
TOOL = {
    "type": "function",
    "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}},
}


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return load_tokenizer()


def _constraint(tokenizer: Tokenizer, template: str, **fields: Any) -> Constrained:
    chat_format = format_for_model(tokenizer, (TEMPLATES / template).read_text(), None)
    body = ChatCompletionRequest.model_validate({"messages": [{"role": "user", "content": "hi"}], **fields})
    request = chat_request(body, 300_000)
    constrained = chat_format.constraint(request, chat_format.prompt(request, PrefixPolicy()))
    assert constrained is not None
    return constrained


def _accepts(constrained: Constrained, text: str) -> bool:
    return accepts(Grammar(build(constrained)[0]).initial, text)


def test_forced_open_reasoning_comes_first(tokenizer: Tokenizer) -> None:
    spec = _constraint(tokenizer, "Qwen3.5-4B.jinja", response_format=JSON_FORMAT)
    assert _accepts(spec, 'The user wants JSON.\n</think>\n\n{"a": 1}')
    assert not _accepts(spec, '{"a": 1}')  # the prompt opened <think>: the JSON cannot be the reasoning
    assert not _accepts(spec, 'thinking</think>\n\n{"b": 1}')


def test_optional_reasoning_may_come_first(tokenizer: Tokenizer) -> None:
    spec = _constraint(tokenizer, "Qwen-Qwen3-0.6B.jinja", response_format=JSON_FORMAT)
    assert _accepts(spec, '<think>\nShort.\n</think>\n\n{"a": 1}')
    assert _accepts(spec, '{"a": 1}')
    assert not _accepts(spec, 'Sure! {"a": 1}')


def test_thinking_off_constrains_at_once(tokenizer: Tokenizer) -> None:
    spec = _constraint(
        tokenizer,
        "Qwen3.5-4B.jinja",
        response_format=JSON_FORMAT,
        chat_template_kwargs={"enable_thinking": False},
    )
    assert _accepts(spec, '{"a": 1}')
    assert not _accepts(spec, 'x</think>{"a": 1}')


def test_a_forced_call_follows_the_reasoning(tokenizer: Tokenizer) -> None:
    spec = _constraint(tokenizer, "Qwen3.5-4B.jinja", tools=[TOOL], tool_choice="required")
    reasoning = "I should call f.\n</think>\n\n"
    call = "<tool_call>\n<function=f>\n<parameter=x>\nhi\n</parameter>\n</function>\n</tool_call>"
    assert _accepts(spec, reasoning + call)
    assert not _accepts(spec, reasoning + "No call.")


def test_schema_errors_keep_their_own_path(tokenizer: Tokenizer) -> None:
    bad = {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": "strin"}}}
    with pytest.raises(Exception) as info:
        _constraint(tokenizer, "Qwen3.5-4B.jinja", response_format=bad)
    assert getattr(info.value, "param", None) == "response_format.json_schema.schema.type"


def test_a_prefill_that_closed_its_reasoning_leaves_the_body(tokenizer: Tokenizer) -> None:
    prefill = {"role": "assistant", "content": "<think>\nEasy.\n</think>\n\n"}
    messages = [{"role": "user", "content": "hi"}, prefill]
    spec = _constraint(tokenizer, "Qwen3.5-4B.jinja", response_format=JSON_FORMAT, messages=messages)
    assert _accepts(spec, '{"a": 1}')
    assert not _accepts(spec, 'more</think>{"a": 1}')
