"""Constraint masks off the scheduler thread, each bounded in time.

A structured-output mask can cost microseconds or, for a hostile schema, minutes. Computing it on the
scheduler thread between decode steps would stop every stream on the server while it runs. So a slot's
next mask is asked for as soon as its token is sampled, and one worker thread computes it while the batch
decodes (`llama_decode` releases the GIL). A slot whose mask is late sits steps out, keeping its logits,
while the others go on.

The worker shares the CPU with the decoding threads, so it runs at a low priority (nice 10), and costly
constraint work runs at idle priority (Linux's SCHED_IDLE: only CPU time nobody else wants), so a hostile
schema's masks cannot slow the other streams: a mask that has taken more than `COSTLY_MASK` seconds of
CPU finishes there, and so does the next mask of a request whose last mask was that costly. That makes
two lanes, a thread each, taking tasks in request order one at a time: the normal one and the idle one.
A thread cannot leave SCHED_IDLE without CAP_SYS_NICE, so a normal thread demoted mid-mask becomes the
idle lane's thread, and the scheduler starts a fresh normal one.

A runaway mask cannot be stopped by a flag it never reads: the scheduler raises `MaskTimeout` inside the
worker thread (CPython's asynchronous exception), which unwinds it at the next bytecode. Most of the mask
engine is compiled by mypyc, which runs no bytecode, so its loops call a plain Python function now and
then (`constrain/interpreted.py`): masking the whole hard schema set, a thread waiting for the interpreter
waited about 50 ms at most. Shared caches of the constraint code store a value only once
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
    thread: threading.Thread | None = None  # the worker thread computing it
    cpu_clock: int | None = None  # that thread's CPU-time clock (None: budgets count wall time)
    elapsed: float = 0.0  # CPU seconds it took
    done: bool = False
    mask: Any = None
    error: str | None = None
    abandoned: bool = False  # the request ended; nobody wants the result
    killed: bool = False  # MaskTimeout was raised in the worker for it
    timed_out: bool = False  # killed for its budget (not because its request ended)
    costly: bool = False  # the request's last mask was over COSTLY_MASK: computed in the idle lane
    demoted: bool = False  # its thread runs at idle priority


class MaskWorker:
    """Masks computed in request order, one at a time, by the normal lane's thread or (costly ones) the
    idle lane's; `on_ready` is called after each one."""

    def __init__(self, on_ready: Callable[[], None], budget: MaskBudget | None = None) -> None:
        self.budget = budget or MaskBudget()
        self._on_ready = on_ready
        self._queue: deque[MaskTask] = deque()
        self._cond = threading.Condition()
        self._current: MaskTask | None = None
        self._running = True
        self._idle: threading.Thread | None = None  # started when first needed
        with self._cond:  # a lane's thread checks that it is one before it takes a task
            self._normal: threading.Thread = self._start_thread(idle=False)

    def submit(
        self, constraint: LogitMask, token: int | None, spent_before: float, costly: bool = False
    ) -> MaskTask:
        """Queue a task; `costly` (the last mask of its request took over COSTLY_MASK): the idle lane."""
        task = MaskTask(constraint, token, spent_before, costly=costly)
        with self._cond:
            if costly and self._idle is None:
                self._idle = self._start_thread(idle=True)
            self._queue.append(task)
            self._cond.notify_all()
        return task

    def overdue(self, now: float | None = None) -> MaskTask | None:
        """The task being computed if it is over budget: stopped (MaskTimeout raised in the worker) and
        marked `timed_out`. The caller ends its request.

        Budgets count the worker's CPU time, so a busy machine does not fail a schema that is merely
        waiting for the CPU; a wall-clock limit of WALL_FACTOR times the budget still bounds the wait.
        A task over COSTLY_MASK is demoted to idle priority here."""
        now = time.perf_counter() if now is None else now
        with self._cond:
            task = self._current
            if task is None or task.killed or not task.started:
                return None
            if task.abandoned:  # its request ended (a client gone mid-schema): stop it now, answer nobody
                task.killed = True
                _raise_in_thread(task.thread, MaskTimeout)
                return None
            running = _cpu_time(task.cpu_clock) - task.cpu_started
            waited = now - task.started
            if running > COSTLY_MASK and not task.demoted and task.thread is self._normal:
                self._demote(task)
            b = self.budget
            if (
                running <= b.per_mask
                and task.spent_before + running <= b.per_request
                and waited <= WALL_FACTOR * b.per_mask
            ):
                return None
            task.killed = task.timed_out = True
            task.error = self._timeout_message(task, running)
            _raise_in_thread(task.thread, MaskTimeout)
            return task

    def close(self) -> None:
        with self._cond:
            self._running = False
            for task in self._queue:
                task.abandoned = True
            self._queue.clear()
            self._cond.notify_all()

    def _start_thread(self, idle: bool) -> threading.Thread:
        """A worker thread for a lane; called from a thread of normal priority, whose policy it inherits."""
        name = "tokenloom-masks-idle" if idle else "tokenloom-masks"
        thread = threading.Thread(target=self._loop, args=(idle,), name=name, daemon=True)
        thread.start()
        return thread

    def _demote(self, task: MaskTask) -> None:
        """Finish `task` at idle priority: its thread becomes the idle lane's (the one before retires) and
        a fresh thread takes the normal lane. Called with `_cond` held, on the scheduler thread."""
        assert task.thread is not None
        if not _to_idle_priority(task.thread):
            return
        task.demoted = True
        self._idle = task.thread
        self._normal = self._start_thread(idle=False)
        self._cond.notify_all()

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
    def _loop(self, idle: bool) -> None:
        _yield_to_the_batch()
        me = threading.current_thread()
        if idle:
            _to_idle_priority(me)
        clock = _thread_cpu_clock(me)
        while True:
            try:
                task = self._next(me, clock)
                if task is None:
                    return
                self._compute(task)
            except MaskTimeout:
                # delivered after its task was over: that task was answered by the scheduler already
                self._forget_current(me)
            except Exception:  # never let the thread die: every later mask would wait forever
                logger.exception("mask worker failed")
                self._forget_current(me)

    def _forget_current(self, me: threading.Thread) -> None:
        with self._cond:
            if self._current is not None and self._current.thread is me:
                self._current = None
                self._cond.notify_all()

    def _next(self, me: threading.Thread, clock: int | None) -> MaskTask | None:
        """The next task of `me`'s lane, once no other thread computes one; None once `me` retires."""
        with self._cond:
            while True:
                if not self._running or (me is not self._normal and me is not self._idle):
                    return None
                while self._queue and self._queue[0].abandoned:
                    self._queue.popleft()
                if self._queue and self._current is None and self._lane_of(self._queue[0]) is me:
                    task = self._queue.popleft()
                    task.thread, task.cpu_clock = me, clock
                    task.demoted = me is self._idle
                    task.started = time.perf_counter()
                    task.cpu_started = _cpu_time(clock)
                    self._current = task
                    return task
                self._cond.wait()

    def _lane_of(self, task: MaskTask) -> threading.Thread:
        return self._idle if task.costly and self._idle is not None else self._normal

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
                    _clear_raised(task.thread)
                self._cond.notify_all()  # a successor thread may be waiting for this one to finish
            task.elapsed = _cpu_time(task.cpu_clock) - task.cpu_started
            task.done = True
        self._on_ready()


