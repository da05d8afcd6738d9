"""Jobs and their handles: what a caller submits to the engine and how its output comes back.

The scheduler thread calls `Job.emit`; the caller reads from the handle, in asyncio or in plain threads.
"""

from __future__ import annotations

import asyncio
import queue
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from tokenloom.engine.sampling import SamplingParams


class LogitMask(Protocol):
    """A per-request constraint on the next token (structured outputs plug in here)."""

    def allowed(self) -> Any: ...  # numpy bool mask over the vocabulary, or None when unconstrained now

    def advance(self, token_id: int) -> None: ...

    def is_accepting(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Piece:
    """Text produced by one step (complete UTF-8 characters, stop strings removed)."""

    text: str
    token_id: int


@dataclass(frozen=True, slots=True)
class Done:
    """The job ended. `error` is set when finish_reason is "error"."""

    finish_reason: str  # "stop", "length", "error", "cancelled"
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    error: str | None = None
    stop_sequence: str | None = None  # the request's stop string that ended the output, if one did
    error_code: str | None = None  # "constraint_timeout": the request's own constraint was over its budget


JobEvent = Piece | Done


@dataclass(slots=True)
class Job:
    """One generation request inside the engine."""

    job_id: str
    prompt: list[int]
    params: SamplingParams
    constraint: LogitMask | None = None
    cache_prefix_len: int = 0  # leading prompt tokens to keep in sequence 0 (system/first-message cache)
    images: dict[int, Any] = field(default_factory=dict)  # first placeholder -> media.ImageChunk
    cancelled: bool = False
    handle: JobHandle | None = None
    enqueued_at: float = 0.0
    admitted_step: int = -1  # the scheduler iteration that gave it a slot (requests admitted together)

    def emit(self, event: JobEvent, outbox: list[tuple[JobHandle, JobEvent]] | None = None) -> None:
        """Send `event` to the caller now, or add it to `outbox` for `deliver` at the end of a step."""
        if self.handle is None:
            return
        if outbox is None:
            self.handle.put(event)
        else:
            outbox.append((self.handle, event))


@dataclass(slots=True)
class JobHandle:
    """The caller's side of a job: iterate events (sync or async) and cancel."""

    job: Job
    _loop: asyncio.AbstractEventLoop | None = None
    _async_queue: asyncio.Queue[JobEvent] | None = None
    _sync_queue: queue.SimpleQueue[JobEvent] = field(default_factory=queue.SimpleQueue)
    _on_cancel: Any = None
    # Backpressure: events handed over (counted by the engine thread) and read (by the reader's thread).
    # Each counter has one writer, so their difference is a safe, if momentary, backlog.
    sent: int = 0
    taken: int = 0
    resume_at: int = 0  # reading down to this backlog wakes the engine (`_on_cancel` does that)

    @classmethod
    def for_current_loop(cls, job: Job) -> JobHandle:
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        handle = cls(job=job, _loop=loop, _async_queue=asyncio.Queue() if loop else None)
        job.handle = handle
        return handle

    def put(self, event: JobEvent) -> None:
        deliver([(self, event)])

    def cancel(self) -> None:
        """Ask the engine to stop this job; its slot or queue place is freed within one step."""
        self.job.cancelled = True
        if self._on_cancel is not None:
            self._on_cancel()

    @property
    def backlog(self) -> int:
        """Events handed to this reader and not yet read: a slow client's undelivered output."""
        return self.sent - self.taken

    def _took_one(self) -> None:
        self.taken += 1
        if self.sent - self.taken == self.resume_at and self._on_cancel is not None:
            self._on_cancel()  # the engine may have paused this job for its backlog: let it go on

    async def events(self) -> AsyncIterator[JobEvent]:
        assert self._async_queue is not None, "handle was created outside an event loop"
        while True:
            event = await self._async_queue.get()
            self._took_one()
            yield event
            if isinstance(event, Done):
                return

    def iter_events(self, timeout: float | None = None) -> Iterator[JobEvent]:
        while True:
            event = self._sync_queue.get(timeout=timeout)
            self._took_one()
            yield event
            if isinstance(event, Done):
                return


def deliver(batch: list[tuple[JobHandle, JobEvent]]) -> None:
    """Hand one step's events to their readers: one event-loop wake-up per loop, not one per event.

    On a 2-core machine every wake-up of the HTTP thread takes CPU from llama.cpp's decode threads.
    """
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[JobHandle, JobEvent]]] = {}
    for handle, event in batch:
        handle.sent += 1
        if handle._loop is not None and handle._async_queue is not None:
            by_loop.setdefault(handle._loop, []).append((handle, event))
        else:
            handle._sync_queue.put(event)
    for loop, items in by_loop.items():
        try:
            loop.call_soon_threadsafe(_put_all, items)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            for handle, _ in items:
                handle.job.cancelled = True


def _put_all(items: list[tuple[JobHandle, JobEvent]]) -> None:
    for handle, event in items:
        assert handle._async_queue is not None
        handle._async_queue.put_nowait(event)
