"""An idle engine waits for requests still being prepared, so a burst prefills in one step; a request
that never gets queued, or one that arrives alone, is not held up by that wait (engine/arrivals.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from tokenloom.engine.engine import Engine, EngineConfig
from tokenloom.engine.jobs import Done, JobHandle
from tokenloom.engine.model import load_model
from tokenloom.engine.sampling import SamplingParams

pytestmark = pytest.mark.integration
PARAMS = SamplingParams(max_tokens=4, temperature=0.0, ignore_eos=True)
LONG_WAIT = 30.0  # far longer than any test here may take: reaching it would show as a timeout


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    engine = Engine(load_model(), EngineConfig(n_parallel=4, n_ctx_slot=256, burst_wait=LONG_WAIT))
    yield engine
    engine.close()


def _finish(handle: JobHandle) -> Done:
    events = list(handle.iter_events(timeout=20))
    assert isinstance(events[-1], Done)
    return events[-1]


def _prompt(engine: Engine, text: str) -> list[int]:
    return engine.tokenizer.tokenize(text, add_bos=True)


def test_requests_still_arriving_are_admitted_with_the_first(engine: Engine) -> None:
    first_queued = threading.Event()
    late: list[JobHandle] = []

    def arrive_late(i: int) -> None:
        with engine.arrivals.arriving():
            first_queued.wait(10)
            time.sleep(0.2)  # still being prepared well after the first request was queued
            late.append(engine.submit(_prompt(engine, f"Late request {i} begins"), PARAMS))

    threads = [threading.Thread(target=arrive_late, args=(i,)) for i in range(2)]
    with engine.arrivals.arriving():  # the test's own request: counted as arriving, then queued
        for t in threads:
            t.start()
        while engine.arrivals.pending < 3:
            threading.Event().wait(0.001)
        first = engine.submit(_prompt(engine, "The first request begins"), PARAMS)
    first_queued.set()
    for t in threads:
        t.join()
    for handle in (first, *late):
        assert _finish(handle).finish_reason == "length"
    steps = {h.job.admitted_step for h in (first, *late)}
    assert len(steps) == 1, steps  # one step prefilled all three


def test_a_request_that_is_never_queued_stops_the_wait(engine: Engine) -> None:
    leave = threading.Event()

    def arrive_and_give_up() -> None:
        with engine.arrivals.arriving():
            leave.wait(10)  # e.g. its body failed validation: it ends without a submit

    thread = threading.Thread(target=arrive_and_give_up)
    thread.start()
    while engine.arrivals.pending < 1:
        threading.Event().wait(0.001)
    handle = engine.submit(_prompt(engine, "Waiting for nobody"), PARAMS)
    leave.set()
    thread.join()
    assert _finish(handle).finish_reason == "length"  # long before LONG_WAIT
    assert engine.arrivals.pending == 0


def test_a_lone_request_does_not_wait(engine: Engine) -> None:
    assert engine.arrivals.pending == 0
    handle = engine.submit(_prompt(engine, "Alone"), PARAMS)
    assert _finish(handle).finish_reason == "length"  # long before LONG_WAIT


def test_the_wait_is_bounded() -> None:
    engine = Engine(load_model(), EngineConfig(n_parallel=2, n_ctx_slot=256, burst_wait=0.05))
    release = threading.Event()

    def arrive_forever() -> None:
        with engine.arrivals.arriving():
            release.wait(60)

    thread = threading.Thread(target=arrive_forever)
    thread.start()
    try:
        while engine.arrivals.pending < 1:
            threading.Event().wait(0.001)
        handle = engine.submit(_prompt(engine, "Not held back"), PARAMS)
        assert _finish(handle).finish_reason == "length"  # while the other still counts as arriving
        assert engine.arrivals.pending == 1
    finally:
        release.set()
        thread.join()
        engine.close()
