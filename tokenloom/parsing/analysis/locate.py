"""Locating one probe call in a rendered text: as a JSON call object, a name before JSON arguments, tagged
arguments, or a relaxed object. Used by `tool_analysis`; knows nothing of sections or parsing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tokenloom.parsing.analysis.probes import ARGS_A
from tokenloom.parsing.arguments import (
    ArgumentsError,
    pythonic_arguments,
    pythonic_end,
    relaxed_end,
    relaxed_to_json,
)
from tokenloom.parsing.markers import after_tag_remainder, common_prefix, common_suffix
from tokenloom.parsing.structures import SLOT_ARGS, SLOT_ID, SLOT_NAME

_WORD_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
ID_MARK = "\x01"  # stands in for a call id while markers are derived
KEY = "{key}"  # in `arg_close`: the argument's name, when the closing tag repeats it
_DECODER = json.JSONDecoder(strict=False)


@dataclass(slots=True)
class Located:
    """Where one call sits in a rendered text."""

    start: int  # first character of the name (or of the JSON call object)
    end: int  # after the arguments (or the JSON call object)
    kind: str  # "call" (JSON call object), "args" (name then JSON args), "tagged"
    name_end: int = 0
    args_start: int = 0
    paths: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]] = ((), (), ())
    fields: tuple[tuple[tuple[str, ...], str], ...] = ()  # a call object's leaves in rendered order


@dataclass(slots=True)
class Tagged:
    """Markers of tagged arguments found in a one-call rendering."""

    prefix: str
    suffix: str
    suffix_tail: str
    close: str
    separator: str


def _path_to(obj: Any, target: Any, path: tuple[str, ...] = ()) -> tuple[str, ...] | None:
    if isinstance(obj, dict):
        for key, value in obj.items():
            if value == target or (isinstance(value, str) and _loads(value) == target):
                return (*path, key)
            if isinstance(value, dict) and (found := _path_to(value, target, (*path, key))) is not None:
                return found
    return None


def _fields(
    obj: dict[str, Any], paths: tuple[tuple[str, ...], ...], prefix: tuple[str, ...] = ()
) -> tuple[tuple[tuple[str, ...], str], ...]:
    """Every leaf of a rendered call object in the order the template wrote it: the name, arguments and
    id as their slots, anything else (e.g. `"type": "function"`) as its JSON text, a constant."""
    slots = dict(zip(paths, (SLOT_NAME, SLOT_ARGS, SLOT_ID), strict=True))
    out: list[tuple[tuple[str, ...], str]] = []
    for key, value in obj.items():
        path = (*prefix, key)
        if path in slots:
            out.append((path, slots[path]))
        elif isinstance(value, dict):
            out += _fields(value, paths, path)
        else:
            out.append((path, json.dumps(value, ensure_ascii=False)))
    return tuple(out)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def locate_json(text: str, start: int, name: str, args: dict[str, Any]) -> Located | None:
    pos = text.find("{", start)
    while pos >= 0:
        try:
            obj, end = _DECODER.raw_decode(text, pos)
        except ValueError:
            obj, end = None, pos
        if isinstance(obj, dict):
            if obj == args:
                name_start = text.rfind(name, start, pos)
                if name_start < 0:
                    return None
                return Located(name_start, end, "args", name_start + len(name), pos)
            if obj == {name: args}:
                return Located(pos, end, "call", paths=((), (), ()))
            name_path, args_path = _path_to(obj, name), _path_to(obj, args)
            if name_path and args_path:
                id_path = _path_to(obj, ID_MARK) or ()
                paths = (name_path, args_path, id_path)
                return Located(pos, end, "call", paths=paths, fields=_fields(obj, paths))
        pos = text.find("{", pos + 1)
    return None


def locate_tagged(
    text: str, start: int, name: str, args: dict[str, Any], tagged: Tagged | None
) -> Located | None:
    name_start = text.find(name, start)
    if name_start < 0:
        return None
    name_end = name_start + len(name)
    pos, first_key = name_end, -1
    for key, value in args.items():
        k = text.find(key, pos)
        v = text.find(str(value), k + len(key)) if k >= 0 else -1
        if v < 0:
            return None
        first_key = k if first_key < 0 else first_key
        pos = v + len(str(value))
    close = tagged.close.replace(KEY, str(list(args)[-1])) if tagged else ""
    prefix = tagged.prefix if tagged else ""
    return Located(name_start, pos + len(close), "tagged", name_end, first_key - len(prefix))


def tagged_markers(text: str, loc_name_end: int) -> Tagged | None:
    (k1, v1), (k2, v2) = [(str(k), str(v)) for k, v in ARGS_A.items()]
    k1s = text.find(k1, loc_name_end)
    v1s = text.find(v1, k1s + len(k1))
    k2s = text.find(k2, v1s + len(v1))
    v2s = text.find(v2, k2s + len(k2))
    if min(k1s, v1s, k2s, v2s) < 0:
        return None
    between, after = text[v1s + len(v1) : k2s], text[v2s + len(v2) :]
    if k1 in between and k2 in after:  # the closing tag names the key: <key_one>v</key_one> (MiniMax-M3)
        between, after = between.replace(k1, KEY, 1), after.replace(k2, KEY, 1)
    prefix = after_tag_remainder(common_suffix(text[loc_name_end:k1s], between))
    if not prefix.strip():
        return None
    rest = between[: len(between) - len(prefix)]
    close = common_prefix(rest, after)
    suffix1, suffix2 = text[k1s + len(k1) : v1s], text[k2s + len(k2) : v2s]
    suffix, tail = suffix1, ""
    if suffix1 != suffix2:
        suffix = common_prefix(suffix1, suffix2)
        tail = common_suffix(suffix1[len(suffix) :], suffix2[len(suffix) :]).lstrip(_WORD_CHARS)
    return Tagged(prefix, suffix, tail, close, rest[len(close) :])


def relaxed_quote(text: str, name_end: int) -> str:
    """The custom string delimiter of a relaxed object, e.g. '<|"|>' in `{key_one:<|"|>value_one<|"|>}`."""
    key, value = next(iter(ARGS_A.items()))
    k = text.find(key + ":", name_end)
    v = text.find(str(value), k) if k >= 0 else -1
    quote = text[k + len(key) + 1 : v] if v >= 0 else ""
    return quote if quote.strip() and text.startswith(quote, v + len(str(value))) else ""


def locate_relaxed(text: str, start: int, name: str, args: dict[str, Any], quote: str) -> Located | None:
    name_start = text.find(name, start)
    brace = text.find("{", name_start + len(name)) if name_start >= 0 else -1
    end = relaxed_end(text, brace, quote) if brace >= 0 else -1
    if end < 0:
        return None
    try:
        if relaxed_to_json(text[brace:end], quote) != args:
            return None
    except ArgumentsError:
        return None
    return Located(name_start, end, "args", name_start + len(name), brace)


def locate(
    text: str, start: int, name: str, args: dict[str, Any], tagged: Tagged | None, quote: str = ""
) -> Located | None:
    if quote == "(":
        return locate_pythonic(text, start, name, args)
    if quote:
        return locate_relaxed(text, start, name, args, quote)
    return locate_json(text, start, name, args) or locate_tagged(text, start, name, args, tagged)


def locate_pythonic(text: str, start: int, name: str, args: dict[str, Any]) -> Located | None:
    """`NAME(key='value', n=7)` (LFM2)."""
    name_start = text.find(name + "(", start)
    if name_start < 0:
        return None
    paren = name_start + len(name)
    end = pythonic_end(text, paren)
    try:
        if end < 0 or pythonic_arguments(text[paren:end]) != args:
            return None
    except ArgumentsError:
        return None
    return Located(name_start, end, "args", paren, paren)
