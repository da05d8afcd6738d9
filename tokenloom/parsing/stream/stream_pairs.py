"""Streaming relaxed objects (Gemma 4 `{key:<|"|>text<|"|>,n:7}`) and Python calls (LFM2 `(key='text', n=7)`):
"{" once the opener is read, each argument once the comma or bracket after it arrives, "}" at the close.
Part of `stream_args.py`; the value of one argument is read by the pure functions of `arguments.py`.
"""

from __future__ import annotations

import json
from typing import Any

from tokenloom.parsing.arguments import (
    ArgumentsError,
    dump_arguments,
    pythonic_arguments,
    relaxed_to_json,
)
from tokenloom.parsing.markers import fault_excerpt
from tokenloom.parsing.stream.arg_reader import ArgReader
from tokenloom.parsing.structures import ArgumentFormat, ToolCallStructure
from tokenloom.parsing.tagged import skip_ws


class PairArgs(ArgReader):
    """Arguments as `key:value` (relaxed) or `key=value` (Python) pairs between brackets, streamed one
    argument at a time. A scanner tracks bracket depth and strings, so a comma inside a value or a string
    never ends an argument; the whole text is read again at the close and must give the same JSON."""

    def __init__(self, start: int, structure: ToolCallStructure) -> None:
        super().__init__()
        self._pythonic = structure.argument_format is ArgumentFormat.PYTHONIC
        self._opener, self._closer = ("(", ")") if self._pythonic else ("{", "}")
        # String delimiters: Gemma 4's custom quote has no escapes; the others take backslash escapes.
        self._raw_quote = "" if self._pythonic else structure.string_quote
        self._quotes = "'\"" if self._pythonic else '"'
        self._start = self.settled = start
        self._open_at = -1  # index of the opening bracket, once read
        self._pos = start  # the scanner's position
        self._depth = 0
        self._in: str = ""  # the string delimiter the scanner is inside, or ""
        self._pair_at = 0  # where the current argument's text starts
        self._keys: list[str] = []
        self._sent: list[str] = []

    def feed(self, text: str, final: bool) -> None:
        if self.done or self.failed:
            return
        try:
            if self._open_at < 0 and not self._open(text):
                return
            self._scan(text, final)
        except ArgumentsError as exc:
            self.error = str(exc)

    def _open(self, text: str) -> bool:
        pos = self._start if self._pythonic else skip_ws(text, self._start, len(text))
        if pos >= len(text):
            return False
        if text[pos] != self._opener:
            raise ArgumentsError(f"expected {self._opener!r} at {fault_excerpt(text, pos)}")
        self._open_at, self._pos, self._pair_at, self._depth = pos, pos + 1, pos + 1, 1
        self._emit("{", pos + 1)
        return True

    def _scan(self, text: str, final: bool) -> None:
        i, n = self._pos, len(text)
        while i < n:
            ch = text[i]
            if self._in:  # inside a string: only its end matters
                if self._in == self._raw_quote:
                    close = text.find(self._raw_quote, i)
                    if close < 0:  # keep the part that may still begin the closing quote
                        i = max(i, n - len(self._raw_quote) + 1)
                        break
                    i, self._in = close + len(self._raw_quote), ""
                    continue
                if ch == "\\":
                    if i + 1 >= n:
                        break
                    i += 2
                    continue
                i, self._in = i + 1, "" if ch == self._in else self._in
                continue
            if self._raw_quote and text.startswith(self._raw_quote[: n - i], i):
                if n - i < len(self._raw_quote) and not final:
                    break  # may be the start of the custom quote: wait for more text
                if text.startswith(self._raw_quote, i):
                    i, self._in = i + len(self._raw_quote), self._raw_quote
                    continue
            if ch in self._quotes:
                self._in = ch
            elif ch in "([{":
                self._depth += 1
            elif ch in ")]}":
                self._depth -= 1
                if self._depth == 0:
                    self._pair_done(text, i, closing=True)
                    self._close(text, i + 1)
                    return
            elif ch == "," and self._depth == 1:
                self._pair_done(text, i, closing=False)
            i += 1
        self._pos = i

    def _pair_done(self, text: str, at: int, closing: bool) -> None:
        """The argument from `_pair_at` to `at` (a comma or the closing bracket) is complete."""
        body = text[self._pair_at : at]
        self._pair_at = at + 1
        if not body.strip():
            if closing and (not self._keys or self._pythonic):  # "{}", "()" or Python's "(a=1,)"
                return
            raise ArgumentsError("empty argument")
        value = self._read_pair(body)
        if len(value) != 1:
            raise ArgumentsError(f"expected one argument at {fault_excerpt(text, at - len(body))}")
        ((key, item),) = value.items()
        if key in self._keys:
            raise ArgumentsError(f"duplicate argument {key!r}")
        self._keys.append(key)
        prefix = ", " if len(self._keys) > 1 else ""
        self._emit(
            prefix + json.dumps(key, ensure_ascii=False) + ": " + json.dumps(item, ensure_ascii=False), at
        )

    def _read_pair(self, body: str) -> dict[str, Any]:
        if self._pythonic:
            return pythonic_arguments("(" + body + ")")
        value = relaxed_to_json("{" + body + "}", self._raw_quote)
        if not isinstance(value, dict):
            raise ArgumentsError("arguments are not a JSON object")
        return value

    def _close(self, text: str, end: int) -> None:
        """The bracket closed: the whole text must read as what was streamed."""
        whole = text[self._open_at : end]
        value = pythonic_arguments(whole) if self._pythonic else relaxed_to_json(whole, self._raw_quote)
        if not isinstance(value, dict) or dump_arguments(value) != "".join(self._sent) + "}":
            raise ArgumentsError("the arguments read differently as a whole")
        self._emit("}", end)
        self.end = end

    def _emit(self, piece: str, settled: int) -> None:
        self._sent.append(piece)
        self._out.append(piece)
        self.settled = settled
