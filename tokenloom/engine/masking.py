"""Constraint masks off the scheduler thread, each bounded in time.

A structured-output mask can cost microseconds or, for a hostile schema, minutes. Computing it on the
scheduler thread between decode steps would stop every stream on the server while it runs. So a slot's
next mask is asked for as soon as its token is sampled, and one worker thread computes it while the batch
decodes (`llama_decode` releases the GIL). A slot whose mask is late sits steps out, keeping its logits,
while the others go on.

A runaway mask cannot be stopped by a flag it never reads: the scheduler raises `MaskTimeout` inside the
worker thread (CPython's asynchronous exception), which unwinds it at the next bytecode. Most of the mask
engine is compiled by mypyc, which runs no bytecode, but it calls plain Python at every new parser state
(the frames' hashes, `constrain/interpreted.py`): masking the whole hard schema set, a thread waiting
for the interpreter waited 30 ms at most. Shared caches of the constraint code store a value only once
it is computed, so an interrupted computation leaves nothing half-made behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tokenloom.engine.jobs import LogitMask
from tokenloom.errors import TokenloomError

logger = logging.getLogger(__name__)


class MaskTimeout(Exception):
    """Raised inside the worker thread when the mask it computes is over its time budget."""


@dataclass(frozen=True, slots=True)
class MaskBudget:
    """Seconds one mask may take, and all of a request's constraint work together."""

    per_mask: float = 5.0
    per_request: float = 60.0


@dataclass(slots=True)
class MaskTask:
    """Advance a constraint by the sampled token (if any), then compute its next mask."""

    constraint: LogitMask
    token: int | None
    spent_before: float  # the request's constraint seconds before this task
    started: float = 0.0  # perf_counter when the worker began it (0: still queued)
    cpu_started: float = 0.0  # the worker thread's CPU clock then
    elapsed: float = 0.0  # CPU seconds it took
    done: bool = False
    mask: Any = None
    error: str | None = None
    abandoned: bool = False  # the request ended; nobody wants the result
    killed: bool = False  # MaskTimeout was raised in the worker for it
    timed_out: bool = False  # killed for its budget (not because its request ended)


