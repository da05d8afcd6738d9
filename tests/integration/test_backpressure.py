"""Backpressure on the real engine and model: a reader that stops reading pauses only its own slot, at a
bounded backlog, and resumes when it reads again; the other slot runs to the end meanwhile."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tokenloom.engine.engine import Engine, EngineConfig
from tokenloom.engine.jobs import Done, Piece
from tokenloom.engine.model import load_model
from tokenloom.engine.sampling import SamplingParams

pytestmark = pytest.mark.integration
LIMIT = 8


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    engine = Engine(load_model(), EngineConfig(n_parallel=2, n_ctx_slot=512, max_backlog=LIMIT))
    yield engine
    engine.close()


def test_a_reader_that_stops_pauses_only_its_own_slot(engine: Engine) -> None:
    prompt = engine.tokenizer.tokenize("Once upon a time", add_bos=True)
    params = SamplingParams(max_tokens=120, temperature=0.0, ignore_eos=True)
    slow = engine.submit(prompt, params)  # nobody reads it for now
    fast = engine.submit(prompt, SamplingParams(max_tokens=60, temperature=0.0, ignore_eos=True))
    fast_pieces = [e for e in fast.iter_events(timeout=120) if isinstance(e, Piece)]
    assert len(fast_pieces) == 60  # the other request ran to its end while the slow one was not read
    time.sleep(0.5)
    assert slow.backlog <= LIMIT + 1  # the unread one stopped at its bound instead of buffering on
    assert engine.stats().busy_slots == 1  # ... and kept its slot
    slow_events = list(slow.iter_events(timeout=120))  # reading again resumes it to the end
    assert isinstance(slow_events[-1], Done) and slow_events[-1].finish_reason == "length"
    assert sum(isinstance(e, Piece) for e in slow_events) >= 120
