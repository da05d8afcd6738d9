"""Turn-forgery guard: request text never becomes control tokens; only the chat template's own text does.

A chat template writes its turns with control tokens (`<start_of_turn>`, `<|im_start|>`, ...). llama.cpp
turns any such text into those tokens when a prompt is tokenized with special parsing on, so a user message
containing `<end_of_turn>\n<start_of_turn>model\n` would otherwise forge a turn.

Before the render, every control-token text found inside a string from the request (message contents,
names, tool calls and their arguments, tool definitions, template variables, the continued assistant
message) is swapped for a placeholder that carries a random per-request nonce (ASCII digits, so filters such
as `trim`, `tojson` or `upper` leave it intact, and no client can guess it). After the render the text is
tokenized in runs: template text (with the benign request text around it) with special parsing, as before,
and each hidden control-token text as plain text. A request with no such text tokenizes exactly as it did
without the guard.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

Tokenize = Callable[[str, bool], list[int]]  # (text, parse_special) -> tokens, no BOS


@dataclass(frozen=True, slots=True)
class ControlTexts:
    """The texts special parsing turns into control tokens, indexed for a scan in one pass."""

    texts: frozenset[str]
    lengths: tuple[int, ...]  # distinct lengths, longest first (the longest match wins)
    first_chars: frozenset[str]
    starts: re.Pattern[str]  # any first character of a control-token text

    @classmethod
    def of(cls, texts: Iterable[str]) -> ControlTexts:
        kept = frozenset(t for t in texts if t)
        firsts = frozenset(t[0] for t in kept)
        starts = re.compile("[" + "".join(re.escape(c) for c in sorted(firsts)) + "]" if firsts else "(?!)")
        return cls(kept, tuple(sorted({len(t) for t in kept}, reverse=True)), firsts, starts)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of every control-token text in `text`, left to right, never overlapping."""
        found: list[tuple[int, int]] = []
        position = 0
        while (candidate := self.starts.search(text, position)) is not None:
            position = candidate.start()
            for length in self.lengths:
                if text[position : position + length] in self.texts:
                    found.append((position, position + length))
                    position += length
                    break
            else:
                position += 1
        return found


@dataclass(slots=True)
class HiddenSpecials:
    """One request's hidden control-token texts and the nonce of their placeholders."""

    controls: ControlTexts
    nonce: str = field(default_factory=lambda: str(secrets.randbelow(10**18)).zfill(18))
    hidden: list[str] = field(default_factory=list)
    _pattern: re.Pattern[str] | None = None

    def hide(self, value: Any) -> Any:
        """`value` with control-token texts in every string (dict keys too) swapped for placeholders."""
        if isinstance(value, str):
            return self._hide_text(value)
        if isinstance(value, dict):
            return {self.hide(k) if isinstance(k, str) else k: self.hide(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.hide(v) for v in value)
        return value

    def _hide_text(self, text: str) -> str:
        if not self.controls.first_chars.intersection(text):
            return text
        spans = self.controls.spans(text)
        if not spans:
            return text
        pieces: list[str] = []
        at = 0
        for start, end in spans:
            pieces.append(text[at:start])
            pieces.append(f"[{self.nonce}:{len(self.hidden)}]")
            self.hidden.append(text[start:end])
            at = end
        pieces.append(text[at:])
        return "".join(pieces)

    @property
    def pattern(self) -> re.Pattern[str]:
        if self._pattern is None:
            self._pattern = re.compile(rf"\[{self.nonce}:(\d+)\]")
        return self._pattern

    def reveal(self, text: str) -> str:
        """The text the model reads, placeholders back to their original text."""
        if not self.hidden:
            return text
        return self.pattern.sub(lambda m: self._original(m), text)

    def _original(self, match: re.Match[str]) -> str:
        index = int(match.group(1))
        return self.hidden[index] if index < len(self.hidden) else match.group(0)

    def tokenize(self, text: str, tokenize: Tokenize) -> list[int]:
        """Tokens of rendered `text`: template runs with special parsing, hidden texts as plain text."""
        if not self.hidden:
            return tokenize(text, True)
        tokens: list[int] = []
        at = 0
        for match in self.pattern.finditer(text):
            if match.start() > at:
                tokens.extend(tokenize(text[at : match.start()], True))
            tokens.extend(tokenize(self._original(match), False))
            at = match.end()
        if at < len(text):
            tokens.extend(tokenize(text[at:], True))
        return tokens
