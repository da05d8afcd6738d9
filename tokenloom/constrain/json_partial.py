"""Whether a JSON text cut short may still become a given value (JSON Schema equality: 1 == 1.0, any key
order), for uniqueItems items that may yet repeat a seen one.

Exact for strings, literals, arrays and objects; a number cut short (or an escape cut short) counts as
possibly equal to any number (string), so the answer errs only towards "may". Knows nothing of parsers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

_WS = " \t\n\r"
_NUMBER_CHARS = frozenset("-+.eE0123456789")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LITERALS = {"true": True, "false": False, "null": None}
_DECODER = json.JSONDecoder()


class _Cut(Exception):
    """The text ended while still consistent with the target."""


def may_become(text: str, target: Any, names_unique: bool = False) -> bool:
    """Whether some completion of `text` (a JSON value's start) equals `target` (a decoded JSON value).

    `names_unique`: the outermost object cannot repeat a name, so a value that differs already decides
    (elsewhere a repeated name's last value counts, as in json.loads)."""
    reader = _Reader(text)
    try:
        return reader.value(target, names_unique)
    except _Cut:
        return True


def _starts_any(names: list[str]) -> Callable[[str], bool]:
    return lambda prefix: any(name.startswith(prefix) for name in names)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


class _Reader:
    __slots__ = ("i", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def _peek(self) -> str:
        """The next char after whitespace; _Cut at the end of the text."""
        text, i = self.text, self.i
        while i < len(text) and text[i] in _WS:
            i += 1
        self.i = i
        if i >= len(text):
            raise _Cut
        return text[i]

    def value(self, target: Any, names_unique: bool = False) -> bool:
        c = self._peek()
        if c == "{":
            return isinstance(target, dict) and self._object(target, names_unique)
        if c == "[":
            return isinstance(target, list) and self._array(target)
        if c == '"':
            if not isinstance(target, str):
                return False
            got = self._string(lambda s: target.startswith(s))
            return got is not None and got == target
        if c in _NUMBER_CHARS:
            return _is_number(target) and self._number(target)
        return self._literal(target)

    def _object(self, target: dict[str, Any], names_unique: bool) -> bool:
        self.i += 1
        used: set[str] = set()
        wrong: set[str] = set()  # names whose value differs so far: a repeat of the name may still fix it
        while True:
            c = self._peek()
            if c == "}":
                self.i += 1
                return used == target.keys() and not wrong
            if c == ",":
                self.i += 1
                c = self._peek()
            if c != '"':
                return False
            key = self._string(_starts_any(list(target)))
            if key is None or key not in target or (names_unique and key in used):
                return False
            used.add(key)
            if self._peek() != ":":
                return False
            self.i += 1
            start = self.i
            if self.value(target[key]):
                wrong.discard(key)
            elif names_unique:
                return False
            else:
                wrong.add(key)
                self.i = start
                self._skip()

    def _skip(self) -> None:
        """Past any one JSON value (_Cut if the text ends inside it)."""
        self._peek()
        try:
            _, self.i = _DECODER.raw_decode(self.text, self.i)
        except ValueError:
            raise _Cut from None  # cut short (or malformed, which the parser refuses anyway)

    def _array(self, target: list[Any]) -> bool:
        self.i += 1
        n = 0
        while True:
            c = self._peek()
            if c == "]":
                self.i += 1
                return n == len(target)
            if c == ",":
                self.i += 1
            if n >= len(target) or not self.value(target[n]):
                return False
            n += 1

    def _string(self, fits: Callable[[str], bool]) -> str | None:
        """The string at the cursor (None once it cannot fit); `fits(prefix)` judges a string cut short."""
        text, i = self.text, self.i + 1
        out: list[str] = []
        while i < len(text):
            c = text[i]
            if c == '"':
                self.i = i + 1
                return "".join(out)
            if c != "\\":
                out.append(c)
                i += 1
                continue
            esc = text[i + 1 : i + 2]
            if esc == "u" and len(text) >= i + 6:
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
            elif esc in _ESCAPES:
                out.append(_ESCAPES[esc])
                i += 2
            else:
                raise _Cut  # an escape cut short: any char may come
        if fits("".join(out)):
            raise _Cut
        return None

    def _number(self, target: Any) -> bool:
        text, start = self.text, self.i
        i = start
        while i < len(text) and text[i] in _NUMBER_CHARS:
            i += 1
        if i >= len(text):
            raise _Cut  # more digits, a fraction or an exponent may follow
        self.i = i
        word = text[start:i]
        try:
            value: float = int(word) if word.lstrip("-").isdigit() else float(word)
        except ValueError:
            return False
        return bool(value == target)

    def _literal(self, target: Any) -> bool:
        text, i = self.text, self.i
        for word, value in _LITERALS.items():
            got = text[i : i + len(word)]
            if got and word.startswith(got):
                if len(got) < len(word):
                    if value is target:
                        raise _Cut
                    return False
                self.i = i + len(word)
                return value is target
        return False
