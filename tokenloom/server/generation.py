"""Runs one request on the engine and turns its pieces into Events through an output parser.

Also the per-request glue both endpoints share: sampling parameters and disconnect-aware waiting.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

from tokenloom.engine.jobs import Done, JobHandle, Piece
from tokenloom.engine.sampling import SamplingParams
from tokenloom.errors import EngineError, InvalidRequest
from tokenloom.events import Event, Finish, OutputParser, Usage
from tokenloom.server.metrics import Metrics
from tokenloom.server.wire import SamplingFields

T = TypeVar("T")


def sampling_params(request: SamplingFields, n_vocab: int, max_tokens: int | None) -> SamplingParams:
    """Request fields -> engine sampling; unset fields get llama-server's defaults."""
    bias: list[tuple[int, float]] = []
    for key, value in (request.logit_bias or {}).items():
        token_id = int(key)
        if token_id >= n_vocab:
            raise InvalidRequest(
                f"logit_bias names token {token_id} but the vocabulary has {n_vocab} tokens",
                param="logit_bias",
            )
        bias.append((token_id, value))
    stop = (request.stop,) if isinstance(request.stop, str) else tuple(request.stop or ())
    seed = request.seed if request.seed is not None and request.seed >= 0 else None
    return SamplingParams(
        temperature=0.8 if request.temperature is None else request.temperature,
        top_k=40 if request.top_k is None else min(request.top_k, n_vocab),
        top_p=0.95 if request.top_p is None else request.top_p,
        min_p=0.05 if request.min_p is None else request.min_p,
        repeat_penalty=1.0 if request.repeat_penalty is None else request.repeat_penalty,
        presence_penalty=request.presence_penalty or 0.0,
        frequency_penalty=request.frequency_penalty or 0.0,
        seed=seed,
        logit_bias=tuple(bias),
        max_tokens=max_tokens,
        stop=stop,
        ignore_eos=request.ignore_eos,
    )


async def events_of(
    handle: JobHandle, parser: OutputParser, metrics: Metrics, started: float
) -> AsyncIterator[Event]:
    """Engine pieces -> parser events, ending with Finish; an engine failure raises EngineError."""
    last: float | None = None
    async for item in handle.events():
        if isinstance(item, Piece):
            now = time.monotonic()
            if last is None:
                metrics.ttft.observe(now - started)
            else:
                metrics.token_latency.observe(now - last)
            last = now
            for event in parser.feed(item.text):
                yield event
        elif isinstance(item, Done):
            for event in parser.finish():
                yield event
            metrics.prompt_tokens.inc(item.prompt_tokens)
            metrics.generated_tokens.inc(item.completion_tokens)
            metrics.cached_tokens.inc(item.cached_tokens)
            if item.finish_reason == "error":
                raise EngineError(item.error or "generation failed")
            usage = Usage(item.prompt_tokens, item.completion_tokens, item.cached_tokens)
            yield Finish(item.finish_reason, usage)


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
