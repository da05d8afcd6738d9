"""The output parser for templates with no reasoning or tool-call structure: everything is content."""

from __future__ import annotations

from tokenloom.events import ContentDelta, Event, ParsedMessage


class PlainOutputParser:
    """Passes text through as content deltas."""

    def __init__(self) -> None:
        self._parts: list[str] = []

    def feed(self, text: str) -> list[Event]:
        if not text:
            return []
        self._parts.append(text)
        return [ContentDelta(text)]

    def finish(self) -> list[Event]:
        return []

    def message(self) -> ParsedMessage:
        return ParsedMessage(content="".join(self._parts))
