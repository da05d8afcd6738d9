"""The mask worker: masks computed off the scheduler thread, a runaway one stopped at its budget."""

from __future__ import annotations

import os
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


class _Policy(_Quick):
    """Records the scheduling policy and the thread of the worker that computes its mask."""

    def allowed(self) -> Any:
        self.policy = os.sched_getscheduler(0)
        self.thread = threading.current_thread()
        return super().allowed()


def test_a_costly_mask_finishes_at_idle_priority_and_the_next_runs_at_normal_priority() -> None:
    """The batch's threads come before a hostile schema's masks; the masks after it are not penalised."""
    worker = MaskWorker(lambda: None, MaskBudget(per_mask=1.0, per_request=100))
    runaway = worker.submit(_Spinning(), None, 0.0)
    after = _Policy()
    queued = worker.submit(after, None, 0.0)
    deadline = time.monotonic() + 30
    while not runaway.demoted and time.monotonic() < deadline:
        assert worker.overdue() is None
        time.sleep(0.005)
    assert runaway.demoted and runaway.thread is not None
    assert os.sched_getscheduler(runaway.thread.native_id or 0) == os.SCHED_IDLE
    assert not queued.started  # one mask at a time: the fresh normal thread waits for the demoted one
    assert _wait(runaway, worker) is runaway and runaway.timed_out
    assert _wait(queued, worker) is None and queued.mask is not None
    assert after.thread is not runaway.thread and after.policy == os.SCHED_OTHER
    # the request's next mask goes to the idle lane, whose thread is the demoted one
    again = _Policy()
    costly = worker.submit(again, 3, 0.0, costly=True)
    assert _wait(costly, worker) is None and costly.mask is not None
    assert again.thread is runaway.thread and again.policy == os.SCHED_IDLE and again.advanced == [3]
    worker.close()


def test_costly_and_cheap_tasks_keep_request_order() -> None:
    """The two lanes take tasks one at a time, in the order they were asked for."""
    order: list[int] = []

    class _Noting(_Quick):
        def __init__(self, n: int) -> None:
            super().__init__()
            self.n = n

        def allowed(self) -> Any:
            order.append(self.n)
            return super().allowed()

    worker = MaskWorker(lambda: None)
    tasks = [worker.submit(_Noting(n), None, 0.0, costly=n % 2 == 1) for n in range(8)]
    for task in tasks:
        assert _wait(task, worker) is None
    assert order == list(range(8))
    worker.close()