class MaskWorker:
    """One thread computing masks in request order; `on_ready` is called after each one."""

    def __init__(self, on_ready: Callable[[], None], budget: MaskBudget | None = None) -> None:
        self.budget = budget or MaskBudget()
        self._on_ready = on_ready
        self._queue: deque[MaskTask] = deque()
        self._cond = threading.Condition()
        self._current: MaskTask | None = None
        self._running = True
        self._thread = threading.Thread(target=self._loop, name="tokenloom-masks", daemon=True)
        self._thread.start()
        self._cpu_clock = _thread_cpu_clock(self._thread)

    def submit(self, constraint: LogitMask, token: int | None, spent_before: float) -> MaskTask:
        task = MaskTask(constraint, token, spent_before)
        with self._cond:
            self._queue.append(task)
            self._cond.notify()
        return task

    def overdue(self, now: float | None = None) -> MaskTask | None:
        """The task being computed if it is over budget: stopped (MaskTimeout raised in the worker) and
        marked `timed_out`. The caller ends its request.

        Budgets count the worker's CPU time, so a busy machine does not fail a schema that is merely
        waiting for the CPU; a wall-clock limit of WALL_FACTOR times the budget still bounds the wait."""
        now = time.perf_counter() if now is None else now
        with self._cond:
            task = self._current
            if task is None or task.killed or not task.started:
                return None
            if task.abandoned:  # its request ended (a client gone mid-schema): stop it now, answer nobody
                task.killed = True
                _raise_in_thread(self._thread, MaskTimeout)
                return None
            running = self._cpu_now() - task.cpu_started
            waited = now - task.started
            b = self.budget
            if (
                running <= b.per_mask
                and task.spent_before + running <= b.per_request
                and waited <= WALL_FACTOR * b.per_mask
            ):
                return None
            task.killed = task.timed_out = True
            task.error = self._timeout_message(task, running)
            _raise_in_thread(self._thread, MaskTimeout)
            return task

    def close(self) -> None:
        with self._cond:
            self._running = False
            for task in self._queue:
                task.abandoned = True
            self._queue.clear()
            self._cond.notify()

    def _cpu_now(self) -> float:
        return time.clock_gettime(self._cpu_clock) if self._cpu_clock is not None else time.perf_counter()

    def _timeout_message(self, task: MaskTask, running: float) -> str:
        b = self.budget
        if task.spent_before + running <= b.per_request:
            return (
                f"the output constraint took more than {b.per_mask:g} s to decide one token "
                "(--mask-timeout); this schema or pattern is too costly to enforce"
            )
        return (
            f"the output constraint used more than {b.per_request:g} s in total for this request "
            "(--constraint-budget); this schema or pattern is too costly to enforce"
        )

    # ---- worker thread --------------------------------------------------------------------------------
    def _loop(self) -> None:
        _yield_to_the_batch()
        while True:
            try:
                task = self._next()
                if task is None:
                    return
                self._compute(task)
            except MaskTimeout:
                # delivered after its task was over: that task was answered by the scheduler already
                with self._cond:
                    self._current = None
            except Exception:  # never let the thread die: every later mask would wait forever
                logger.exception("mask worker failed")
                with self._cond:
                    self._current = None

    def _next(self) -> MaskTask | None:
        with self._cond:
            while True:
                if not self._running:
                    return None
                while self._queue and self._queue[0].abandoned:
                    self._queue.popleft()
                if self._queue:
                    task = self._queue.popleft()
                    task.started = time.perf_counter()
                    task.cpu_started = self._cpu_now()
                    self._current = task
                    return task
                self._cond.wait()

    def _compute(self, task: MaskTask) -> None:
        try:
            if task.token is not None:
                task.constraint.advance(task.token)
            task.mask = task.constraint.allowed()
        except MaskTimeout:
            pass  # task.error was set by `overdue`
        except TokenloomError as exc:
            task.error = exc.message
        finally:
            with self._cond:
                self._current = None
                if task.killed:
                    _clear_raised(self._thread)
            task.elapsed = self._cpu_now() - task.cpu_started
            task.done = True
        self._on_ready()


WALL_FACTOR = 6  # a mask starved of CPU still ends after this many times its CPU budget, in seconds
WORKER_NICE = 10  # low CPU priority: decoding threads come first (19 cost 14% of structured-output speed)
SWITCH_INTERVAL = 0.0005  # seconds a thread waits for the GIL before asking the mask worker to drop it


def _yield_to_the_batch() -> None:
    """Keep a busy mask worker from slowing the batch: the scheduler and the event loop take the GIL back
    within half a millisecond (CPython's default is 5 ms, and the scheduler re-takes the GIL after each of
    its many llama.cpp calls), and this thread runs at the lowest CPU priority (Linux sets it per thread)."""
    sys.setswitchinterval(SWITCH_INTERVAL)
    with contextlib.suppress(AttributeError, OSError):  # not Linux, or not permitted: the interval helps
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WORKER_NICE)


def _thread_cpu_clock(thread: threading.Thread) -> int | None:
    """The CPU-time clock of `thread` (Unix), or None where there is none (then budgets are wall time)."""
    try:
        return time.pthread_getcpuclockid(thread.ident or 0)
    except (AttributeError, OSError):
        return None


def _raise_in_thread(thread: threading.Thread, exc_type: type[BaseException]) -> None:
    ident = thread.ident
    if ident is not None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(exc_type))


def _clear_raised(thread: threading.Thread) -> None:
    """Withdraw an asynchronous exception not yet delivered (its task ended first)."""
    ident = thread.ident
    if ident is not None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), None)
