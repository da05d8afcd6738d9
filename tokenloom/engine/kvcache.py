"""KV-cache reuse planning: which sequence a new job copies its prompt prefix from, if any.

Pure decisions over token lists; the engine applies them with llama_memory_seq_* calls.
"""

from __future__ import annotations

from dataclasses import dataclass

from tokenloom.engine.media_tokens import whole_images
from tokenloom.engine.slots import Slot, SlotState, common_prefix_len

MIN_COPY_GAIN = 16  # copying a whole sequence costs a memcpy; below this many tokens prefill is as cheap
MIN_WAIT_GAIN = 32  # wait for another sequence to compute a shared prefix only when it saves this much


@dataclass(frozen=True, slots=True)
class ReusePlan:
    """How a slot gets the start of a prompt into its KV cache."""

    keep: int  # tokens to keep from the slot's own cache (when source is None)
    source: Slot | None = None  # copy this sequence, then trim to `copy_len`
    copy_len: int = 0
    wait_for: Slot | None = None  # or wait until this sequence has computed `wait_until` tokens
    wait_until: int = 0

    @property
    def reused(self) -> int:
        return self.copy_len if self.source is not None else self.keep


def plan_reuse(slot: Slot, prompt: list[int], others: list[Slot]) -> ReusePlan:
    """Pick the cheapest way to get `prompt`'s prefix: own cache, a copy, or waiting for a leader.

    At least the last prompt token is always decoded again, since its logits start generation; a prefix
    never ends inside an image (its embeddings are decoded together).
    """
    limit = len(prompt) - 1
    own = whole_images(prompt, min(common_prefix_len(slot.cached, prompt), limit))
    best_len, best_src = own, None
    best_wait, wait_src = own, None
    for other in others:
        if other is slot:
            continue
        computed = whole_images(prompt, min(common_prefix_len(other.cached, prompt), limit))
        if computed > best_len:
            best_len, best_src = computed, other
        # a sequence still prefilling a prompt that shares more than it has computed so far
        if (
            other.state in (SlotState.PREFILL, SlotState.WAITING)
            and other.job is not None
            and not _waits_on(other, slot)
        ):
            shared = whole_images(prompt, min(common_prefix_len(other.job.prompt, prompt), limit))
            if shared > best_wait:
                best_wait, wait_src = shared, other
    if wait_src is not None and best_wait >= max(best_len, own) + MIN_WAIT_GAIN:
        return ReusePlan(keep=own, wait_for=wait_src, wait_until=best_wait)
    if best_src is not None and best_len >= own + MIN_COPY_GAIN:
        return ReusePlan(keep=0, source=best_src, copy_len=best_len)
    return ReusePlan(keep=own)


def _waits_on(other: Slot, slot: Slot) -> bool:
    """Does `other` wait (through any chain of waiters) for `slot`? Waiting for it then would be a cycle
    in which neither ever computes: two requests accepted and never answered."""
    seen: set[int] = set()
    leader = other.wait_for if other.state is SlotState.WAITING else None
    while leader is not None and id(leader) not in seen:
        if leader is slot:
            return True
        seen.add(id(leader))
        leader = leader.wait_for if leader.state is SlotState.WAITING else None
    return False


def pick_free_slot(free: list[Slot], prompt: list[int]) -> Slot:
    """The free slot whose cache shares the most with `prompt`; ties go to the least recently used."""
    return max(free, key=lambda s: (common_prefix_len(s.cached, prompt), -s.last_used))
