"""Streaming the arguments of one tool call: read the model's raw argument text as it grows and hand out
canonical JSON (`dump_arguments` of the final value) in pieces, each a prefix that never has to be taken back.

One reader per argument format: JSON bodies and {call} objects are re-encoded character by character
(`canonical_json.py`); tagged bodies go out one argument at a time, string values as they grow; relaxed
objects and Python calls go out whole when they close. Knows nothing of events or sections.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from tokenloom.parsing.arguments import (
    ArgumentsError,
    dump_arguments,
    pythonic_arguments,
    pythonic_end,
    relaxed_end,
    relaxed_to_json,
)
from tokenloom.parsing.canonical_json import JsonReencoder
from tokenloom.parsing.markers import fault_excerpt
from tokenloom.parsing.stream_tagged import TaggedArgs
from tokenloom.parsing.structures import ArgumentFormat, ToolCallStructure
from tokenloom.parsing.tagged import skip_ws


class ArgsStream(Protocol):
    """Reads one call's arguments from a growing section text (absolute indices, text only appended)."""

    @property
    def error(self) -> str:
        """Why the arguments broke, once they did."""
        ...

    @property
    def settled(self) -> int:
        """Raw index after the last character whose meaning went into the canonical text."""
        ...

    @property
    def end(self) -> int:
        """Raw index after the arguments, once done."""
        ...

    @property
    def done(self) -> bool: ...

    @property
    def failed(self) -> bool: ...

    def feed(self, text: str, final: bool) -> None: ...

    def take(self) -> str:
        """The canonical argument text produced since the last call."""
        ...


class JsonArgs:
    """A JSON object of arguments, re-encoded as it arrives."""

    def __init__(self, start: int) -> None:
        self._json = JsonReencoder(start)

    @property
    def error(self) -> str:
        return self._json.error

    @property
    def settled(self) -> int:
        return self._json.settled

    @property
    def end(self) -> int:
        return self._json.end

    @property
    def done(self) -> bool:
        return self._json.done

    @property
    def failed(self) -> bool:
        return self._json.failed

    def feed(self, text: str, final: bool) -> None:
        self._json.feed(text, len(text))

    def take(self) -> str:
        pieces = self._json.pieces
        text = "".join(pieces)
        pieces.clear()
        return text


class CallObject(JsonArgs):
    """A whole JSON call object ({"name": ..., "arguments": {...}}, or {NAME: {...}}): its name and id are
    fields; the arguments are re-encoded when they are an object, else converted once the call closes."""

    def __init__(self, start: int, structure: ToolCallStructure) -> None:
        s = structure
        self._name_path, self._id_path = s.name_path, s.id_path
        self._args_path = s.args_path if s.name_path else None
        watch = tuple(p for p in (s.name_path, s.id_path, s.args_path) if p) if s.name_path else ()
        self._json = JsonReencoder(start, capture=s.args_path, watch=watch, single_key=not s.name_path)
        self._tail_error = ""
        self._tail = ""

    @property
    def name(self) -> str | None:
        return self._json.strings.get(self._name_path)

    @property
    def call_id(self) -> str | None:
        """The model's id if it came before the arguments (after them, the call went out with one of ours)."""
        j = self._json
        if not self._id_path or (j.capture_kind and self._id_path not in j.found_before_capture):
            return None
        return j.strings.get(self._id_path)

    @property
    def is_ready(self) -> bool:
        """Can the call be announced? Its name is known, and its id, unless the arguments already began."""
        j = self._json
        return self.name is not None and (
            not self._id_path or self.call_id is not None or bool(j.capture_kind)
        )

    @property
    def error(self) -> str:
        return self._json.error or self._tail_error

    @property
    def failed(self) -> bool:
        return self._json.failed or bool(self._tail_error)

    def feed(self, text: str, final: bool) -> None:
        j = self._json
        if j.done or j.failed:
            return
        j.feed(text, len(text))
        if j.done and j.capture_kind != "{":
            self._tail = self._converted(text)

    def take(self) -> str:
        text = super().take() + self._tail
        self._tail = ""
        return text

    def _converted(self, text: str) -> str:
        """Arguments that were not an object: missing or null mean none, a string may hold JSON."""
        kind = self._json.capture_kind
        if kind in ("", "n") and self._args_path is not None:
            return "{}"
        if kind == '"':
            raw = self._json.strings.get(self._args_path or ())
            try:
                value = json.loads(raw) if raw is not None else None
            except ValueError as exc:
                self._tail_error = f"arguments are not JSON: {exc}"
                return ""
            if isinstance(value, dict):
                return dump_arguments(value)
        self._tail_error = "arguments are not a JSON object"
        return ""


class WholeArgs:
    """Relaxed objects (Gemma 4) and Python calls (LFM2): converted in one piece when they close."""

    def __init__(self, start: int, structure: ToolCallStructure) -> None:
        self._pythonic = structure.argument_format is ArgumentFormat.PYTHONIC
        self._quote = structure.string_quote
        self._start = self.settled = start
        self._checked = start  # text before this holds no closing bracket not yet tried
        self.end = -1
        self.error = ""
        self._text = ""

    @property
    def done(self) -> bool:
        return self.end >= 0

    @property
    def failed(self) -> bool:
        return bool(self.error)

    def feed(self, text: str, final: bool) -> None:
        if self.done or self.failed:
            return
        # Only a closing bracket can end the arguments: look again when one arrives (or at the end).
        closers = ")]}" if self._pythonic else "]}"
        new, self._checked = text[self._checked :], len(text)
        if not final and not any(ch in new for ch in closers):
            return
        start = self._start if self._pythonic else skip_ws(text, self._start, len(text))
        if start >= len(text):
            return
        opener = "(" if self._pythonic else "{"
        if text[start] != opener:
            self.error = f"expected {opener!r} at {fault_excerpt(text, start)}"
            return
        end = pythonic_end(text, start) if self._pythonic else relaxed_end(text, start, self._quote)
        if end < 0:
            return
        try:
            if self._pythonic:
                value: Any = pythonic_arguments(text[start:end])
            else:
                value = relaxed_to_json(text[start:end], self._quote)
        except ArgumentsError as exc:
            self.error = str(exc)
            return
        if not isinstance(value, dict):
            self.error = "arguments are not a JSON object"
            return
        self._text, self.end, self.settled = dump_arguments(value), end, end

    def take(self) -> str:
        text, self._text = self._text, ""
        return text


class NoArgs:
    """A call pattern without an arguments slot: the arguments are empty."""

    def __init__(self, start: int) -> None:
        self.settled = self.end = start
        self.error = ""
        self._text = "{}"

    done = True
    failed = False

    def feed(self, text: str, final: bool) -> None:
        pass

    def take(self) -> str:
        text, self._text = self._text, ""
        return text


def make_args_stream(
    head_slot: str, start: int, structure: ToolCallStructure, schema: Any, stops: tuple[str, ...]
) -> ArgsStream:
    """The reader for the arguments (or {call} object) of one call starting at `start`."""
    if head_slot == "{call}":
        return CallObject(start, structure)
    if not head_slot:
        return NoArgs(start)
    fmt = structure.argument_format
    if fmt is ArgumentFormat.JSON:
        return JsonArgs(start)
    if fmt in (ArgumentFormat.RELAXED_OBJECT, ArgumentFormat.PYTHONIC):
        return WholeArgs(start, structure)
    return TaggedArgs(start, structure, schema, stops)
