"""Batch planning: which tokens of which slots go into the next llama_decode.

A plan is plain data: decoding slots first (one token each), then prompt chunks with what budget is left,
so a long prompt never stalls the slots that are already generating.
"""

from __future__ import annotations

from dataclasses import dataclass

from tokenloom.engine.slots import Slot, SlotState


@dataclass(frozen=True, slots=True)
class BatchEntry:
    """Tokens of one slot at consecutive positions from `start_pos`; logits for the last one if asked."""

    slot: Slot
    tokens: list[int]
    start_pos: int
    wants_logits: bool


@dataclass(frozen=True, slots=True)
class BatchPlan:
    entries: list[BatchEntry]

    @property
    def n_tokens(self) -> int:
        return sum(len(e.tokens) for e in self.entries)


def plan_batch(slots: list[Slot], n_batch: int, max_backlog: int | None = None) -> BatchPlan:
    """One step's batch: every decoding slot's next token, then prefill chunks oldest job first.

    A decoding slot whose reader has more than `max_backlog` undelivered events sits this step out (it
    keeps its place and its cache): a slow client never makes the server buffer without bound.
    """
    entries: list[BatchEntry] = []
    budget = n_batch
    for slot in slots:
        if max_backlog is not None and _reader_behind(slot, max_backlog):
            continue
        if slot.state is SlotState.DECODE and slot.next_token is not None and budget > 0:
            entries.append(BatchEntry(slot, [slot.next_token], len(slot.cached), True))
            budget -= 1
    prefilling = [s for s in slots if s.state is SlotState.PREFILL and s.job is not None]
    prefilling.sort(key=lambda s: (not s.is_cache, s.job.enqueued_at if s.job else 0.0))
    for slot in prefilling:
        if budget <= 0:
            break
        remaining = slot.remaining_prompt()
        chunk = remaining[:budget]
        if not chunk:
            continue
        finishes_prompt = len(chunk) == len(remaining)
        entries.append(BatchEntry(slot, chunk, len(slot.cached), finishes_prompt and not slot.is_cache))
        budget -= len(chunk)
    return BatchPlan(entries)


def _reader_behind(slot: Slot, max_backlog: int) -> bool:
    handle = slot.job.handle if slot.job is not None else None
    return handle is not None and handle.backlog > max_backlog
