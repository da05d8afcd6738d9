"""The streaming output parser of the auto-parser: model text -> reasoning, content and tool-call events.

A small state machine (reasoning / content / tool section) built from a `TemplateAnalysis`; it looks only at
new text, holds back what could still become a marker, and buffers a tool-call section until it closes.
"""

from __future__ import annotations

import secrets
from enum import Enum
from typing import Any, Literal

from tokenloom.errors import TemplateError
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
from tokenloom.parsing.arguments import dump_arguments
from tokenloom.parsing.markers import find_first, hold_back_len
from tokenloom.parsing.section import Incomplete, RawCall, SectionError, SectionParser, scan_brackets
from tokenloom.parsing.structures import SLOT_ID, SLOTS, ContentStructure, ReasoningMode, TemplateAnalysis

_Mode = Enum("_Mode", "REASONING CONTENT SECTION")
_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
ReasoningFormat = Literal["auto", "none"]


def is_forced_open(
    content: ContentStructure, enable_thinking: bool | None, generation_prompt: str | None
) -> bool:
    """Does the output start inside a reasoning block? The rendered generation prompt decides when given."""
    if not content.reasoning_end:
        return False
    if not content.reasoning_start:
        return True  # implicit start, e.g. Apriel's "[BEGIN FINAL RESPONSE]" ends unmarked reasoning
    if generation_prompt is not None:
        return generation_prompt.rstrip().endswith(content.reasoning_start)
    if enable_thinking is True:
        return content.forced_when_enabled
    if enable_thinking is False:
        return content.forced_when_disabled
    return content.reasoning_mode is ReasoningMode.FORCED_OPEN


