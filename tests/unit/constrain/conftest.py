"""Shared fixtures: the real default vocabulary (vocab-only load) and the benchmark schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tokenloom.constrain import Constraint
from tokenloom.engine.vocab import Tokenizer, Vocab, load_tokenizer

SCHEMAS = Path(__file__).resolve().parents[4] / "shared" / "bench" / "schemas.jsonl"


@pytest.fixture(scope="session")
def tokenizer() -> Tokenizer:
    return load_tokenizer()


@pytest.fixture(scope="session")
def vocab(tokenizer: Tokenizer) -> Vocab:
    return tokenizer.vocab


@pytest.fixture(scope="session")
def bench_rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in SCHEMAS.read_text().splitlines() if line.strip()]


class Greedy:
    """Tokenizes text greedily from the vocabulary (longest piece first), as a second tokenization."""

    def __init__(self, vocab: Vocab) -> None:
        self.by_piece: dict[bytes, int] = {}
        for tid, piece in enumerate(vocab.pieces):
            if piece and tid not in vocab.special_ids:
                self.by_piece.setdefault(piece, tid)

    def tokens(self, c: Constraint, text: str) -> list[int] | None:
        """Follow `text` choosing at each step the longest allowed piece; None if stuck."""
        data, pos, out = text.encode("utf-8"), 0, []
        while pos < len(data):
            mask = c.allowed()
            assert mask is not None
            for size in range(min(48, len(data) - pos), 0, -1):
                tid = self.by_piece.get(data[pos : pos + size])
                if tid is not None and mask[tid]:
                    break
            else:
                return None
            c.advance(tid)
            out.append(tid)
            pos += size
        return out


@pytest.fixture(scope="session")
def greedy(vocab: Vocab) -> Greedy:
    return Greedy(vocab)


def force(c: Constraint, tokens: list[int], eog: int) -> bool:
    """Whether each token is allowed in turn and the end (EOG) is allowed after them."""
    for tid in tokens:
        mask = c.allowed()
        assert mask is not None
        if not mask[tid]:
            return False
        c.advance(tid)
    mask = c.allowed()
    return mask is not None and bool(mask[eog]) and c.is_accepting()


def mask_ids(mask: np.ndarray) -> set[int]:
    return set(np.nonzero(mask)[0].tolist())
