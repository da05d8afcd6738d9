"""Parse a harmony message header (the text between `<|start|>` and `<|message|>`), HARMONY.md §7.

Tolerant where the reference is strict: a known role word overrides the expected role, a lone unknown
word is a tool author, and a lone `json`/`code`/`<|constrain|>...` word is a content type, not a recipient.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import cast

from tokenloom.harmony.messages import CHANNEL, CONSTRAIN, ROLES, HarmonyMessage, Role

_CONTENT_TYPES = ("json", "code", "text")
_CONSTRAIN_SPACE = re.compile(re.escape(CONSTRAIN) + r"\s*")  # "<|constrain|>  json" -> "<|constrain|>json"
_EARLIER_CHANNEL = re.compile(re.escape(CHANNEL) + r"\s*[^\s<]*")


class HarmonyParseError(ValueError):
    """Malformed harmony text in strict parsing (streaming parsing reports it as an issue instead)."""


@dataclass(frozen=True, slots=True)
class Header:
    """The parsed fields of one header, or `error` when it could not be understood."""

    message: HarmonyMessage
    error: str | None = None


def parse_header(text: str, role: Role | None) -> Header:
    """Read author, recipient, channel and content type from `text`; `role` is the expected role."""
    channel, rest = _cut_channel(text)
    if channel == "":
        return Header(HarmonyMessage(role or "assistant"), "empty channel in message header")
    words = _CONSTRAIN_SPACE.sub(" " + CONSTRAIN, rest).split()
    name: str | None = None
    author: Role
    if words and words[0] in ROLES:
        author = cast(Role, words.pop(0))
    elif role is not None:
        author = role
    elif not words or words[0].startswith("to="):
        author = "assistant"  # `<|start|>` directly followed by a channel or a recipient
    else:  # a tool's name as the author (the reference refuses a lone name; we accept it)
        author, name = "tool", words.pop(0)
    recipient: str | None = None
    content_type: str | None = None
    if words:
        last = words.pop()
        if last.startswith("to="):
            recipient = last[3:]
        elif not words and not (last.startswith(CONSTRAIN) or last in _CONTENT_TYPES):
            recipient = last
        else:
            content_type = last
            if words:
                recipient = words.pop().removeprefix("to=")
    message = HarmonyMessage(
        author, name=name, recipient=recipient, channel=channel, content_type=content_type
    )
    if words:
        return Header(message, f"unexpected tokens remaining in message header: {' '.join(words)}")
    return Header(message)


def lenient_content(text: str) -> tuple[str | None, str]:
    """A header that never reached `<|message|>` read as content: (channel, the rest without a role word).

    The reference joins the words with single spaces; we keep the text's own whitespace (same result for
    the one-line cases it tests, no mangled newlines when a model wrote plain text without a header).
    """
    channel, rest = _cut_channel(text)
    rest = rest.strip()
    word = rest.split(maxsplit=1)[0] if rest else ""
    if word in ROLES:
        rest = rest[len(word) :].lstrip()
    return channel or None, rest


def _cut_channel(text: str) -> tuple[str | None, str]:
    """(channel, header without it): the channel runs to the first whitespace or `<` after the marker
    (spaces right after it are skipped: "<|channel|> final", llm-jp). A header naming several channels
    ("<|channel|>commentary to=assistant<|channel|>analysis") is read with its last one."""
    i = text.rfind(CHANNEL)
    if i < 0:
        return None, text
    start = i + len(CHANNEL)
    while start < len(text) and text[start] in " \t":
        start += 1
    end = start
    while end < len(text) and not text[end].isspace() and text[end] != "<":
        end += 1
    before = _EARLIER_CHANNEL.sub(" ", text[:i])
    return text[start:end], before + " " + text[end:]
