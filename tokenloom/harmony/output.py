"""Harmony model output -> Events: the `OutputParser` for gpt-oss.

Channels map as: `analysis` -> reasoning, `final` -> content, `commentary` without a recipient (a
preamble) -> content, a message to `functions.X` -> a tool call whose arguments stream as args deltas.
A built-in tool call (`browser.*`, `python`) is a tool call named by its recipient (`browser.search`)
only when the request enabled that tool; otherwise (or for any other recipient but `functions.X`) its text
is dropped after a `ParseError` (kind "unknown_tool"); a call to an undeclared function goes out as content
after that error. A `tool` author,
an unknown channel or an unreadable header likewise give content plus a `ParseError`.

Structured output hook: with `response_format: json_schema` the server should constrain only the
`final` channel's content (after `<|channel|>final<|message|>`); this parser needs no change for it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from typing import Any

from tokenloom.events import (
    ContentDelta,
    Event,
    ParsedMessage,
    ParseError,
    ReasoningDelta,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
)
from tokenloom.harmony.builtin import is_builtin_recipient
from tokenloom.harmony.messages import CALL
from tokenloom.harmony.parser import FormatIssue, HarmonyStreamParser, MessageDelta, MessageEnd, MessageStart

_Sink = Enum("_Sink", "REASONING CONTENT TOOL DROP")
_ANALYSIS_HEADER = "<|channel|>analysis<|message|>"  # reasoning kept inline is written back this way
_END = "<|end|>"
_CHANNELS = ("analysis", "commentary", "final")
_TOLERATED = ("missing_start",)  # format issues that lose nothing and are not worth a ParseError


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _tool_name(tool: str | Mapping[str, Any]) -> str:
    if isinstance(tool, str):
        return tool
    function = tool.get("function")
    return str(function.get("name", "")) if isinstance(function, Mapping) else str(tool.get("name", ""))


def _random_call_id(index: int) -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


class HarmonyOutputParser:
    """Implements `tokenloom.events.OutputParser` for harmony output (text after `<|start|>assistant`).

    `tools`: the request's function tools, as names or OpenAI tool dicts (None accepts any `functions.X`;
    pass `[]` when the request has none); `builtin_tools`: the enabled built-ins ("browser", "python");
    `make_call_id(index)` names tool calls.
    """

    def __init__(
        self,
        tools: Iterable[str | Mapping[str, Any]] | None = None,
        builtin_tools: Iterable[str] = (),
        *,
        make_call_id: Callable[[int], str] = _random_call_id,
        inline_reasoning: bool = False,
    ) -> None:
        """`inline_reasoning` (reasoning_format "none"): analysis messages stay in the content as written,
        "<|channel|>analysis<|message|>...<|end|>"."""
        self._inline = inline_reasoning
        self._tools = None if tools is None else frozenset(_tool_name(t) for t in tools)
        self._builtin = tuple(builtin_tools)
        self._make_call_id = make_call_id
        self._stream = HarmonyStreamParser("assistant")
        self._sink = _Sink.CONTENT
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[list[str]] = []  # [id, name, arguments...]
        self._has_content = False
        self._inline_open = False  # an analysis message is being written into the content

    def feed(self, text: str) -> list[Event]:
        return self._map(self._stream.feed(text))

    def finish(self) -> list[Event]:
        return self._map(self._stream.finish())

    def message(self) -> ParsedMessage:
        calls = tuple(ToolCall(c[0], c[1], "".join(c[2:])) for c in self._calls)
        return ParsedMessage(
            content="".join(self._content) if self._has_content else None,
            reasoning_content="".join(self._reasoning) if self._reasoning else None,
            tool_calls=calls,
        )

    @property
    def stream(self) -> HarmonyStreamParser:
        """The message-level parser underneath (messages, current header)."""
        return self._stream

    def _map(self, events: list[FormatIssue | MessageStart | MessageDelta | MessageEnd]) -> list[Event]:
        out: list[Event] = []
        for event in events:
            if type(event) is MessageDelta:
                text = event.text
                if self._sink is _Sink.CONTENT:
                    self._content.append(text)
                    out.append(ContentDelta(text))
                elif self._sink is _Sink.REASONING:
                    self._reasoning.append(text)
                    out.append(ReasoningDelta(text))
                elif self._sink is _Sink.DROP:
                    continue
                else:
                    self._calls[-1].append(text)
                    out.append(ToolCallArgsDelta(len(self._calls) - 1, text))
            elif isinstance(event, MessageStart):
                self._begin(event, out)
            elif isinstance(event, MessageEnd):
                if self._sink is _Sink.TOOL:
                    out.append(ToolCallEnd(len(self._calls) - 1))
                    if event.terminator != CALL and not _is_json("".join(self._calls[-1][2:])):
                        # The engine may swallow the stop token; only arguments cut short are an error.
                        out.append(ParseError("tool call arguments cut short", "unterminated_section"))
                if self._sink is _Sink.CONTENT and self._inline_open:
                    self._inline_open = False
                    self._content.append(_END)
                    out.append(ContentDelta(_END))
                self._sink = _Sink.CONTENT
            elif isinstance(event, FormatIssue) and event.kind not in _TOLERATED:
                out.append(ParseError(event.message, f"harmony_{event.kind}"))
        return out

    def _begin(self, event: MessageStart, out: list[Event]) -> None:
        header = event.header
        self._sink = _Sink.CONTENT
        if event.is_malformed:
            self._has_content = True
            return
        recipient = header.recipient
        if header.role != "assistant":
            out.append(ParseError(f"unexpected {header.role} message in output", "harmony_bad_header"))
        elif recipient is not None and recipient not in ("all", "assistant", "user"):
            name = self._tool_name(recipient)
            if name is not None:
                self._sink = _Sink.TOOL
                index = len(self._calls)
                self._calls.append([self._make_call_id(index), name])
                out.append(ToolCallStart(index, self._calls[-1][0], name))
                return
            if not recipient.startswith("functions."):
                # A built-in the request did not enable (python, container.exec): its text is no answer to
                # the user, dropped as llama.cpp does
                out.append(
                    ParseError(f"call to unknown tool {recipient!r}; its text dropped", "unknown_tool")
                )
                self._sink = _Sink.DROP
                return
            out.append(ParseError(f"call to unknown tool {recipient!r}; sent as content", "unknown_tool"))
        elif header.channel == "analysis" and self._inline:
            self._inline_open = True
            self._has_content = True
            self._content.append(_ANALYSIS_HEADER)
            out.append(ContentDelta(_ANALYSIS_HEADER))
            return
        elif header.channel == "analysis":
            self._sink = _Sink.REASONING
            return
        elif header.channel is not None and header.channel not in _CHANNELS:
            out.append(
                ParseError(f"unknown channel {header.channel!r}; sent as content", "harmony_unknown_channel")
            )
        self._has_content = True

    def _tool_name(self, recipient: str) -> str | None:
        """The OpenAI tool name for a recipient, or None when the request offers no such tool."""
        if recipient.startswith("functions."):
            name = recipient[len("functions.") :]
            return name if name and (self._tools is None or name in self._tools) else None
        if is_builtin_recipient(recipient, self._builtin):
            return recipient
        return None