WALL_FACTOR = 6  # a mask starved of CPU still ends after this many times its CPU budget, in seconds
WORKER_NICE = 10  # low CPU priority: decoding threads come first (19 cost 14% of structured-output speed)
# CPU seconds after which a mask finishes at idle priority. Not every mask: at idle priority 4 structured
# streams beside 3 plain ones lost 25% of their speed, their masks waiting out each decode.
COSTLY_MASK = 0.02
SWITCH_INTERVAL = 0.0005  # seconds a thread waits for the GIL before asking the mask worker to drop it


def _yield_to_the_batch() -> None:
    """Keep a busy mask worker from slowing the batch: the scheduler and the event loop take the GIL back
    within half a millisecond (CPython's default is 5 ms, and the scheduler re-takes the GIL after each of
    its many llama.cpp calls), and this thread runs at the lowest CPU priority (Linux sets it per thread)."""
    sys.setswitchinterval(SWITCH_INTERVAL)
    with contextlib.suppress(AttributeError, OSError):  # not Linux, or not permitted: the interval helps
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WORKER_NICE)


def _to_idle_priority(thread: threading.Thread) -> bool:
    """Put `thread` at SCHED_IDLE (Linux); False where that cannot be done (then nice 10 is all there is)."""
    try:
        os.sched_setscheduler(thread.native_id or 0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        return False
    return True


def _cpu_time(clock: int | None) -> float:
    return time.clock_gettime(clock) if clock is not None else time.perf_counter()


def _thread_cpu_clock(thread: threading.Thread) -> int | None:
    """The CPU-time clock of `thread` (Unix), or None where there is none (then budgets are wall time)."""
    try:
        return time.pthread_getcpuclockid(thread.ident or 0)
    except (AttributeError, OSError):
        return None


def _raise_in_thread(thread: threading.Thread | None, exc_type: type[BaseException]) -> None:
    ident = thread.ident if thread is not None else None
    if ident is not None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(exc_type))


def _clear_raised(thread: threading.Thread | None) -> None:
    """Withdraw an asynchronous exception not yet delivered (its task ended first)."""
    ident = thread.ident if thread is not None else None
    if ident is not None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), None)
