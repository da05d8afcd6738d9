"""How every API answers from a `Submission`: a byte stream of encoded events, or one collected body.

Each API supplies its framing (SSE `data:`, SSE with event names, NDJSON) as small functions; the
lifecycle is shared: the slot is freed when the stream ends, fails or loses its client, and a failure
after the stream started ends it with that API's error frame instead of a broken connection.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, TypeVar

from fastapi import Request
from fastapi.responses import JSONResponse, Response

from tokenloom.errors import EngineError, TokenloomError
from tokenloom.events import Event
from tokenloom.pipeline.submit import Submission

logger = logging.getLogger(__name__)
T = TypeVar("T")

UNENFORCED_HEADER = "X-Tokenloom-Unenforced"


def unenforced_headers(submission: Submission) -> dict[str, str]:
    """`X-Tokenloom-Unenforced`: so a client knows its output may break those schema keywords."""
    if not submission.unenforced:
        return {}
    return {UNENFORCED_HEADER: ", ".join(sorted(submission.unenforced))}


async def stream_frames(
    submission: Submission,
    *,
    opening: Callable[[], Iterable[bytes]],
    encode: Callable[[Event], Iterable[bytes]],
    failed: Callable[[TokenloomError], Iterable[bytes]],
    closing: Callable[[], Iterable[bytes]] = lambda: (),
    keepalive: Callable[[], Iterable[bytes]] | None = None,
    keepalive_seconds: float = 5.0,
) -> AsyncIterator[bytes]:
    """The bytes of one streamed response; the job is cancelled however the stream ends. With
    `keepalive`, its frames go out whenever no event came for `keepalive_seconds` (e.g. Anthropic's
    `ping` while a long prompt is prefilled)."""
    try:
        for frame in opening():
            yield frame
        events: AsyncIterator[Event | None] = (  # without keepalives, one generator less per token
            submission.events()
            if keepalive is None
            else _with_keepalive(submission.events(), keepalive_seconds)
        )
        async for event in events:
            for frame in encode(event) if event is not None else keepalive() if keepalive else ():
                yield frame
    except TokenloomError as exc:
        for frame in failed(exc):
            yield frame
    except Exception:  # a bug: log it, and still end the stream the way the API's clients wait for
        logger.exception("stream failed")
        for frame in failed(EngineError("internal server error")):
            yield frame
    finally:
        submission.cancel()  # no-op when finished; frees the slot when the client went away mid-stream
    for frame in closing():
        yield frame


Route = Callable[..., Awaitable[Response]]


def errors_rendered_by(render: Callable[[TokenloomError], Response]) -> Callable[[Route], Route]:
    """A route decorator for APIs whose errors have a shape of their own (Anthropic, Ollama): a
    TokenloomError the route raises is answered by `render` instead of the OpenAI error handler."""

    def decorate(route: Route) -> Route:
        @functools.wraps(route)
        async def answered(*args: Any, **kwargs: Any) -> Response:
            try:
                return await route(*args, **kwargs)
            except TokenloomError as exc:
                return render(exc)

        return answered

    return decorate


async def _with_keepalive(events: AsyncIterator[Event], seconds: float | None) -> AsyncIterator[Event | None]:
    """The events, with None whenever `seconds` pass without one (never cancels the pending read)."""
    if seconds is None:
        async for event in events:
            yield event
        return
    pending: asyncio.Future[Event] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(events))
            done, _ = await asyncio.wait({pending}, timeout=seconds)
            if not done:
                yield None
                continue
            try:
                event = pending.result()
            except StopAsyncIteration:
                return
            pending = None
            yield event
    finally:
        if pending is not None and not pending.done():
            pending.cancel()


async def collected(
    request: Request,
    submission: Submission,
    add: Callable[[Event], None],
    body: Callable[[], Any],
    headers: dict[str, str] | None = None,
) -> Response:
    """A non-streamed response: every event passed to `add`, then `body()` as JSON; 499 once the client
    went away (the job is cancelled then, and on any failure)."""

    async def run() -> Any:
        async for event in submission.events():
            add(event)
        return body()

    try:
        result = await until_done_or_disconnected(run(), request.is_disconnected, submission.cancel)
    except BaseException:
        submission.cancel()
        raise
    if result is None:
        return Response(status_code=499)
    return JSONResponse(result, headers=headers)


async def until_done_or_disconnected(
    work: Awaitable[T], is_disconnected: Callable[[], Awaitable[bool]], on_disconnect: Callable[[], None]
) -> T | None:
    """Await `work`, but give up (and call on_disconnect) as soon as the client goes away."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=0.1)
            if done:
                return task.result()
            if await is_disconnected():
                on_disconnect()
                task.cancel()
                return None
    finally:
        if not task.done():
            task.cancel()
