"""The parser states all grammars intern stay under one budget, and what a grammar drops is freed."""

from __future__ import annotations

import gc

import numpy as np

from tokenloom.constrain import parser
from tokenloom.constrain.api import compile as compile_spec
from tokenloom.engine.vocab import load_tokenizer

LIMIT = 2_000


def test_interned_states_stay_within_the_budget(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    vocab = load_tokenizer().vocab
    interned = parser._Interned(LIMIT)
    monkeypatch.setattr(parser, "_INTERNED", interned)
    letters = "abcdefghijklmnopqrstuvwxyz"
    peak = 0
    for n in range(5):  # distinct grammars whose counted repeats make a new state for every char
        c = compile_spec({"regex": f"[a-z]{{1,900}}{n}[0-9]{{1,30}}"}, vocab)
        for i in range(700):
            if i % 50 == 0:
                assert c.allowed() is not None  # the mask walk interns states too
            c.advance(vocab.pieces.index(letters[(i * 7 + n) % 26].encode()))
            peak = max(peak, interned.total())
    # 3,500 chars made a new state each: without the budget all of them would still be interned. The
    # limit is checked every LIMIT // 8 new states, so it may be passed by that much in between.
    assert LIMIT // 2 < peak <= LIMIT + LIMIT // 8


def test_what_a_grammar_forgets_is_freed(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Once its grammar forgets, a state nobody holds is collected, though a state its memoised mask
    keeps (the compile cache holds it) was linked to it before."""
    vocab = load_tokenizer().vocab
    monkeypatch.setattr(parser, "_INTERNED", parser._Interned(LIMIT))
    c = compile_spec({"regex": "[a-z]{1,300}x[0-9]{1,30}"}, vocab)
    assert c.allowed() is not None  # memoised: the compile cache now holds the initial state
    early: parser.Stack | None = None  # the stack of a state passed on the way (holding it keeps no state)
    for i in range(20):
        c.advance(vocab.pieces.index(b"a"))
        if i == 10:
            [early] = c._state.stacks  # type: ignore[union-attr]
    grammar = c._state.grammar  # type: ignore[union-attr]
    del c
    gc.collect()
    assert early is not None and _alive(early)  # still reachable from the initial state
    grammar.forget()
    gc.collect()
    assert not _alive(early)


def _alive(stack: parser.Stack) -> bool:
    """Whether a parser state of this one stack still exists (compiled states take no weak references)."""
    return any(type(o) is parser.ParserState and o.stacks == (stack,) for o in gc.get_objects())


def test_a_constraint_goes_on_rightly_after_its_grammar_forgets(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    vocab = load_tokenizer().vocab
    monkeypatch.setattr(parser, "_INTERNED", parser._Interned(LIMIT))
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 40}, "n": {"type": "integer"}},
        "required": ["name", "n"],
    }
    held = compile_spec({"json_schema": schema}, vocab)
    fresh_text = '{"name": "abcdef'
    for ch in fresh_text:
        held.advance(vocab.pieces.index(ch.encode()))
    grammar = held._state.grammar  # type: ignore[union-attr]
    grammar.forget()
    assert len(grammar._states) == 1  # only the new initial state
    other = compile_spec({"json_schema": schema}, vocab)  # the same grammar, from its new initial state
    for ch in fresh_text:
        other.advance(vocab.pieces.index(ch.encode()))
    assert held._state is not other._state  # the held position was dropped from the table
    assert np.array_equal(held.allowed(), other.allowed())
    for ch in 'gh", "n": 12}':
        held.advance(vocab.pieces.index(ch.encode()))
    assert held.is_accepting()
