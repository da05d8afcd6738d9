"""Small text helpers for marker handling in streaming parsers: partial matches and common affixes."""

from __future__ import annotations

import re

from tokenloom.textmatch import partial_suffix_len

# Tag-like tokens: <|x|>, <\uff5cx\uff5c> (DeepSeek's fullwidth bars), <x>, </x>, <x:y>, [X], [/X],
# [BEGIN FINAL RESPONSE], <|x>, <x|>
TAG_RE = re.compile(
    "<\\|[^<>|]*\\|>|<\uff5c[^<>\uff5c]*\uff5c>|</?[\\w:.\\-]+>|\\[/?[A-Z][A-Z_ ]*\\]"
    "|<\\|[\\w:.\\-]+>|<[\\w:.\\-]+\\|>"
)


def fault_excerpt(text: str, pos: int, expected: str = "") -> str:
    """The text at a fault, quoted up to its first character that differs from `expected` (the one character
    at `pos` when nothing was expected): no more than every chunking has seen, so error messages do not
    depend on how the output was split."""
    n = 0
    while n < len(expected) and pos + n < len(text) and text[pos + n] == expected[n]:
        n += 1
    return repr(text[pos : pos + n + 1])


def hold_back_len(text: str, markers: tuple[str, ...]) -> int:
    """How much of the end of `text` could still grow into one of `markers`."""
    best = 0
    for marker in markers:
        if marker and (n := partial_suffix_len(text, marker)) > best:
            best = n
    return best


def find_first(text: str, markers: tuple[str, ...], start: int = 0) -> tuple[int, str]:
    """Earliest occurrence of any marker (longest wins on a tie), or (-1, "")."""
    best_index, best_marker = -1, ""
    for marker in markers:
        if not marker:
            continue
        i = text.find(marker, start)
        if i >= 0 and (
            best_index < 0 or i < best_index or (i == best_index and len(marker) > len(best_marker))
        ):
            best_index, best_marker = i, marker
    return best_index, best_marker


def partial_start(text: str, markers: tuple[str, ...], limit: int) -> int:
    """Earliest index <= `limit` where a marker begins that runs past the end of `text`, or -1. A marker
    found at `limit` is only final when no longer one (e.g. "to=self<|message|>" over "to=") may still match
    there or before."""
    longest = max((len(m) for m in markers), default=0)
    for j in range(max(0, len(text) - longest + 1), limit + 1):
        tail = text[j:]
        if any(len(m) > len(tail) and m.startswith(tail) for m in markers):
            return j
    return -1


def common_prefix(a: str, b: str) -> str:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return a[:n]


def common_suffix(a: str, b: str) -> str:
    return common_prefix(a[::-1], b[::-1])[::-1]


_OPENERS = "<[\n "


def token_aligned_suffix(suffix: str) -> str:
    """Shrink a common suffix so it starts at a token-like boundary ("<", "[", whitespace), or empty.

    `CONTENT<|eot_id|>` and `</function><|eom_id|>` share `|>`, which is not a marker of its own.
    """
    for i, ch in enumerate(suffix):
        if ch in _OPENERS:
            return suffix[i:]
    return ""


def after_tag_remainder(text: str) -> str:
    """Drop the end of a tag that began before `text` (`">\n<parameter=` -> `\n<parameter=`)."""
    close = text.find(">")
    if close >= 0 and "<" not in text[:close]:
        return text[close + 1 :]
    return token_aligned_suffix(text)


def token_aligned_prefix(prefix: str) -> str:
    """Shrink a common prefix so it ends after ">", "]" or whitespace (never inside a tag)."""
    for i in range(len(prefix), 0, -1):
        if prefix[i - 1] in ">]\n ":
            return prefix[:i]
    return ""


def _unclosed(text: str) -> bool:
    """Does `text` end inside a tag, e.g. "<|tool_calls_section_begin"?"""
    return text.rfind("<") > text.rfind(">") or text.rfind("[") > text.rfind("]")


def align_split(text: str, index: int) -> int:
    """Move a split point of `text` forward so it does not fall inside a tag."""
    while 0 < index < len(text) and _unclosed(text[:index]):
        close = min((i for i in (text.find(">", index), text.find("]", index)) if i >= 0), default=-1)
        if close < 0:
            return index
        index = close + 1
    return index
