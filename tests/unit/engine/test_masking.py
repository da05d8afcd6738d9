"""The mask worker: masks computed off the scheduler thread, a runaway one stopped at its budget."""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

from tokenloom.engine.masking import MaskBudget, MaskTask, MaskWorker


class _Spinning:
    """A constraint whose mask never finishes (pure Python, like a hostile pattern's state explosion)."""

    def __init__(self) -> None:
        self.advanced: list[int] = []

    def allowed(self) -> Any:
        n = 0
        while True:
            n += 1

    def advance(self, token_id: int) -> None:
        self.advanced.append(token_id)

    def is_accepting(self) -> bool:
        return False


class _Quick(_Spinning):
    def allowed(self) -> Any:
        return np.ones(4, dtype=np.bool_)


def _wait(task: MaskTask, worker: MaskWorker, limit: float = 30.0) -> MaskTask | None:
    """Poll like the scheduler does: the task once done, or once `overdue` stopped it."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if task.done:
            return None
        stopped = worker.overdue()
        if stopped is not None:
            return stopped
        time.sleep(0.005)
    raise AssertionError("the mask neither finished nor was stopped")


def test_a_quick_mask_is_computed_after_advancing_by_the_token() -> None:
    ready = threading.Event()
    worker = MaskWorker(ready.set)
    constraint = _Quick()
    task = worker.submit(constraint, 7, 0.0)
    assert _wait(task, worker) is None
    assert ready.is_set() and task.error is None and task.mask.all() and constraint.advanced == [7]
    worker.close()


def test_a_runaway_mask_is_stopped_at_its_budget_and_the_worker_goes_on() -> None:
    worker = MaskWorker(lambda: None, MaskBudget(per_mask=0.2, per_request=100))
    started = time.monotonic()
    runaway = worker.submit(_Spinning(), None, 0.0)
    queued = worker.submit(_Quick(), None, 0.0)  # behind the runaway one
    assert _wait(runaway, worker) is runaway
    assert runaway.timed_out and "--mask-timeout" in (runaway.error or "")
    assert time.monotonic() - started < 20  # stopped, not left spinning
    assert _wait(queued, worker) is None and queued.mask is not None and queued.error is None
    worker.close()


def test_the_request_budget_counts_earlier_masks() -> None:
    worker = MaskWorker(lambda: None, MaskBudget(per_mask=100, per_request=1.0))
    task = worker.submit(_Spinning(), None, 0.9)  # 0.9 s spent by earlier masks of the same request
    assert _wait(task, worker) is task
    assert "--constraint-budget" in (task.error or "")
    worker.close()


def test_an_abandoned_task_is_skipped() -> None:
    worker = MaskWorker(lambda: None, MaskBudget(per_mask=0.2))
    runaway = worker.submit(_Spinning(), None, 0.0)
    skipped = worker.submit(_Quick(), 1, 0.0)
    skipped.abandoned = True
    last = worker.submit(_Quick(), 2, 0.0)
    assert _wait(runaway, worker) is runaway
    assert _wait(last, worker) is None
    assert not skipped.done
    worker.close()


def test_the_mask_of_a_request_that_ended_is_stopped_at_once() -> None:
    """A client that goes away while its costly mask runs frees the worker for the others at once."""
    worker = MaskWorker(lambda: None, MaskBudget(per_mask=100, per_request=100))
    runaway = worker.submit(_Spinning(), None, 0.0)
    after = worker.submit(_Quick(), None, 0.0)
    while not runaway.started:
        time.sleep(0.001)
    runaway.abandoned = True
    started = time.monotonic()
    assert _wait(after, worker) is None and after.mask is not None
    assert time.monotonic() - started < 20  # not the 100 s budget
    worker.close()
