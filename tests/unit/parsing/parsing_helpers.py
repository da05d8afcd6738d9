"""Shared helpers of the parsing tests: the real templates (read from ../shared/templates) and feeding."""

from __future__ import annotations

import random
from functools import cache
from pathlib import Path

from tokenloom.events import ContentDelta, Event, ParseError, ReasoningDelta, ToolCallArgsDelta
from tokenloom.parsing.stream.output_parser import AutoOutputParser

TEMPLATES = Path(__file__).resolve().parents[3] / ".." / "shared" / "templates"


def template_names() -> list[str]:
    return sorted(p.name for p in TEMPLATES.glob("*.jinja"))


@cache
def read_template(name: str) -> str:
    return (TEMPLATES / name).read_text(encoding="utf-8")


def feed_all(parser: AutoOutputParser, pieces: list[str]) -> list[Event]:
    events: list[Event] = []
    for piece in pieces:
        events += parser.feed(piece)
    return events + parser.finish()


def random_pieces(text: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    pieces, i = [], 0
    while i < len(text):
        n = rng.randint(1, 9)
        pieces.append(text[i : i + n])
        i += n
    return pieces


def joined(events: list[Event]) -> tuple[str, str, dict[int, str], list[str], list[str]]:
    """Concatenated content, reasoning and per-call argument deltas, the error kinds and error messages
    (chunking must change none of them)."""
    content = "".join(e.text for e in events if isinstance(e, ContentDelta))
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    args: dict[int, str] = {}
    for e in events:
        if isinstance(e, ToolCallArgsDelta):
            args[e.index] = args.get(e.index, "") + e.text
    errors = [e.kind for e in events if isinstance(e, ParseError)]
    messages = [e.message for e in events if isinstance(e, ParseError)]
    return content, reasoning, args, errors, messages
