"""The mask memo of all grammars together stays under its byte budget."""

from __future__ import annotations

from tokenloom.constrain import constraint
from tokenloom.constrain.api import compile as compile_spec
from tokenloom.engine.vocab import load_tokenizer


def test_memoised_masks_stay_within_the_budget(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    vocab = load_tokenizer().vocab
    budget = constraint._MemoBudget(400_000)  # a few dozen masks
    monkeypatch.setattr(constraint, "_BUDGET", budget)
    for n in range(6):  # distinct grammars, each walked through many states
        c = compile_spec({"regex": f"[a-z]{{3,40}}{n}[0-9]{{1,30}}"}, vocab)
        for ch in "abcdefghijklmnopqrstuvw" + str(n) + "0123456789":
            assert c.allowed() is not None
            c.advance(vocab.pieces.index(ch.encode()))
            assert budget.used <= budget.limit
    assert budget.used > budget.limit // 2  # it filled up, and evicted to stay within it
