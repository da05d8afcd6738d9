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


JobEvent = Piece | Done


@dataclass(slots=True)
class Job:
    """One generation request inside the engine."""

    job_id: str
    prompt: list[int]
    params: SamplingParams
    constraint: LogitMask | None = None
    cache_prefix_len: int = 0  # leading prompt tokens to keep in sequence 0 (system/first-message cache)
    cancelled: bool = False
    handle: JobHandle | None = None
    enqueued_at: float = 0.0

    def emit(self, event: JobEvent) -> None:
        if self.handle is not None:
            self.handle.put(event)


@dataclass(slots=True)
class JobHandle:
    """The caller's side of a job: iterate events (sync or async) and cancel."""

    job: Job
    _loop: asyncio.AbstractEventLoop | None = None
    _async_queue: asyncio.Queue[JobEvent] | None = None
    _sync_queue: queue.SimpleQueue[JobEvent] = field(default_factory=queue.SimpleQueue)
    _on_cancel: Any = None

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
        if self._loop is not None and self._async_queue is not None:
            try:
                self._loop.call_soon_threadsafe(self._async_queue.put_nowait, event)
            except RuntimeError:  # the loop is closed: nobody is listening any more
                self.job.cancelled = True
        else:
            self._sync_queue.put(event)

    def cancel(self) -> None:
        """Ask the engine to stop this job; its slot or queue place is freed within one step."""
        self.job.cancelled = True
        if self._on_cancel is not None:
            self._on_cancel()

    async def events(self) -> AsyncIterator[JobEvent]:
        assert self._async_queue is not None, "handle was created outside an event loop"
        while True:
            event = await self._async_queue.get()
            yield event
            if isinstance(event, Done):
                return

    def iter_events(self, timeout: float | None = None) -> Iterator[JobEvent]:
        while True:
            event = self._sync_queue.get(timeout=timeout)
            yield event
            if isinstance(event, Done):
                return
