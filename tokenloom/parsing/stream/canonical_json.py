"""Incremental canonical JSON: reads one JSON value as it arrives and writes, piece by piece, the text
`json.dumps(json.loads(value), ensure_ascii=False)` would give, emitting only what can no longer change.

Knows nothing of templates or tool calls; `stream_args.py` points it at the part of a call to re-encode.
Accepts exactly what `json.loads` accepts (NaN/Infinity too), except duplicate keys, which `json.loads` would
resolve after the first key's text went out: they are an error here.
"""

from __future__ import annotations

import json
import re

from tokenloom.parsing.markers import fault_excerpt

_PLAIN = re.compile(r'[^"\\\x00-\x1f]+')  # a run of string characters that stand for themselves
_WORD = re.compile(r"[0-9A-Za-z+\-.]+")  # a number or a literal
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_LITERALS = frozenset(("true", "false", "null", "NaN", "Infinity", "-Infinity"))
_SHORT = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX = frozenset("0123456789abcdefABCDEF")
_WS = " \t\n\r"
_WORD_START = frozenset("-0123456789tfnNI")
MAX_DEPTH = 64  # tool-call arguments nested deeper end the call with a ParseError (as request bodies do)

# States. A small int per state keeps the per-character loop cheap (a measured hot spot of streaming).
(_ROOT, _VALUE, _KEY, _COLON, _AFTER, _STRING, _ESCAPE, _UHEX, _HIGH, _HIGH_BS, _WORDS, _DONE, _ERROR) = (
    range(13)
)

Path = tuple[str, ...]


def _escaped(ch: str) -> str:
    """One decoded string character as `json.dumps(..., ensure_ascii=False)` writes it."""
    return json.dumps(ch, ensure_ascii=False)[1:-1] if ch in '"\\' or ch < " " else ch


