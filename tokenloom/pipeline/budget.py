"""The reasoning budget: once a request has spent its reasoning tokens, the format's end-of-reasoning
marker is forced, token by token, and the answer follows.

A `LogitMask` around the request's own constraint (or none): it watches the output's text for the
format's markers and counts tokens while the output is inside reasoning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tokenloom.engine.jobs import LogitMask
from tokenloom.engine.vocab import Vocab


@dataclass(frozen=True, slots=True)
class ReasoningMarkers:
    """Where a format's reasoning starts and ends in the output."""

    start: str  # e.g. "<think>", "<|channel|>analysis<|message|>"; "" when the output starts inside it
    end: str  # what is forced when the budget is spent, e.g. "</think>\n\n"
    is_open: bool  # the output starts inside reasoning (the prompt opened it)


class ReasoningBudget:
    """Forces `end_tokens` once `budget` tokens were generated inside reasoning (then steps aside)."""

    def __init__(
        self,
        inner: LogitMask | None,
        vocab: Vocab,
        markers: ReasoningMarkers,
        end_tokens: list[int],
        budget: int,
    ) -> None:
        self._inner = inner
        self._pieces = vocab.pieces
        self._n_vocab = vocab.n_vocab
        self._start = markers.start.encode()
        self._end = markers.end.strip().encode() or markers.end.encode()
        self._end_tokens = end_tokens
        self._budget = budget
        self._inside = markers.is_open
        self._spent = 0
        self._tail = b""  # recent output, for finding markers across token boundaries
        self._forcing: list[int] = []
        self._done = False  # the budget did its work (reasoning ended): only the inner constraint remains
        if self._inside and budget <= 0:
            self._forcing = list(end_tokens)

    @property
    def unenforced(self) -> frozenset[str]:
        inner: Any = self._inner
        return frozenset(getattr(inner, "unenforced", frozenset()))

    def allowed(self) -> Any:
        if self._forcing:
            mask = np.zeros(self._n_vocab, dtype=np.bool_)
            mask[self._forcing[0]] = True
            return mask
        return None if self._inner is None else self._inner.allowed()

    def is_accepting(self) -> bool:
        if self._forcing:
            return False
        return True if self._inner is None else self._inner.is_accepting()

    def advance(self, token_id: int) -> None:
        if self._inner is not None:
            self._inner.advance(token_id)
        if self._forcing:
            self._forcing.pop(0)
            if not self._forcing:
                self._inside, self._done, self._tail = False, True, b""
            return
        if self._done:
            return
        self._tail = (self._tail + self._pieces[token_id])[-256:]
        if not self._inside:
            if self._start and self._start in self._tail:
                self._inside, self._spent = True, 0
                self._tail = self._tail[self._tail.rfind(self._start) + len(self._start) :]
            return
        if self._end in self._tail:
            self._inside, self._done = False, True  # the model ended its reasoning in time
            return
        self._spent += 1
        if self._spent >= self._budget:
            self._forcing = list(self._end_tokens)
