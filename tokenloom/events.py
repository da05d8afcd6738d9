"""The events output parsers emit and protocol encoders consume.

This module is the one vocabulary between `parsing/`/`harmony/` and `server/`; it imports nothing of ours.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of the model's reasoning (goes out as `reasoning_content`)."""

    text: str


@dataclass(frozen=True, slots=True)
class ContentDelta:
    """A piece of the visible answer."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStart:
    """A tool call begins; `index` counts calls of this response from 0."""

    index: int
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolCallArgsDelta:
    """A fragment of a call's arguments, as JSON text; fragments concatenate to one JSON object."""

    index: int
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallEnd:
    """The arguments of call `index` are complete."""

    index: int


@dataclass(frozen=True, slots=True)
class ParseError:
    """The output did not follow the expected format; the text went out as content instead."""

    message: str
    kind: str  # e.g. "tool_call_parse_error", "unknown_tool", "unterminated_section"


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one request."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class Finish:
    """The generation ended; `reason` is an OpenAI finish reason."""

    reason: str  # "stop", "length", "tool_calls", "error"
    usage: Usage = field(default_factory=Usage)
    stop_sequence: str | None = None  # the request's stop string that ended the output, if one did


Event = ReasoningDelta | ContentDelta | ToolCallStart | ToolCallArgsDelta | ToolCallEnd | ParseError | Finish


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A complete parsed tool call; `arguments` is a JSON text."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ParsedMessage:
    """What an output parser made of the whole output."""

    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()


class OutputParser(Protocol):
    """Turns model output text into events, incrementally (auto-parser and harmony both implement it).

    Feeding the same text in any chunking gives the same `message()` and the same concatenated deltas.
    """

    def feed(self, text: str) -> list[Event]: ...

    def finish(self) -> list[Event]: ...

    def message(self) -> ParsedMessage: ...
