"""Structured outputs: a vocabulary trie walked with character-level parsers to mask logits.

`compile(spec, vocab)` returns a `Constraint` with `allowed()`, `advance(token_id)`, `is_accepting()`.
"""

from __future__ import annotations

from tokenloom.constrain import compiled  # noqa: F401  # first: TOKENLOOM_PURE_PYTHON must see every import
from tokenloom.constrain.api import check_spec, compile
from tokenloom.constrain.constraint import Constraint
from tokenloom.constrain.trie import Vocab

__all__ = ["Constraint", "Vocab", "check_spec", "compile"]
