"""Streaming harmony parser: model output text (any chunking) -> messages, incrementally (HARMONY.md §7, §9).

Knows nothing of OpenAI or Events; `output.py` maps its stream events onto them. Never raises on model
output: what does not follow the format becomes content plus a `FormatIssue`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from tokenloom.harmony.header import HarmonyParseError, lenient_content, parse_header
from tokenloom.harmony.messages import CALL, MESSAGE, RETURN, START, STOP_MARKERS, HarmonyMessage, Role

_State = Enum("_State", "EXPECT_START HEADER CONTENT STOPPED")
_MAX_HEADER = 256  # a "header" longer than this is content written without one
_HEADER_ENDS = (MESSAGE, START, *STOP_MARKERS)
_MAX_MARKER = max(len(m) for m in _HEADER_ENDS)


@dataclass(frozen=True, slots=True)
class MessageStart:
    """A header is complete; `header` has every field but content."""

    header: HarmonyMessage
    is_malformed: bool = False  # the header was unreadable and its text is the content


@dataclass(frozen=True, slots=True)
class MessageDelta:
    """Text appended to the content of the message in progress."""

    text: str


@dataclass(frozen=True, slots=True)
class MessageEnd:
    """A message is complete."""

    message: HarmonyMessage
    terminator: str | None  # "<|end|>", "<|call|>", "<|return|>"; None at end of stream


@dataclass(frozen=True, slots=True)
class FormatIssue:
    """The output strayed from the format; parsing went on as described by `message`."""

    message: str
    kind: str  # "missing_message", "bad_header", "truncated_header", "missing_start", "trailing_text"


StreamEvent = MessageStart | MessageDelta | MessageEnd | FormatIssue


class HarmonyStreamParser:
    """Feeds text pieces through ExpectStart -> Header -> Content; stops at `<|return|>`/`<|call|>`.

    With `role` given the output starts directly with the header (the prompt ended in `<|start|>role`);
    a leading `<|start|>assistant` is tolerated all the same. `is_output` (default: a role was given)
    makes `<|return|>`/`<|call|>` end everything; off, a whole conversation with tool calls parses.
    """

    def __init__(self, role: Role | None = "assistant", *, is_output: bool | None = None) -> None:
        self._stops_at = (RETURN, CALL) if (role is not None if is_output is None else is_output) else ()
        self._role: Role | None = role  # expected role of the header being read
        self._state = _State.HEADER if role is not None else _State.EXPECT_START
        self._pending = ""  # header text, or content that may still become a stop marker
        self._header: HarmonyMessage | None = None  # header of the message in content
        self._parts: list[str] = []
        self._has_trailing_issue = False
        self.messages: list[HarmonyMessage] = []

    @property
    def current(self) -> HarmonyMessage | None:
        """The header of the message whose content is streaming, if any."""
        return self._header if self._state is _State.CONTENT else None

    @property
    def is_stopped(self) -> bool:
        """True once `<|return|>` or `<|call|>` ended the output, or `finish()` was called."""
        return self._state is _State.STOPPED

    def feed(self, text: str) -> list[StreamEvent]:
        if self._state is _State.CONTENT and not self._pending and "<" not in text:
            if not text:
                return []
            self._parts.append(text)
            return [MessageDelta(text)]
        self._pending += text
        out: list[StreamEvent] = []
        while self._step(out):
            pass
        return out

    def finish(self) -> list[StreamEvent]:
        """End of stream: flush held-back content, report a header cut short."""
        out: list[StreamEvent] = []
        pending, self._pending = self._pending, ""
        if self._state is _State.CONTENT:
            self._delta(pending, out)
            self._end(None, out)
        elif self._state is _State.HEADER and pending.strip():
            out.append(FormatIssue("end of output inside a message header", "truncated_header"))
            self._lenient(pending, None, out)
        elif pending.strip():
            self._trailing(out)
        self._state = _State.STOPPED
        return out

    def _step(self, out: list[StreamEvent]) -> bool:
        """Advance over `_pending` once; False when more text is needed."""
        if self._state is _State.CONTENT:
            return self._step_content(out)
        if self._state is _State.HEADER:
            return self._step_header(out)
        if self._state is _State.EXPECT_START:
            return self._step_start(out)
        if self._pending.strip():
            self._trailing(out)
        self._pending = ""
        return False

    def _step_start(self, out: list[StreamEvent]) -> bool:
        text = self._pending.lstrip()
        self._pending = text
        if not text or (len(text) < len(START) and START.startswith(text)):
            return False
        if text.startswith(START):
            self._pending = text[len(START) :]
        else:
            out.append(
                FormatIssue("message without <|start|>; read as an assistant message", "missing_start")
            )
            self._role = "assistant"
        self._state = _State.HEADER
        return True

    def _step_header(self, out: list[StreamEvent]) -> bool:
        text = self._pending
        found = [(i, m) for m in _HEADER_ENDS if 0 <= (i := text.find(m)) <= _MAX_HEADER]
        if not found:
            # Decide only once any marker starting within the limit would be complete (split invariance).
            if len(text) > _MAX_HEADER + _MAX_MARKER:
                out.append(FormatIssue("no message header; text read as content", "missing_message"))
                self._start(HarmonyMessage(self._role or "assistant"), out, is_malformed=True)
                return True
            return False
        i, marker = min(found)
        header, self._pending = text[:i], text[i + len(marker) :]
        if marker == MESSAGE:
            parsed = parse_header(header, self._role)
            if parsed.error is not None:
                out.append(FormatIssue(parsed.error, "bad_header"))
            self._start(parsed.message, out)
        elif marker == START:
            if header.strip():
                out.append(FormatIssue("message header without <|message|>", "missing_message"))
                self._lenient(header, None, out)
            self._role = None
        else:
            out.append(FormatIssue("message header without <|message|>", "missing_message"))
            self._lenient(header, marker, out)
        return True

    def _step_content(self, out: list[StreamEvent]) -> bool:
        text = self._pending
        start = 0
        while (i := text.find("<|", start)) >= 0:
            for marker in STOP_MARKERS:
                if text.startswith(marker, i):
                    self._pending = text[i + len(marker) :]
                    self._delta(text[:i], out)
                    self._end(marker, out)
                    return True
            start = i + 2
        keep = _partial_marker_len(text)
        self._delta(text[: len(text) - keep], out)
        self._pending = text[len(text) - keep :]
        return False

    def _start(self, header: HarmonyMessage, out: list[StreamEvent], *, is_malformed: bool = False) -> None:
        self._header = header
        self._parts = []
        self._state = _State.CONTENT
        self._role = None
        out.append(MessageStart(header, is_malformed))

    def _delta(self, text: str, out: list[StreamEvent]) -> None:
        if text:
            self._parts.append(text)
            out.append(MessageDelta(text))

    def _end(self, terminator: str | None, out: list[StreamEvent]) -> None:
        header = self._header or HarmonyMessage("assistant")
        message = replace(header, content="".join(self._parts))
        self.messages.append(message)
        out.append(MessageEnd(message, terminator))
        self._header = None
        self._parts = []
        self._state = _State.STOPPED if terminator in self._stops_at else _State.EXPECT_START

    def _lenient(self, header: str, terminator: str | None, out: list[StreamEvent]) -> None:
        """A header that never reached `<|message|>` becomes a message whose content is its words."""
        channel, content = lenient_content(header)
        self._start(HarmonyMessage(self._role or "assistant", channel=channel), out, is_malformed=True)
        self._delta(content, out)
        self._end(terminator, out)

    def _trailing(self, out: list[StreamEvent]) -> None:
        if not self._has_trailing_issue:
            self._has_trailing_issue = True
            out.append(FormatIssue("text after the end of the output was ignored", "trailing_text"))


def _partial_marker_len(text: str) -> int:
    """Length of the end of `text` that may still grow into a stop marker (they hold one `<` each)."""
    i = text.rfind("<", max(0, len(text) - _MAX_MARKER + 1))
    if i < 0:
        return 0
    tail = text[i:]
    return len(tail) if any(m.startswith(tail) for m in STOP_MARKERS) else 0


def parse_messages(
    text: str, *, role: Role | None = "assistant", strict: bool = True
) -> list[HarmonyMessage]:
    """Parse complete output (or a whole conversation with role=None); strict raises on any format issue."""
    parser = HarmonyStreamParser(role)
    events = [*parser.feed(text), *parser.finish()]
    if strict:
        for event in events:
            if isinstance(event, FormatIssue):
                raise HarmonyParseError(event.message)
    return parser.messages
