"""Requests the HTTP layer has received but not yet queued, so an idle engine can wait for a burst.

Several clients (or one client's parallel calls) often arrive within a few milliseconds of each other.
An idle engine that starts on the first of them prefills it alone; the others then prefill in the next
step while the first already decodes, and that step's prompt tokens hold back the first streams' second
token by a whole prefill. Knowing how many requests are still being prepared (parsed, templated,
tokenized) lets the scheduler wait for exactly those, bounded, and prefill them together; a lone request
is never delayed because nothing else is arriving. Knows nothing of HTTP or of slots.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(slots=True)
class _Arrival:
    settled: bool = False


_CURRENT: ContextVar[_Arrival | None] = ContextVar("tokenloom_arrival", default=None)


class ArrivalBoard:
    """Counts arrivals in preparation; `on_settle` is called (the engine's wake-up) whenever one ends."""

    def __init__(self, on_settle: Callable[[], None]) -> None:
        self._on_settle = on_settle
        self._lock = threading.Lock()
        self._pending = 0

    @property
    def pending(self) -> int:
        return self._pending

    @contextmanager
    def arriving(self) -> Iterator[None]:
        """Wrap one request's handling: it counts as arriving until it is queued or its handling ends."""
        arrival = _Arrival()
        with self._lock:
            self._pending += 1
        token = _CURRENT.set(arrival)
        try:
            yield
        finally:
            _CURRENT.reset(token)
            self._settle(arrival)

    def settle_current(self) -> None:
        """The request of the current context was queued (or will not be): stop waiting for it."""
        arrival = _CURRENT.get()
        if arrival is not None:
            self._settle(arrival)

    def _settle(self, arrival: _Arrival) -> None:
        with self._lock:
            if arrival.settled:
                return
            arrival.settled = True
            self._pending -= 1
        self._on_settle()
