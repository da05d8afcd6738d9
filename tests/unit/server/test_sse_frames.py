"""Pre-rendered text frames are byte for byte the frames a JSON dump of the chunk gives."""

from __future__ import annotations

import json

import pytest

from tokenloom.events import ContentDelta, Finish, ReasoningDelta, ToolCallStart, Usage
from tokenloom.server.encode_openai import ChunkEncoder, CompletionEncoder
from tokenloom.server.sse import TextFrame, sse_data

TEXTS = [
    " once",
    'say "hi"\\n',
    "back\\\\slash and \u2028 line separator",
    "tab\tnew\nline\r\x00\x1f",
    "émoji 🦙 中文 \ufffd",
    "\x00tokenloom-text\x00",  # the marker the frame is split on, as model text
    "</s>{}[],:",
]


@pytest.mark.parametrize("text", TEXTS)
def test_completion_text_frames_equal_the_dumped_chunk(text: str) -> None:
    encoder = CompletionEncoder("cmpl-1", 'model-"x"', created=7)
    event = ContentDelta(text)
    assert encoder.frames(event) == [sse_data(chunk) for chunk in encoder.encode(event)]
    assert json.loads(encoder.frames(event)[0][6:])["choices"][0]["text"] == text


@pytest.mark.parametrize("text", TEXTS)
def test_chat_content_and_reasoning_frames_equal_the_dumped_chunk(text: str) -> None:
    encoder = ChunkEncoder("chatcmpl-1", "model", created=7)
    for event in (ContentDelta(text), ReasoningDelta(text), ContentDelta(text)):
        assert encoder.frames(event) == [sse_data(chunk) for chunk in encoder.encode(event)]


def test_other_events_are_dumped_as_before() -> None:
    encoder = ChunkEncoder("chatcmpl-1", "model", include_usage=True, created=7)
    for event in (ContentDelta(""), ToolCallStart(0, "call_1", "f"), Finish("stop", Usage(3, 4, 0))):
        assert encoder.frames(event) == [sse_data(chunk) for chunk in encoder.encode(event)]
    completion = CompletionEncoder("cmpl-1", "model", created=7)
    finish = Finish("length", Usage(1, 2, 0))
    assert completion.frames(finish) == [sse_data(chunk) for chunk in completion.encode(finish)]


def test_a_chunk_without_the_text_is_refused() -> None:
    with pytest.raises(ValueError, match="exactly once"):
        TextFrame.around(lambda text: {"a": 1})
    with pytest.raises(ValueError, match="exactly once"):
        TextFrame.around(lambda text: {"a": text, "b": text})