class JsonReencoder:
    """Reads the JSON object at `start` of a growing text; `pieces` collects the canonical text of the object
    at `capture` (None: nothing; `single_key`: the value of the root's only key, whose name it keeps).

    `settled` is the raw index after the last character whose meaning reached `pieces`; `strings` holds the
    decoded strings met at the `watch` paths (e.g. a call's "name").
    """

    def __init__(
        self,
        start: int,
        *,
        capture: Path | None = (),
        watch: tuple[Path, ...] = (),
        single_key: bool = False,
    ) -> None:
        self.pos = start  # next raw index to read
        self.settled = start
        self.end = -1  # raw index after the value, once done
        self.error = ""
        self.pieces: list[str] = []
        self.strings: dict[Path, str] = {}
        self.capture_kind = ""  # first character of the value at the capture path, once it started
        self.found_before_capture: frozenset[Path] = frozenset()  # watched strings read before it started
        self.single_key = single_key
        self._capture = None if single_key else capture  # single_key: set when the root's key is read
        self._watch = frozenset(watch)
        self._watch_depths = frozenset(len(p) for p in watch)
        self._capturing = -1  # stack depth of the captured value while inside it
        self._state = _ROOT
        self._first = False  # just after "{" or "[": the container may close at once
        self._stack: list[list[object]] = []  # per container: [is_object, keys seen, current key]
        self._key: list[str] | None = None  # decoded text of the key being read
        self._collect: list[str] | None = None  # decoded text of a watched string value
        self._collect_path: Path = ()
        self._hex = ""
        self._high = ""  # a high surrogate escape waiting for its low half
        self._word_at = 0

    @property
    def done(self) -> bool:
        return self._state == _DONE

    @property
    def failed(self) -> bool:
        return self._state == _ERROR

    # -- output ---------------------------------------------------------------------------------------

    def _emit(self, text: str, i: int) -> None:
        if self._capturing >= 0:
            self.pieces.append(text)
            self.settled = i

    def _char(self, ch: str, i: int) -> None:
        """A decoded character of the string being read."""
        if self._key is not None:
            self._key.append(ch)
            return
        if self._collect is not None:
            self._collect.append(ch)
        self._emit(_escaped(ch), i)

    def _fail(self, message: str, i: int) -> None:
        self._state, self.error, self.pos = _ERROR, message, i

    # -- structure ------------------------------------------------------------------------------------

    def _path(self) -> Path:
        return tuple(str(frame[2]) for frame in self._stack)

    def _value_starts(self, ch: str) -> None:
        """A value begins at the current path: start capturing or collecting it when asked to."""
        depth = len(self._stack)
        capture = self._capture
        if (
            capture is not None
            and not self.capture_kind
            and depth == len(capture)
            and self._path() == capture
        ):
            self.capture_kind = ch
            self.found_before_capture = frozenset(self.strings)
            if ch == "{":
                self._capturing = depth
        if ch == '"' and depth in self._watch_depths and (path := self._path()) in self._watch:
            self._collect, self._collect_path = [], path

    def _value_done(self, i: int) -> None:
        depth = len(self._stack)
        if self._capturing == depth:
            self._capturing = -1
            self._capture = None
        if not depth:
            self._state, self.end = _DONE, i
        else:
            self._state = _AFTER

    def _open(self, ch: str, i: int) -> None:
        if len(self._stack) >= MAX_DEPTH:
            self._fail(f"the value is nested deeper than {MAX_DEPTH} levels", i)
            return
        self._value_starts(ch)
        self._stack.append([ch == "{", set(), None])
        self._emit(ch, i)
        self._state, self._first = (_KEY if ch == "{" else _VALUE), True

    def _close(self, ch: str, i: int) -> bool:
        top = self._stack[-1]
        if top[0] != (ch == "}"):
            return False
        self._emit(ch, i)
        self._stack.pop()
        self._value_done(i)
        return True

    def _key_done(self, i: int) -> None:
        assert self._key is not None
        key, self._key = "".join(self._key), None
        top = self._stack[-1]
        keys = top[1]
        assert isinstance(keys, set)
        if key in keys:
            self._fail(f"duplicate key {key!r}", i)
            return
        keys.add(key)
        top[2] = key
        if self.single_key and len(self._stack) == 1:
            if len(keys) > 1:
                self._fail("expected one {name: arguments} pair", i)
                return
            self.strings[()] = key
            self._capture = (key,)
        self._state = _COLON

    def _word_done(self, word: str, i: int) -> None:
        if word in _LITERALS:
            self._emit(word, i)
        elif _NUMBER.fullmatch(word):
            try:
                self._emit(json.dumps(json.loads(word)), i)
            except ValueError:  # e.g. more digits than int() converts
                self._fail(f"bad number {word[:20]!r}", i)
                return
        else:
            self._fail(f"expected a JSON value at {word[:20]!r}", i)
            return
        self._value_done(i)

    # -- reading --------------------------------------------------------------------------------------

    def feed(self, text: str, stop: int) -> None:
        """Read `text[pos:stop]`; stops early when the value is done or broken."""
        if self._state >= _DONE:
            return
        i = self.pos
        while i < stop:
            state = self._state
            if state == _STRING:
                match = _PLAIN.match(text, i, stop)
                if match:
                    run, i = match.group(), match.end()
                    if self._key is not None:
                        self._key.append(run)
                    else:
                        if self._collect is not None:
                            self._collect.append(run)
                        self._emit(run, i)
                    if i >= stop:
                        break
                ch = text[i]
                i += 1
                if ch == '"':
                    self._string_done(i)
                elif ch == "\\":
                    self._state = _ESCAPE
                else:
                    self._fail("control character in a JSON string", i - 1)
            elif state == _WORDS:
                match = _WORD.match(text, i, stop)
                i = match.end() if match else i
                if i >= stop:
                    break
                self._word_done(text[self._word_at : i], i)
            else:
                i = self._structural(text, i)
            if self._state >= _DONE:
                if self._state == _DONE:
                    self.pos = i
                return
        self.pos = i

    def _string_done(self, i: int) -> None:
        if self._key is not None:
            self._key_done(i)
            return
        if self._collect is not None:
            self.strings[self._collect_path] = "".join(self._collect)
            self._collect = None
        self._emit('"', i)
        self._value_done(i)

    def _structural(self, text: str, i: int) -> int:
        """One character outside string and word runs; returns the next index."""
        ch = text[i]
        state = self._state
        if state == _ESCAPE:
            if ch == "u":
                self._state, self._hex = _UHEX, ""
            elif ch in _SHORT:
                self._state = _STRING
                self._char(_SHORT[ch], i + 1)
            else:
                self._fail(f"bad escape \\{ch}", i)
            return i + 1
        if state in (_UHEX, _HIGH, _HIGH_BS):
            return self._unicode(ch, i)
        if state == _ROOT:
            if ch.isspace():
                return i + 1
            if ch != "{":
                self._fail(f"expected a JSON object at {fault_excerpt(text, i)}", i)
                return i
            self._open(ch, i + 1)
            return i + 1
        if ch in _WS:
            return i + 1
        if state == _VALUE:
            return self._value(text, ch, i)
        if state == _KEY:
            if ch == '"':
                self._key, self._state = [], _STRING
            elif not (ch == "}" and self._first and self._close(ch, i + 1)):
                self._fail(f"expected a key at {fault_excerpt(text, i)}", i)
            return i + 1
        if state == _COLON:
            if ch != ":":
                self._fail(f"expected ':' at {fault_excerpt(text, i)}", i)
                return i
            self._emit(json.dumps(self._stack[-1][2], ensure_ascii=False) + ": ", i + 1)
            self._state = _VALUE
            return i + 1
        # _AFTER: a value just ended inside a container
        if ch == ",":
            self._emit(", ", i + 1)
            self._state, self._first = (_KEY if self._stack[-1][0] else _VALUE), False
            return i + 1
        if ch in "}]" and self._close(ch, i + 1):
            return i + 1
        self._fail(f"expected ',' or a closing bracket at {fault_excerpt(text, i)}", i)
        return i

    def _value(self, text: str, ch: str, i: int) -> int:
        self._first, first = False, self._first
        if ch in "{[":
            self._open(ch, i + 1)
        elif ch == '"':
            self._value_starts(ch)
            self._emit('"', i + 1)
            self._state = _STRING
        elif ch in _WORD_START:
            self._value_starts(ch)
            self._state, self._word_at = _WORDS, i
            return i
        elif not (ch == "]" and first and self._close(ch, i + 1)):
            self._fail(f"expected a JSON value at {fault_excerpt(text, i)}", i)
            return i
        return i + 1

    def _unicode(self, ch: str, i: int) -> int:
        """\\uXXXX escapes; a high surrogate joins a following low one, as `json.loads` does."""
        state = self._state
        if state != _UHEX:  # after a high surrogate: only "\\u" + a low surrogate joins it
            if state == _HIGH and ch == "\\":
                self._state = _HIGH_BS
                return i + 1
            if state == _HIGH_BS and ch == "u":
                self._state = _UHEX
                return i + 1
            self._lone_high(i)
            self._state = _STRING if state == _HIGH else _ESCAPE
            return i  # read this character again
        if ch not in _HEX:
            self._fail("bad \\u escape", i)
            return i
        self._hex += ch
        if len(self._hex) < 4:
            return i + 1
        code, self._hex = int(self._hex, 16), ""
        if self._high and 0xDC00 <= code <= 0xDFFF:
            high, self._high = self._high, ""
            self._state = _STRING
            self._char(chr(0x10000 + ((ord(high) - 0xD800) << 10) + (code - 0xDC00)), i + 1)
            return i + 1
        self._lone_high(i + 1)
        if 0xD800 <= code <= 0xDBFF:
            self._state, self._high = _HIGH, chr(code)
        else:
            self._state = _STRING
            self._char(chr(code), i + 1)
        return i + 1

    def _lone_high(self, i: int) -> None:
        if self._high:
            high, self._high = self._high, ""
            self._char(high, i)
