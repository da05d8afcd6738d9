"""A slot: one sequence of the shared llama context, the tokens its KV cache holds, and its current job."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from tokenloom.engine.detok import IncrementalDetokenizer
from tokenloom.engine.jobs import Job
from tokenloom.engine.sampling import SamplerChain, StopMatcher


class SlotState(enum.Enum):
    IDLE = "idle"
    WAITING = "waiting"  # its prompt shares a prefix another sequence is computing right now
    PREFILL = "prefill"
    DECODE = "decode"


@dataclass(slots=True)
class Slot:
    """One llama.cpp sequence; `cached` lists the tokens whose KV it holds at positions 0..len-1."""

    slot_id: int
    seq_id: int
    cached: list[int] = field(default_factory=list)
    state: SlotState = SlotState.IDLE
    job: Job | None = None
    last_used: float = 0.0
    # per-job progress
    reused_tokens: int = 0
    next_token: int | None = None  # sampled, not yet decoded
    n_generated: int = 0
    wait_for: Slot | None = None
    wait_until: int = 0
    sampler: SamplerChain | None = None
    detok: IncrementalDetokenizer | None = None
    stop: StopMatcher | None = None
    is_cache: bool = False  # sequence 0: the system-prompt / first-message cache
    mask_task: Any = None  # MaskTask computing this slot's next constraint mask (engine/masking.py)
    held_logits: Any = None  # logits kept while the mask is late: sampled once it is ready
    mask_seconds: float = 0.0  # constraint time this job has used
    mask_costly: bool = False  # its last mask was costly: the next one is computed at idle priority

    @property
    def is_busy(self) -> bool:
        return self.state is not SlotState.IDLE

    @property
    def n_prefilled(self) -> int:
        """How many prompt tokens of the current job are in the KV cache."""
        return len(self.cached)

    def remaining_prompt(self) -> list[int]:
        assert self.job is not None
        return self.job.prompt[len(self.cached) :]

    def release(self) -> None:
        """Drop the job; the KV cache stays for prefix reuse by later jobs."""
        if self.sampler is not None:
            self.sampler.free()
        self.job = None
        self.state = SlotState.IDLE
        self.sampler = None
        self.detok = None
        self.stop = None
        self.next_token = None
        self.wait_for = None
        self.wait_until = 0
        self.n_generated = 0
        self.reused_tokens = 0
        if self.mask_task is not None:
            self.mask_task.abandoned = True
        self.mask_task = None
        self.held_logits = None
        self.mask_seconds = 0.0
        self.mask_costly = False


def common_prefix_len(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix of two token lists."""
    limit = min(len(a), len(b))
    i = 0
    # compare in blocks first: long shared prompts are the common case
    while i + 64 <= limit and a[i : i + 64] == b[i : i + 64]:
        i += 64
    while i < limit and a[i] == b[i]:
        i += 1
    return i
