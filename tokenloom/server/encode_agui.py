"""Events -> AG-UI events for one run: RUN_STARTED, text / reasoning messages, tool calls, RUN_FINISHED.

A small state machine: a text or reasoning message opens on its first delta and closes as soon as another
kind of output arrives, so every START has its END with the same id. It knows nothing of HTTP or SSE.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    CustomEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)

from tokenloom.events import (
    ContentDelta,
    Event,
    Finish,
    ParseError,
    ReasoningDelta,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)

# the CUSTOM event that reports a ParseError at the end of a run; its text already went out as content
PARSE_ERROR_EVENT = "tokenloom.parse_error"


class _Open(Enum):
    """Which streamed message is open right now (tool calls are tracked apart, by index)."""

    NOTHING = "nothing"
    TEXT = "text"
    REASONING = "reasoning"


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


@dataclass(slots=True)
class AguiEncoder:
    """Builds the AG-UI events of one run from tokenloom Events."""

    thread_id: str
    run_id: str
    model: str = ""
    make_id: Callable[[str], str] = new_id
    _open: _Open = _Open.NOTHING
    _message_id: str | None = None  # the open text message, or the assistant message tool calls belong to
    _reasoning_span_id: str = ""
    _reasoning_message_id: str = ""
    _open_calls: dict[int, str] = field(default_factory=dict)  # call index -> toolCallId, until its END
    _call_ids: list[str] = field(default_factory=list)  # every call of the run, in order
    _parse_errors: list[ParseError] = field(default_factory=list)
    is_done: bool = False  # RUN_FINISHED or RUN_ERROR went out

    def opening(self) -> list[BaseEvent]:
        return [
            RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id, protocol_version=PROTOCOL_VERSION)
        ]

    def encode(self, event: Event) -> list[BaseEvent]:
        if self.is_done:
            return []
        if isinstance(event, ContentDelta):
            return self._text(event.text) if event.text else []
        if isinstance(event, ReasoningDelta):
            return self._reasoning(event.text) if event.text else []
        if isinstance(event, ToolCallStart):
            return self._call_start(event)
        if isinstance(event, ToolCallArgsDelta):
            call_id = self._open_calls.get(event.index)
            if call_id is None or not event.text:
                return []
            return [ToolCallArgsEvent(tool_call_id=call_id, delta=event.text)]
        if isinstance(event, ToolCallEnd):
            call_id = self._open_calls.pop(event.index, None)
            return [] if call_id is None else [ToolCallEndEvent(tool_call_id=call_id)]
        if isinstance(event, ParseError):
            self._parse_errors.append(event)  # reported at the end, so no open message is interrupted
            return []
        return self._finish(event)

    def error(self, message: str, code: str | None = None) -> list[BaseEvent]:
        """Closes whatever is open, then RUN_ERROR: the terminal event of a failed run."""
        if self.is_done:
            return []
        out = self._close_all()
        out.append(RunErrorEvent(message=message, code=code))
        self.is_done = True
        return out

    def _text(self, text: str) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        if self._open is not _Open.TEXT:
            out += self._close_message()
            self._message_id = self.make_id("msg")
            out.append(TextMessageStartEvent(message_id=self._message_id, role="assistant"))
            self._open = _Open.TEXT
        assert self._message_id is not None
        out.append(TextMessageContentEvent(message_id=self._message_id, delta=text))
        return out

    def _reasoning(self, text: str) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        if self._open is not _Open.REASONING:
            out += self._close_message()
            self._reasoning_span_id = self.make_id("reasoning")
            self._reasoning_message_id = self.make_id("msg")
            out.append(ReasoningStartEvent(message_id=self._reasoning_span_id))
            out.append(ReasoningMessageStartEvent(message_id=self._reasoning_message_id, role="reasoning"))
            self._open = _Open.REASONING
        out.append(ReasoningMessageContentEvent(message_id=self._reasoning_message_id, delta=text))
        return out

    def _call_start(self, event: ToolCallStart) -> list[BaseEvent]:
        out = self._close_message()
        if self._message_id is None:  # calls without text still belong to one assistant message
            self._message_id = self.make_id("msg")
        if event.index in self._open_calls:  # a parser never reuses an open index; close it to stay paired
            out.append(ToolCallEndEvent(tool_call_id=self._open_calls.pop(event.index)))
        call_id = event.id or self.make_id("call")
        self._open_calls[event.index] = call_id
        self._call_ids.append(call_id)
        out.append(
            ToolCallStartEvent(
                tool_call_id=call_id, tool_call_name=event.name, parent_message_id=self._message_id
            )
        )
        return out

    def _finish(self, event: Finish) -> list[BaseEvent]:
        out = self._close_all()
        for error in self._parse_errors:
            value = {"message": error.message, "kind": error.kind}
            out.append(CustomEvent(name=PARSE_ERROR_EVENT, value=value))
        outcome = RunFinishedSuccessOutcome(pending_tool_call_ids=self._call_ids) if self._call_ids else None
        out.append(
            RunFinishedEvent(
                thread_id=self.thread_id,
                run_id=self.run_id,
                result={"finishReason": event.reason},
                outcome=outcome,
                usage=[self._usage(event.usage)],
            )
        )
        self.is_done = True
        return out

    def _usage(self, usage: Usage) -> TokenUsage:
        return TokenUsage(
            provider="tokenloom",
            model=self.model or None,
            input_tokens=usage.prompt_tokens,
            output_tokens=usage.completion_tokens,
            total_tokens=usage.total_tokens,
            cached_input_tokens=usage.cached_tokens,
        )

    def _close_message(self) -> list[BaseEvent]:
        """Ends the open text or reasoning message; the next output opens a new one with a new id."""
        was, self._open = self._open, _Open.NOTHING
        if was is _Open.TEXT and self._message_id is not None:
            return [TextMessageEndEvent(message_id=self._message_id)]
        if was is _Open.REASONING:
            return [
                ReasoningMessageEndEvent(message_id=self._reasoning_message_id),
                ReasoningEndEvent(message_id=self._reasoning_span_id),
            ]
        return []

    def _close_all(self) -> list[BaseEvent]:
        out = self._close_message()
        out += [ToolCallEndEvent(tool_call_id=call_id) for call_id in self._open_calls.values()]
        self._open_calls.clear()
        return out
