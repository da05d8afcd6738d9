"""Streaming tagged arguments (`<parameter=k>v</parameter>` and kin): "{" at once, each argument when its
closing tag arrives, and a value the schema types as a plain string while it grows. Part of `stream_args.py`.
"""

from __future__ import annotations

import json
from typing import Any

from tokenloom.parsing.arguments import ArgumentsError, schema_types
from tokenloom.parsing.markers import hold_back_len
from tokenloom.parsing.stream.arg_reader import ArgReader
from tokenloom.parsing.structures import ToolCallStructure
from tokenloom.parsing.tagged import CDATA_OPEN, cdata_end, read_key, skip_ws, tag_syntax, trimmed, value_of

_NEVER = 1 << 62  # a stream position no text reaches


class TaggedArgs(ArgReader):
    """Tagged arguments: "{" at once, then each argument when its closing tag arrives; a value the schema
    types as a plain string goes out as it grows (holding back what may still be the closing tag)."""

    def __init__(self, start: int, structure: ToolCallStructure, schema: Any, stops: tuple[str, ...]) -> None:
        super().__init__()
        self._structure, self._syntax, self._schema = structure, tag_syntax(structure), schema
        self._stops = stops  # where the body ends, e.g. ("</function>",); () = at the end of the output
        self._stop_from = start  # no stop starts before this
        self._view, self._complete = start, False  # the body is text[:_view]; complete: it ends there
        self._pos = self.settled = start
        self._out.append("{")
        self._keys: set[str] = set()
        self._key: str | None = None  # the argument being read
        self._value_at = self._close_from = 0
        self._stream_from = -1  # where the streamed value starts (-1: undecided or not streamed)
        self._streamed_to = 0
        self._sent: list[str] = []  # canonical text of the current argument already handed out

    def feed(self, text: str, final: bool) -> None:
        if self.done or self.failed:
            return
        self._find_view(text, final)
        try:
            while self._step(text):
                pass
        except ArgumentsError as exc:
            self.error = str(exc)

    def _find_view(self, text: str, final: bool) -> None:
        if self._complete:
            return
        if not self._stops:
            self._view, self._complete = len(text), final
            return
        found = [i for stop in self._stops if (i := text.find(stop, self._stop_from)) >= 0]
        if found:
            self._view, self._complete = min(found), True
            return
        self._view = self._stop_from = len(text) - (0 if final else hold_back_len(text, self._stops))

    def _step(self, text: str) -> bool:
        """Read one argument (or its growth); True when another step may make progress."""
        syntax, end = self._syntax, self._view
        if self._key is None:
            pos = skip_ws(text, self._pos, end)
            if self._keys and syntax.separator:
                if text.startswith(syntax.separator, pos, end):
                    pos = skip_ws(text, pos + len(syntax.separator), end)
                elif not self._complete and syntax.separator.startswith(text[pos:end]):
                    return False
            if pos >= end:
                if self._complete:
                    self._out.append("}")
                    self.end = self.settled = end
                return False
            found = read_key(text, pos, end, syntax, self._complete)
            if found is None:
                return False
            key, self._value_at = found
            if key in self._keys:
                raise ArgumentsError(f"duplicate argument {key!r}")
            self._keys.add(key)
            self._key, self._close_from, self._stream_from, self._sent = key, self._value_at, -1, []
        key_close = syntax.key_close(self._key)
        value_end = text.find(key_close, max(self._close_from, cdata_end(text, self._value_at, end)), end)
        if value_end < 0:
            self._close_from = max(self._value_at, end - len(key_close) + 1)
            if schema_types(self._schema, self._key) == {"string"}:
                self._stream(text, end - len(key_close) + 1 - len(syntax.trail_ws))
            if self._complete:
                raise ArgumentsError(f"argument {self._key!r} not closed by {key_close!r}")
            return False
        raw = trimmed(text[self._value_at : value_end], syntax)
        value = value_of(raw, self._key, self._structure, self._schema)
        pair = self._pair_prefix() + json.dumps(value, ensure_ascii=False)
        sent = "".join(self._sent)
        if not pair.startswith(sent):  # the streamed prefix and the whole value disagree: a bug
            raise ArgumentsError(f"argument {self._key!r} changed after streaming")
        self._out.append(pair[len(sent) :])
        self._key = None
        self._pos = self.settled = value_end + len(key_close)
        return True

    def _pair_prefix(self) -> str:
        assert self._key is not None
        return (", " if len(self._keys) > 1 else "") + json.dumps(self._key, ensure_ascii=False) + ": "

    def _stream(self, text: str, safe: int) -> None:
        """Hand out a string value's text up to `safe`, once its start shows no CDATA wrapper."""
        lead = self._syntax.lead_ws
        if self._stream_from < 0:
            start = self._value_at
            if self._view - start < len(lead) + len(CDATA_OPEN):
                return  # too little to tell how the value starts
            start += len(lead) if text.startswith(lead, start) else 0
            if text.startswith(CDATA_OPEN, start):
                self._stream_from = _NEVER  # the wrapper comes off at the end: the value goes out whole
                return
            self._stream_from = self._streamed_to = start
            self._sent.append(self._pair_prefix() + '"')
            self._out.append(self._sent[-1])
        if safe > self._streamed_to and self._stream_from <= self._streamed_to:
            piece = json.dumps(text[self._streamed_to : safe], ensure_ascii=False)[1:-1]
            self._sent.append(piece)
            self._out.append(piece)
            self._streamed_to = self.settled = safe