def _tool_schemas(tools: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    if not tools:
        return None
    schemas: dict[str, Any] = {}
    for tool in tools:
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            schemas[function["name"]] = function.get("parameters") or {}
    return schemas


class AutoOutputParser:
    """Implements `tokenloom.events.OutputParser` for one response of a template analysed by `analyze`."""

    def __init__(
        self,
        analysis: TemplateAnalysis,
        *,
        tools: list[dict[str, Any]] | None,
        reasoning_format: ReasoningFormat = "auto",
        enable_thinking: bool | None = None,
        generation_prompt: str | None = None,
        id_prefix: str | None = None,
    ) -> None:
        content, structure = analysis.content, analysis.tools
        extract = reasoning_format != "none" and bool(content.reasoning_end)
        forced = extract and is_forced_open(content, enable_thinking, generation_prompt)
        # reasoning_format="none" keeps reasoning as text: a block the prompt opened gets its opener back
        # so the content reads "<think>...</think>answer" as the model saw it.
        reopen = not extract and reasoning_format == "none" and bool(content.reasoning_start)
        reopen = reopen and is_forced_open(content, enable_thinking, generation_prompt)
        self._structure = structure
        self._schemas = _tool_schemas(tools)
        self._triggers = structure.triggers if self._schemas is not None else ()
        self._r_start = content.reasoning_start if extract else ""
        self._r_end = content.reasoning_end if extract else ""
        keep_markup = reasoning_format == "none"
        self._wrappers = tuple(
            m for m in (content.content_start, content.content_end) if m and not keep_markup
        )
        self._wrappers += structure.stop_markers  # dropped like wrappers when they reach the text
        self._terminators = self._find_terminators()
        self._emitted = 0  # calls of the current section already emitted
        self._id_prefix = id_prefix if id_prefix is not None else f"call_{secrets.token_hex(6)}_"
        self._explicit_prefix = id_prefix is not None
        self._mode = _Mode.REASONING if forced else _Mode.CONTENT
        self._pending = ""  # text that may still become a marker
        self._recipient = structure.recipient_delimiter
        self._trigger = ""  # the trigger that opened the current section
        self._virtual = False  # the current section starts with text the prompt supplied
        if self._recipient:  # the generation prompt ends with the delimiter: the output starts a message
            self._triggers = (self._recipient,)
            self._pending, self._virtual = self._recipient, True
        self._section = ""  # a tool-call section being collected
        self._scan = 0
        self._depth = (0, False, False)  # JSON bracket depth, inside a string, after a backslash
        self._ws = ""  # trailing whitespace held until more text of the same channel follows
        self._fresh = True  # at the start of a channel: leading whitespace is dropped
        self._content_started = False
        self._reasoning_seen = forced
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[ToolCall] = []
        if reopen:  # goes out with the first delta, as if the model had written it
            self._pending = content.reasoning_start + self._pending

    def _find_terminators(self) -> tuple[str, ...]:
        """Text after which a parse attempt may succeed: the section's end or one call's end ("" = JSON)."""
        s = self._structure
        last = s.call_pattern[-1] if s.call_pattern else ""
        call_end = last.strip() if last not in SLOTS else ""
        return tuple(dict.fromkeys((s.tool_section_end.strip(), call_end)))

    # -- public API -------------------------------------------------------------------------------------

    def feed(self, text: str) -> list[Event]:
        out: list[Event] = []
        self._pending += text
        self._run(out, final=False)
        return out

    def finish(self) -> list[Event]:
        out: list[Event] = []
        self._run(out, final=True)
        self._ws = ""
        return out

    def message(self) -> ParsedMessage:
        return ParsedMessage(
            content="".join(self._content) or None,
            reasoning_content="".join(self._reasoning) or None,
            tool_calls=tuple(self._calls),
        )

    # -- state machine ----------------------------------------------------------------------------------

    def _markers(self) -> tuple[str, ...]:
        if self._mode is _Mode.REASONING:
            if not self._reasoning:
                # Nothing reasoned yet: a repeated opener is dropped, a tool call may skip reasoning.
                return (
                    (self._r_end, self._r_start, *self._triggers)
                    if self._r_start
                    else (self._r_end, *self._triggers)
                )
            return (self._r_end,)
        markers = self._triggers + self._wrappers
        if self._r_end and not self._content_started and not self._reasoning_seen:
            markers += (self._r_start, self._r_end) if self._r_start else (self._r_end,)
        return markers

    def _run(self, out: list[Event], final: bool) -> None:
        while True:
            if self._mode is _Mode.SECTION:
                if not self._advance_section(out, final):
                    return
                continue
            markers = self._markers()
            index, marker = find_first(self._pending, markers)
            if index < 0:
                keep = 0 if final else hold_back_len(self._pending, markers)
                cut = len(self._pending) - keep
                self._emit(self._pending[:cut], out)
                self._pending = self._pending[cut:]
                return
            self._emit(self._pending[:index], out)
            self._pending = self._pending[index + len(marker) :]
            self._on_marker(marker, out)

    def _on_marker(self, marker: str, out: list[Event]) -> None:
        if self._mode is _Mode.REASONING:
            if marker == self._r_end:
                self._switch(_Mode.CONTENT)
                return
            if self._reasoning:  # only an empty reasoning block may be skipped or re-opened
                self._emit(marker, out)
                return
            if marker not in self._triggers:
                return  # a repeated reasoning opener: dropped
        if marker in self._triggers:
            self._ws = ""
            self._trigger = marker
            self._mode = _Mode.SECTION
            self._section, self._scan, self._depth = marker + self._pending, 0, (0, False, False)
            self._pending = ""
        elif marker == self._r_start and not self._content_started and not self._reasoning_seen:
            self._reasoning_seen = True
            self._switch(_Mode.REASONING)
        elif marker == self._r_end and not self._content_started and not self._reasoning_seen:
            self._reasoning_seen = True  # "</think>" closing an empty block the prompt opened
        elif marker not in self._wrappers:
            self._emit(marker, out)

    def _switch(self, mode: _Mode) -> None:
        self._mode, self._ws, self._fresh = mode, "", True

    def _emit(self, text: str, out: list[Event]) -> None:
        if not text:
            return
        if self._fresh:
            text = text.lstrip()
            if not text:
                return
            self._fresh = False
        body = text.rstrip()
        if not body:
            self._ws += text
            return
        piece, self._ws = self._ws + body, text[len(body) :]
        if self._mode is _Mode.REASONING:
            self._reasoning.append(piece)
            out.append(ReasoningDelta(piece))
        else:
            self._content_started = True
            self._content.append(piece)
            out.append(ContentDelta(piece))

    # -- tool-call sections -----------------------------------------------------------------------------

    def _maybe_complete(self, start: int) -> bool:
        closed = False
        for terminator in self._terminators:
            if not terminator:
                closed = self._json_closes(start) or closed
            elif self._section.find(terminator, max(0, start - len(terminator) + 1)) >= 0:
                closed = True
        return closed

    def _json_closes(self, start: int) -> bool:
        """Track bracket depth over new text only; True when a JSON value may have just closed."""
        closes = False
        state, end = scan_brackets(self._section, start, self._depth)
        while end >= 0:
            closes = True
            state, end = scan_brackets(self._section, end, state)
        self._depth = state
        return closes

    def _advance_section(self, out: list[Event], final: bool) -> bool:
        """Emit the calls completed so far; True when the parser left the section state."""
        start = len(self._section) if self._pending else self._scan
        self._section += self._pending
        self._pending = ""
        self._scan = len(self._section)
        if self._recipient and (routed := self._route(final)) is not None:
            return routed
        if not final and not self._maybe_complete(start):
            return False
        parser = SectionParser(self._section, self._structure, self._schemas, final)
        try:
            calls, used = parser.parse()
        except Incomplete:
            self._emit_calls(parser.calls[self._emitted :], out)
            self._emitted = len(parser.calls)
            if not final:
                return False
            error = SectionError("tool-call section was not closed", "unterminated_section")
        except SectionError as exc:
            error = exc
        else:
            self._emit_calls(calls[self._emitted :], out)
            self._pending, self._section, self._emitted, self._virtual = self._section[used:], "", 0, False
            self._switch(_Mode.CONTENT)
            return True
        # Only the trigger (or the calls that did parse) is settled; the rest is scanned again as
        # output, so the result does not depend on how much text had arrived when the error showed.
        self._emit_calls(parser.calls[self._emitted :], out)
        out.append(ParseError(str(error), error.kind))
        self._mode = _Mode.CONTENT
        if parser.calls:
            rest = self._section[parser.call_ends[-1] :]
        else:
            rest = self._section[len(self._trigger) :]
            if not self._virtual:
                self._emit(self._trigger, out)
        self._pending, self._section, self._emitted, self._virtual = rest, "", 0, False
        return True

    def _route(self, final: bool) -> bool | None:
        """Recipient formats: a message to the content recipient ("all") is plain content."""
        newline = self._section.find("\n", len(self._recipient))
        if newline < 0:
            return None if final else False
        if self._section[len(self._recipient) : newline].strip() != self._structure.content_recipient:
            return None
        self._pending, self._section, self._virtual = self._section[newline + 1 :], "", False
        self._mode = _Mode.CONTENT
        return True

    def _new_id(self, call: RawCall, index: int) -> str:
        """An id for a call the model wrote without one, in the shape the template prints back."""
        s = self._structure
        if s.call_id_template:
            return s.call_id_template.format(
                name=call.name, index=index if call.index is None else call.index
            )
        if self._explicit_prefix or not (s.id_path or SLOT_ID in s.call_pattern):
            return f"{self._id_prefix}{index}"
        return "".join(secrets.choice(_ALNUM) for _ in range(9))  # Mistral templates insist on 9 alnums

    def _emit_calls(self, calls: list[RawCall], out: list[Event]) -> None:
        for call in calls:
            index = len(self._calls)
            call_id = call.call_id or self._new_id(call, index)
            arguments = dump_arguments(call.arguments)
            out += [ToolCallStart(index, call_id, call.name), ToolCallArgsDelta(index, arguments)]
            out.append(ToolCallEnd(index))
            self._calls.append(ToolCall(call_id, call.name, arguments))


def make_output_parser(
    analysis: TemplateAnalysis,
    *,
    tools: list[dict[str, Any]] | None,
    reasoning_format: ReasoningFormat = "auto",
    enable_thinking: bool | None = None,
    generation_prompt: str | None = None,
    id_prefix: str | None = None,
) -> AutoOutputParser:
    """The output parser for one response; harmony (gpt-oss) templates are refused with a clear error."""
    if analysis.caps.is_harmony:
        raise TemplateError(
            "this template uses the harmony format (gpt-oss channels); tokenloom.harmony parses its output, "
            "not the auto-parser"
        )
    return AutoOutputParser(
        analysis,
        tools=tools,
        reasoning_format=reasoning_format,
        enable_thinking=enable_thinking,
        generation_prompt=generation_prompt,
        id_prefix=id_prefix,
    )
