"""Streaming the arguments of one tool call: read the model's raw argument text as it grows and hand out
canonical JSON (`dump_arguments` of the final value) in pieces, each a prefix that never has to be taken back.

One reader per argument format: JSON bodies and {call} objects are re-encoded character by character
(`canonical_json.py`); tagged bodies go out one argument at a time, string values as they grow; relaxed
objects and Python calls one argument at a time too (`stream_pairs.py`). Knows nothing of events or sections.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from tokenloom.parsing.arguments import dump_arguments
from tokenloom.parsing.stream.canonical_json import JsonReencoder
from tokenloom.parsing.stream.stream_pairs import PairArgs
from tokenloom.parsing.stream.stream_tagged import TaggedArgs
from tokenloom.parsing.structures import ArgumentFormat, ToolCallStructure


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
        paths = [path for path, _ in s.call_fields]
        # The template writes the id after the arguments ({"name", "arguments", "id"}, Mistral Nemo): the
        # call waits for it (its arguments go out at once when the id comes, or when the object closes).
        self._id_comes_last = bool(
            s.id_path and s.args_path and s.id_path in paths and s.args_path in paths
        ) and paths.index(s.id_path) > paths.index(s.args_path)

    @property
    def may_announce(self) -> bool:
        """False while the id the template writes after the arguments may still come."""
        return not self._id_comes_last or self._json.done or self._json.strings.get(self._id_path) is not None

    @property
    def name(self) -> str | None:
        return self._json.strings.get(self._name_path)

    @property
    def call_id(self) -> str | None:
        """The model's id if it came before the arguments, or after them where the template puts it there
        (otherwise the call went out with one of ours)."""
        j = self._json
        if not self._id_path:
            return None
        if j.capture_kind and self._id_path not in j.found_before_capture and not self._id_comes_last:
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
        return PairArgs(start, structure)
    return TaggedArgs(start, structure, schema, stops)
