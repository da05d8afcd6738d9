"""Batch plans and KV-reuse plans are plain data over token lists: checked without a model."""

from __future__ import annotations

from tokenloom.engine.jobs import Job
from tokenloom.engine.kvcache import MIN_COPY_GAIN, pick_free_slot, plan_reuse
from tokenloom.engine.sampling import SamplingParams
from tokenloom.engine.scheduler import plan_batch
from tokenloom.engine.slots import Slot, SlotState, common_prefix_len


def _slot(i: int, cached: list[int] | None = None, state: SlotState = SlotState.IDLE) -> Slot:
    return Slot(slot_id=i, seq_id=i + 1, cached=list(cached or []), state=state)


def _job(prompt: list[int], t: float = 0.0) -> Job:
    job = Job(job_id="j", prompt=prompt, params=SamplingParams())
    job.enqueued_at = t
    return job


def test_common_prefix_len() -> None:
    a = list(range(300))
    assert common_prefix_len(a, a) == 300
    assert common_prefix_len(a, [*a[:130], -1]) == 130
    assert common_prefix_len([], a) == 0


def test_own_cache_is_kept_and_the_last_prompt_token_is_always_decoded() -> None:
    prompt = list(range(50))
    slot = _slot(0, prompt)
    plan = plan_reuse(slot, prompt, [slot])
    assert plan.source is None and plan.keep == 49


def test_copy_from_another_sequence_when_it_saves_enough() -> None:
    prompt = list(range(100))
    slot, other = _slot(0, [1, 2, 3]), _slot(1, [*range(80), 7, 7])
    plan = plan_reuse(slot, prompt, [slot, other])
    assert plan.source is other and plan.copy_len == 80 and plan.reused == 80
    small = _slot(2, list(range(MIN_COPY_GAIN - 1)))
    assert plan_reuse(slot, prompt, [slot, small]).source is None


def test_wait_for_a_sequence_that_is_computing_the_shared_prefix() -> None:
    shared = list(range(500))
    leader = _slot(1, shared[:10], SlotState.PREFILL)
    leader.job = _job([*shared, 1000])
    follower = _slot(0)
    plan = plan_reuse(follower, [*shared, 2000], [follower, leader])
    assert plan.wait_for is leader and plan.wait_until == 500


def test_a_slot_never_waits_for_a_slot_that_waits_for_it() -> None:
    """A re-planning waiter must not pick a follower of its own: two slots waiting on each other would
    never compute, and both accepted requests would go unanswered."""
    shared = list(range(500))
    first, second, third = _slot(0, [], SlotState.WAITING), _slot(1, [], SlotState.WAITING), _slot(2)
    first.job, second.job = _job([*shared, 1]), _job([*shared, 2])
    second.wait_for = first  # second joined first, which waited for a leader that has just finished
    third.wait_for, third.state, third.job = second, SlotState.WAITING, _job([*shared, 3])
    plan = plan_reuse(first, first.job.prompt, [first, second, third])
    assert plan.wait_for is None and plan.keep == 0  # first computes the prefix itself
    outsider = _slot(3)
    assert plan_reuse(outsider, [*shared, 4], [outsider, first, second, third]).wait_for is not None


def test_free_slot_choice_prefers_shared_prefix_then_least_recent() -> None:
    a, b, c = _slot(0, [1, 2, 3]), _slot(1, [9]), _slot(2, [9])
    b.last_used, c.last_used = 5.0, 1.0
    assert pick_free_slot([a, b, c], [1, 2, 3, 4]) is a
    assert pick_free_slot([b, c], [5]) is c


def test_batch_plan_decodes_first_then_prefills_oldest_within_budget() -> None:
    decoding = _slot(0, [1, 2, 3], SlotState.DECODE)
    decoding.next_token = 42
    old, young = _slot(1, [], SlotState.PREFILL), _slot(2, [], SlotState.PREFILL)
    old.job, young.job = _job(list(range(10)), t=1.0), _job(list(range(10)), t=2.0)
    waiting = _slot(3, [], SlotState.WAITING)
    waiting.job = _job(list(range(10)))
    plan = plan_batch([young, waiting, decoding, old], n_batch=15)
    assert [(e.slot.slot_id, len(e.tokens)) for e in plan.entries] == [(0, 1), (1, 10), (2, 4)]
    assert plan.entries[0].tokens == [42] and plan.entries[0].start_pos == 3
    assert plan.entries[1].wants_logits and not plan.entries[2].wants_logits
    assert plan.n_tokens == 15


def test_a_slot_whose_reader_is_behind_sits_the_step_out() -> None:
    from tokenloom.engine.jobs import JobHandle

    behind, keeping_up = _slot(0, [1, 2], SlotState.DECODE), _slot(1, [1, 2], SlotState.DECODE)
    for slot in (behind, keeping_up):
        slot.job = _job([1, 2])
        slot.next_token = 5
        JobHandle.for_current_loop(slot.job)
    assert behind.job is not None and behind.job.handle is not None
    behind.job.handle.sent = 10  # ten events handed over, none read
    plan = plan_batch([behind, keeping_up], 512, max_backlog=8)
    assert [entry.slot for entry in plan.entries] == [keeping_up]
    behind.job.handle.taken = 6  # the reader caught up to a backlog of 4
    assert len(plan_batch([behind, keeping_up], 512, max_backlog=8).entries) == 2
