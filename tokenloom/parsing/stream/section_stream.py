"""Streams one tool-call section: each call is announced (`ToolCallStart`) once its name is one of the
request's tools and its arguments have said something (a first key, or the whole call closed), its arguments
go out as canonical JSON fragments while they grow (`stream_args.py`), and it ends (`ToolCallEnd`) when the
call's closing text matches.

Failures follow one rule, decided by the position of the fault in the text, never by how it was chunked:
- before a call was announced (unknown name, garbage after a trigger, a section cut short before its first
  argument was read, as in `[get_weather(city=` with no value): a `ParseError`, and the section's text
  (after the calls that did complete) is read again as output, so it reaches the content whole;
- after a call was announced (its arguments break midway, duplicate keys, the output ends inside them, the
  text after them does not match): a `ParseError`, then `ToolCallEnd`. The call stays in the message with
  exactly the argument text already streamed (possibly JSON cut short), and the raw text from the first
  character whose meaning was not streamed is read again as output (content).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tokenloom.events import Event, ParseError, ToolCall, ToolCallArgsDelta, ToolCallEnd, ToolCallStart
from tokenloom.parsing.stream.section import CallHead, Incomplete, SectionError, SectionParser, checked_name
from tokenloom.parsing.stream.stream_args import ArgsStream, CallObject, make_args_stream
from tokenloom.parsing.structures import ToolCallStructure

NewId = Callable[[str, int | None, int], str]  # (name, index the model wrote, call index) -> call id


@dataclass(slots=True)
class _OpenCall:
    head: CallHead
    args: ArgsStream
    index: int = -1  # -1 until announced
    call_id: str = ""
    name: str = ""
    sent: list[str] = field(default_factory=list)  # argument text handed out
    held: str = ""  # argument text read before the call was announced (the opening brace, say)


@dataclass(frozen=True, slots=True)
class SectionExit:
    """The section is over: output parsing resumes at `rest_at` of its text (None: after the trigger, which
    goes out as content itself since the section held no call)."""

    rest_at: int | None
    failed: bool = False


class SectionStream:
    """One section of tool calls, from its trigger on; `calls` (shared with the output parser) gets each
    call as it ends."""

    def __init__(
        self,
        text: str,
        structure: ToolCallStructure,
        schemas: dict[str, Any] | None,
        calls: list[ToolCall],
        new_id: NewId,
    ) -> None:
        self.text = text
        self._s, self._schemas, self._calls, self._new_id = structure, schemas, calls, new_id
        self._resume = 0  # where the next call (or the section end) starts
        self._num_done = 0  # calls of this section already ended
        self._open: _OpenCall | None = None

    def open_call(self) -> ToolCall | None:
        """The call still being read, with the arguments streamed so far; one not announced yet (nothing
        of its arguments read) shows once its name is known, with what was read of them (a snapshot of a
        partial output: it is still no call if the output ends there)."""
        call = self._open
        if call is None:
            return None
        if call.index < 0:
            if not call.name:
                return None
            args = call.args
            written_id = args.call_id if isinstance(args, CallObject) else call.head.call_id
            return ToolCall(written_id or "", call.name, call.held)
        return ToolCall(call.call_id, call.name, "".join(call.sent))

    def advance(self, out: list[Event], final: bool) -> SectionExit | None:
        """Read what the text now allows; a SectionExit once the section is over."""
        while True:
            if self._open is None and ((step := self._start_call(out, final)) or self._open is None):
                return step
            call = self._open
            assert call is not None
            step = self._read_call(call, out, final)
            if step is not None or self._open is call:  # over, or waiting for more text
                return step

    def _start_call(self, out: list[Event], final: bool) -> SectionExit | None:
        parser = SectionParser(self.text, self._s, self._schemas, final)
        try:
            head = parser.next_head(self._resume, self._num_done == 0)
        except Incomplete:
            return None
        except SectionError as exc:
            return self._fail(exc, out)
        if head is None:
            return SectionExit(parser.pos)
        pattern = self._s.call_pattern
        slot = pattern[head.slot] if head.slot < len(pattern) else ""
        schema = (self._schemas or {}).get(head.name or "")
        self._open = _OpenCall(head, make_args_stream(slot, head.pos, self._s, schema, head.stops))
        if not isinstance(self._open.args, CallObject):
            return self._check_name(self._open, head.name, out)
        return None

    def _read_call(self, call: _OpenCall, out: list[Event], final: bool) -> SectionExit | None:
        """Advance the open call; it is no longer open once it ended."""
        args = call.args
        args.feed(self.text, final)
        if not call.name and isinstance(args, CallObject) and (args.is_ready or args.done):
            failed = self._check_name(call, args.name, out)
            if failed is not None:
                return failed
        text = args.take() if call.name else ""
        if call.index < 0:
            call.held += text
            text = ""
            ready = not isinstance(args, CallObject) or args.may_announce
            if call.name and ready and (_says_something(call.held) or (args.done and not args.failed)):
                text, call.held = call.held, ""
                self._announce(call, args.call_id if isinstance(args, CallObject) else call.head.call_id, out)
        if call.index >= 0 and text:
            call.sent.append(text)
            out.append(ToolCallArgsDelta(call.index, text))
        if args.failed or (final and not args.done):
            error = SectionError(args.error) if args.failed else _unterminated()
            return self._fail(error, out) if call.index < 0 else self._break(call, error, args.settled, out)
        if not args.done:
            return None
        parser = SectionParser(self.text, self._s, self._schemas, final)
        parser.pos = args.end
        try:
            parser.tail(call.head)
        except Incomplete:
            return None
        except SectionError as exc:
            return self._break(call, exc, args.end, out)
        out.append(ToolCallEnd(call.index))
        self._calls.append(ToolCall(call.call_id, call.name, "".join(call.sent)))
        self._open, self._resume, self._num_done = None, parser.pos, self._num_done + 1
        return None

    def _check_name(self, call: _OpenCall, name: str | None, out: list[Event]) -> SectionExit | None:
        try:
            call.name = checked_name(name, self._schemas)
        except SectionError as exc:
            return self._fail(exc, out)
        return None

    def _announce(self, call: _OpenCall, call_id: str | None, out: list[Event]) -> None:
        call.index = len(self._calls)
        call.call_id = call_id or self._new_id(call.name, call.head.index, call.index)
        out.append(ToolCallStart(call.index, call.call_id, call.name))

    def _fail(self, error: SectionError, out: list[Event]) -> SectionExit:
        """Before the call was announced: its text goes back to the output."""
        out.append(ParseError(str(error), error.kind))
        self._open = None
        return SectionExit(self._resume if self._num_done else None, failed=True)

    def _break(self, call: _OpenCall, error: SectionError, rest_at: int, out: list[Event]) -> SectionExit:
        """After the call was announced: it ends with the arguments already streamed."""
        out += [ParseError(str(error), error.kind), ToolCallEnd(call.index)]
        self._calls.append(ToolCall(call.call_id, call.name, "".join(call.sent)))
        self._open = None
        return SectionExit(rest_at, failed=True)


def _says_something(held: str) -> bool:
    """Argument text beyond an opening brace: a call cut off before it is no call at all."""
    return bool(held.lstrip().lstrip("{").strip())


def _unterminated() -> SectionError:
    return SectionError("tool-call section was not closed", "unterminated_section")
