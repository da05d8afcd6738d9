"""Incremental UTF-8 decoding of token pieces: a character split over two tokens is never emitted broken."""

from __future__ import annotations

import codecs


class IncrementalDetokenizer:
    """Feeds piece bytes, returns only complete characters; invalid bytes become U+FFFD."""

    __slots__ = ("_decoder",)

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, piece: bytes) -> str:
        return self._decoder.decode(piece)

    def flush(self) -> str:
        """Whatever is held back at the end (an unfinished character becomes U+FFFD)."""
        return self._decoder.decode(b"", final=True)
