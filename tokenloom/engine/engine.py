"""The batch engine: one llama context, N slots, one scheduler thread, one llama_decode per step.

Callers `submit` token prompts from any thread and read events from the returned handle; only the
scheduler thread touches the llama context. Knows nothing of HTTP, templates or JSON.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import llama_cpp as llama
import numpy as np

from tokenloom.engine.arrivals import ArrivalBoard
from tokenloom.engine.detok import IncrementalDetokenizer
from tokenloom.engine.jobs import Done, Job, JobEvent, JobHandle, LogitMask, Piece, deliver
from tokenloom.engine.kvcache import pick_free_slot, plan_reuse
from tokenloom.engine.masking import COSTLY_MASK, MaskBudget, MaskTask, MaskWorker
from tokenloom.engine.media import MediaProjector
from tokenloom.engine.media_tokens import is_placeholder, text_run, whole_images
from tokenloom.engine.model import LoadedModel
from tokenloom.engine.pages import anonymous_ranges, release_zeroed_pages
from tokenloom.engine.sampling import SamplingParams, StopMatcher, build_sampler, sample_from_logits
from tokenloom.engine.scheduler import BatchEntry, BatchPlan, plan_batch
from tokenloom.engine.slots import Slot, SlotState
from tokenloom.engine.vocab import Tokenizer
from tokenloom.errors import ContextOverflow, EngineError, Overloaded

logger = logging.getLogger(__name__)

SLOW_STEP_SECONDS = 0.25  # a step this long is an inter-token stall: logged (debug) with what it held
CACHE_TYPES = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q5_0": 6, "q5_1": 7, "q8_0": 8, "bf16": 30}


@dataclass(frozen=True, slots=True)
class EngineConfig:
    n_parallel: int = 4
    n_ctx_slot: int = 4096  # tokens one request may use (prompt + output)
    n_batch: int = 512
    n_threads: int | None = None
    cache_type_k: str = "f16"
    cache_type_v: str = "f16"
    max_queue: int = 16  # requests waiting for a slot beyond the N running ones
    prefix_reuse: bool = True
    deterministic: bool = False  # batch-independent logits (flash attention off) instead of speed
    max_backlog: int = 64  # undelivered events a reader may fall behind before its slot pauses
    mask_timeout: float = 5.0  # seconds one constraint mask may take before its request ends
    constraint_budget: float = 60.0  # seconds of constraint work one request may use in total
    mmproj: str | None = None  # a vision projector GGUF (--mmproj): images in prompts (engine/media.py)
    # An idle engine waits at most this long for requests still being prepared, so a burst prefills in
    # one step (engine/arrivals.py); a lone request does not wait at all.
    burst_wait: float = 0.05


def flash_attention_type(cfg: EngineConfig) -> int:
    """llama.cpp's flash-attention setting: automatic (fast) unless the logits must be batch-independent.

    The CPU flash-attention kernels accumulate differently for one row than for many, which makes a
    request's logits depend on its batch neighbours (measured: up to 0.66 apart). Without them the logits
    are bit-identical, so greedy and seeded output repeat under load; that is `deterministic`, and it
    costs decode speed (measured ~17% on one thread). A quantized V cache needs flash attention.
    """
    if cfg.cache_type_v not in ("f16", "f32", "bf16"):
        if cfg.deterministic:
            raise EngineError("deterministic mode needs an f16, bf16 or f32 V cache (--cache-type-v)")
        return int(llama.LLAMA_FLASH_ATTN_TYPE_ENABLED)
    if cfg.deterministic:
        return int(llama.LLAMA_FLASH_ATTN_TYPE_DISABLED)
    return int(llama.LLAMA_FLASH_ATTN_TYPE_AUTO)


def unified_kv(cfg: EngineConfig) -> bool:
    """One KV buffer for all sequences (llama-server's `-kvu`) unless the logits must be batch-independent.

    With a stream per sequence, llama.cpp decodes a batch in one pass only when its sequences have
    consecutive ids; slots picked for their cached prefixes rarely are, and a step then becomes several
    passes (measured: 4 streams fell from 60 to 40 tok/s once prefix reuse scattered them). One unified
    buffer decodes any set of sequences in one pass and stores a shared prefix once, but a request's
    attention then sums over cells its neighbours also use, so its logits can depend on them: the
    deterministic mode keeps a stream per sequence.
    """
    return not cfg.deterministic


@dataclass(frozen=True, slots=True)
class EngineStats:
    busy_slots: int
    queued: int
    n_slots: int
    paused_slots: int = 0  # slots waiting for a slow reader to catch up (backpressure)


class Engine:
    """Continuous batching over `n_parallel` sequences (1..N) plus sequence 0 for the message cache."""

    def __init__(self, loaded: LoadedModel, config: EngineConfig | None = None) -> None:
        self.config = config or EngineConfig()
        self.loaded = loaded
        self.tokenizer = Tokenizer(loaded)
        self.n_vocab = self.tokenizer.n_vocab
        self.vocab = self.tokenizer.vocab  # every piece, for constraint tries: built once, at start-up
        # per-token answers from those tables, not from a ctypes call each
        self._pieces, self._eog_ids = self.vocab.pieces, self.vocab.eog_ids
        self._ctx = self._create_context()
        self._memory = llama.llama_get_memory(self._ctx)
        # a unified cache reports its whole size per sequence; a request still gets one slot's share
        self.n_ctx_slot = min(self.config.n_ctx_slot, int(llama.llama_n_ctx_seq(self._ctx)))
        self._batch = llama.llama_batch_init(self.config.n_batch, 0, 1)
        self.slots = [Slot(slot_id=i, seq_id=i + 1) for i in range(self.config.n_parallel)]
        self.cache_slot = Slot(slot_id=-1, seq_id=0, is_cache=True)
        self._waiting: deque[Job] = deque()
        self._outbox: list[tuple[JobHandle, JobEvent]] = []  # this step's events, delivered together
        self._n_inflight = 0
        self._decode_seconds = 0.0  # the last llama_decode's wall time (slow-step diagnosis)
        self._cond = threading.Condition()
        self._running = True
        self.arrivals = ArrivalBoard(self._wake)
        self._steps = 0  # scheduler iterations so far (a job records the one that admitted it)
        budget = MaskBudget(self.config.mask_timeout, self.config.constraint_budget)
        self._masks = MaskWorker(self._wake, budget)
        self.media = self._load_projector()
        self._thread = threading.Thread(target=self._run, name="tokenloom-scheduler", daemon=True)
        self._thread.start()

    # ---- set-up -----------------------------------------------------------------------------------
    def _create_context(self) -> Any:
        cfg = self.config
        params = llama.llama_context_default_params()
        n_seq = cfg.n_parallel + 1
        params.n_ctx = cfg.n_ctx_slot * n_seq
        params.n_batch = cfg.n_batch
        params.n_ubatch = cfg.n_batch
        params.n_seq_max = n_seq
        threads = cfg.n_threads or max(1, min(os.cpu_count() or 1, 8))
        params.n_threads = threads
        params.n_threads_batch = threads
        params.type_k = CACHE_TYPES[cfg.cache_type_k]
        params.type_v = CACHE_TYPES[cfg.cache_type_v]
        params.swa_full = True  # sliding-window models keep every position, so prefixes stay reusable
        params.kv_unified = unified_kv(cfg)
        params.flash_attn_type = flash_attention_type(cfg)
        params.no_perf = True
        mapped_before = anonymous_ranges()
        ctx = llama.llama_init_from_model(self.loaded.model, params)
        if not ctx:
            raise EngineError("llama.cpp could not create a context (try a smaller --ctx-size)")
        release_zeroed_pages(mapped_before)  # the cleared KV cache: resident only once it holds tokens
        return ctx

    def _load_projector(self) -> MediaProjector | None:
        if self.config.mmproj is None:
            return None
        threads = self.config.n_threads or max(1, min(os.cpu_count() or 1, 8))
        return MediaProjector(self.config.mmproj, self.loaded.model, threads)

    # ---- caller side ------------------------------------------------------------------------------
    def submit(
        self,
        prompt: list[int],
        params: SamplingParams,
        *,
        constraint: LogitMask | None = None,
        cache_prefix_len: int = 0,
        job_id: str = "",
        images: dict[int, Any] | None = None,
    ) -> JobHandle:
        """Queue a generation; raises ContextOverflow or Overloaded instead of accepting what can't run."""
        if not prompt:
            raise ContextOverflow("the prompt is empty after tokenization")
        if len(prompt) >= self.n_ctx_slot:
            raise ContextOverflow(
                f"the prompt has {len(prompt)} tokens but a request may use at most {self.n_ctx_slot} "
                f"tokens (prompt + output) on this server"
            )
        job = Job(job_id=job_id, prompt=list(prompt), params=params, constraint=constraint)
        job.images = images or {}
        job.cache_prefix_len = whole_images(job.prompt, min(cache_prefix_len, len(prompt) - 1))
        job.enqueued_at = time.monotonic()
        handle = JobHandle.for_current_loop(job)
        handle._on_cancel = self._wake
        handle.resume_at = self.config.max_backlog // 2
        with self._cond:
            if not self._running:
                raise EngineError("the engine is shut down")
            if self._n_inflight >= self.config.n_parallel + self.config.max_queue:
                raise Overloaded(
                    f"all {self.config.n_parallel} slots are busy and the queue of {self.config.max_queue} "
                    "is full; retry shortly",
                    retry_after=1,
                )
            self._n_inflight += 1
            self._waiting.append(job)
            self.arrivals.settle_current()  # under `_cond` (re-entrant): the scheduler sees both at once
            self._cond.notify()
        return handle

    def stats(self) -> EngineStats:
        with self._cond:
            busy = sum(1 for s in self.slots if s.is_busy)
            limit = self.config.max_backlog
            paused = sum(
                1
                for s in self.slots
                if s.job is not None and s.job.handle is not None and s.job.handle.backlog > limit
            )
            return EngineStats(busy, len(self._waiting), len(self.slots), paused)

    def close(self) -> None:
        with self._cond:
            self._running = False
            self._cond.notify()
        self._masks.close()
        self._thread.join(timeout=10)
        if self._thread.is_alive():
            return
        if self.media is not None:
            self.media.close()
        for job in list(self._waiting):
            job.emit(Done("cancelled", len(job.prompt), 0, 0, error="server shutting down"))
        llama.llama_batch_free(self._batch)
        llama.llama_free(self._ctx)

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify()

    # ---- scheduler thread -------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._running:
                    break
                if not self._waiting and not self._has_work():
                    self._cond.wait(timeout=0.5)
                    continue
                if not self._has_work():
                    self._gather_burst()
            try:
                started, self._decode_seconds = time.perf_counter(), 0.0
                plan = self.step()
                if time.perf_counter() - started > SLOW_STEP_SECONDS:
                    self._log_slow_step(plan, time.perf_counter() - started)
                if not plan.entries and self._has_work():
                    with self._cond:  # every busy slot waits (a slow reader, a shared prefix): sleep
                        self._cond.wait(timeout=0.01)
            except Exception:  # a bug must not kill the thread silently: fail the running jobs loudly
                logger.exception("scheduler step failed")
                for slot in self._all_slots():
                    if slot.job is not None:
                        self._finish(slot, "error", error="internal engine error")
                outbox, self._outbox = self._outbox, []
                deliver(outbox)

    def _gather_burst(self) -> None:
        """Idle, with a first request queued: wait (holding `_cond`, bounded by `burst_wait`) while other
        requests are still being prepared, so they all prefill in the first step together."""
        started = time.monotonic()
        deadline = started + self.config.burst_wait
        free = len(self.slots)
        while self._running and self.arrivals.pending > 0 and len(self._waiting) < free:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._cond.wait(timeout=left)
        logger.debug(
            "first step after idle: %d queued, %d still arriving, waited %.1f ms",
            len(self._waiting),
            self.arrivals.pending,
            (time.monotonic() - started) * 1000,
        )

    def _log_slow_step(self, plan: BatchPlan, seconds: float) -> None:
        """A step that stalled every stream: was it llama_decode (CPU taken by other processes, a long
        prefill chunk) or the Python around it?"""
        decoding = sum(1 for e in plan.entries if e.wants_logits and len(e.tokens) == 1)
        logger.debug(
            "slow step: %.3f s, llama_decode %.3f s, %d tokens (%d decoding slots, %d prompt tokens)",
            seconds,
            self._decode_seconds,
            plan.n_tokens,
            decoding,
            plan.n_tokens - decoding,
        )

    def _all_slots(self) -> list[Slot]:
        return [self.cache_slot, *self.slots]

    def _has_work(self) -> bool:
        return any(s.is_busy for s in self._all_slots())

    def step(self) -> BatchPlan:
        """Admit, plan, decode once, sample: one scheduler iteration (public so tests can drive it)."""
        try:
            self._steps += 1
            self._drop_cancelled()
            self._collect_masks()
            self._admit()
            self._resume_waiting()
            if self.media is not None:
                self._evaluate_images()
            plan = plan_batch(self._all_slots(), self.config.n_batch, self.config.max_backlog)
            if self.media is not None:
                plan = _text_only(plan)
            if plan.entries:
                self._decode(plan)
        finally:
            outbox, self._outbox = self._outbox, []
            deliver(outbox)
        return plan

    def _drop_cancelled(self) -> None:
        with self._cond:
            kept = deque(j for j in self._waiting if not j.cancelled)
            dropped = [j for j in self._waiting if j.cancelled]
            self._waiting = kept
        for job in dropped:
            self._emit_done(job, Done("cancelled", len(job.prompt), 0, 0))
        for slot in self.slots:
            if slot.job is not None and slot.job.cancelled:
                self._finish(slot, "cancelled")

    def _admit(self) -> None:
        while True:
            free = [s for s in self.slots if not s.is_busy]
            with self._cond:
                if not free or not self._waiting:
                    return
                job = self._waiting.popleft()
            if job.cache_prefix_len > 0:
                self._ensure_message_cache(job)
            slot = pick_free_slot(free, job.prompt) if self.config.prefix_reuse else free[0]
            job.admitted_step = self._steps
            self._start(slot, job)

    def _ensure_message_cache(self, job: Job) -> None:
        """Sequence 0 holds the system prompt / first message; a different one replaces it."""
        cache = self.cache_slot
        prefix = job.prompt[: job.cache_prefix_len]
        if cache.cached == prefix or (cache.job is not None and cache.job.prompt == prefix):
            return
        if cache.is_busy:
            return  # filling another prefix right now; this job simply does not use the cache
        llama.llama_memory_seq_rm(self._memory, cache.seq_id, -1, -1)
        cache.cached = []
        cache.job = Job(job_id="message-cache", prompt=prefix, params=SamplingParams(), images=job.images)
        cache.job.enqueued_at = job.enqueued_at
        cache.state = SlotState.PREFILL

    def _start(self, slot: Slot, job: Job) -> None:
        slot.job = job
        slot.last_used = time.monotonic()
        slot.sampler = build_sampler(job.params, self.n_vocab)
        slot.detok = IncrementalDetokenizer()
        slot.stop = StopMatcher(job.params.stop)
        handle = slot.sampler.handle
        for token in job.prompt[-max(job.params.penalty_last_n, 0) :]:
            if not is_placeholder(token):  # an image's positions are not tokens the sampler knows
                llama.llama_sampler_accept(handle, token)
        if job.constraint is not None:  # the first mask is computed while the prompt is prefilled
            slot.mask_task = self._masks.submit(job.constraint, None, 0.0)
        self._place_prefix(slot)

    def _place_prefix(self, slot: Slot) -> None:
        """Decide how this slot's prompt prefix gets into its KV cache, and apply it (or wait)."""
        assert slot.job is not None
        if not self.config.prefix_reuse:
            self._seq_keep(slot, 0)
            slot.state = SlotState.PREFILL
            return
        plan = plan_reuse(slot, slot.job.prompt, self._all_slots())
        if plan.wait_for is not None:
            slot.state = SlotState.WAITING
            slot.wait_for, slot.wait_until = plan.wait_for, plan.wait_until
            return
        if plan.source is not None:
            mem, dst = self._memory, slot.seq_id
            llama.llama_memory_seq_rm(mem, dst, -1, -1)
            llama.llama_memory_seq_cp(mem, plan.source.seq_id, dst, -1, -1)
            llama.llama_memory_seq_rm(mem, dst, plan.copy_len, -1)
            slot.cached = plan.source.cached[: plan.copy_len]
        else:
            self._seq_keep(slot, plan.keep)
        slot.reused_tokens = plan.reused
        slot.state = SlotState.PREFILL

    def _seq_keep(self, slot: Slot, keep: int) -> None:
        if not llama.llama_memory_seq_rm(self._memory, slot.seq_id, keep, -1):
            llama.llama_memory_seq_rm(self._memory, slot.seq_id, -1, -1)
            keep = 0
        slot.cached = slot.cached[:keep]

    def _resume_waiting(self) -> None:
        for slot in self.slots:
            if slot.state is not SlotState.WAITING or slot.wait_for is None:
                continue
            leader = slot.wait_for
            still_computing = leader.state in (SlotState.PREFILL, SlotState.WAITING)
            if len(leader.cached) >= slot.wait_until or not still_computing:
                slot.wait_for = None
                self._place_prefix(slot)

    def _evaluate_images(self) -> None:
        """Each prefilling slot whose next prompt token starts an image gets that image's embeddings
        decoded into its sequence now (llama.cpp decodes them in a batch of their own)."""
        assert self.media is not None
        for slot in self._all_slots():
            if slot.state is not SlotState.PREFILL or slot.job is None:
                continue
            remaining = slot.remaining_prompt()
            if not remaining or not is_placeholder(remaining[0]):
                continue
            chunk = slot.job.images.get(remaining[0])
            n_past = len(slot.cached)
            if chunk is None or not self.media.evaluate(
                self._ctx, chunk, n_past, slot.seq_id, self.config.n_batch
            ):
                logger.error("image evaluation failed at position %d of sequence %d", n_past, slot.seq_id)
                llama.llama_memory_seq_rm(self._memory, slot.seq_id, n_past, -1)
                if slot.is_cache:
                    self._reset_cache_slot()
                else:
                    self._finish(slot, "error", error="the image could not be evaluated")
                continue
            slot.cached.extend(remaining[: chunk.n_tokens])
            if slot.is_cache and not slot.remaining_prompt():
                slot.release()

    def _decode(self, plan: BatchPlan) -> None:
        batch = self._batch
        n = 0
        logit_rows: list[tuple[Slot, int]] = []
        for entry in plan.entries:
            seq_id = entry.slot.seq_id
            for offset, token in enumerate(entry.tokens):
                batch.token[n] = token
                batch.pos[n] = entry.start_pos + offset
                batch.n_seq_id[n] = 1
                batch.seq_id[n][0] = seq_id
                batch.logits[n] = 0
                n += 1
            if entry.wants_logits:
                batch.logits[n - 1] = 1
                logit_rows.append((entry.slot, n - 1))
        batch.n_tokens = n
        started = time.perf_counter()
        rc = llama.llama_decode(self._ctx, batch)
        self._decode_seconds = time.perf_counter() - started
        if rc != 0:
            logger.error("llama_decode returned %d for %d tokens", rc, n)
            for entry in plan.entries:
                if entry.slot.is_cache:
                    self._reset_cache_slot()
                elif entry.slot.job is not None:
                    self._finish(entry.slot, "error", error=f"llama_decode failed ({rc})")
            return
        for entry in plan.entries:
            entry.slot.cached.extend(entry.tokens)
            if entry.slot.is_cache and not entry.slot.remaining_prompt():
                entry.slot.release()  # the message cache is complete; its KV stays in sequence 0
        for slot, row in logit_rows:
            if slot.job is not None:
                self._sample(slot, row)

    def _reset_cache_slot(self) -> None:
        llama.llama_memory_seq_rm(self._memory, self.cache_slot.seq_id, -1, -1)
        self.cache_slot.cached = []
        self.cache_slot.release()

    def _sample(self, slot: Slot, row: int) -> None:
        """Sample the slot's next token from batch row `row`; if its constraint mask is not ready yet, keep
        the logits and let the slot sit steps out until it is (the other slots go on)."""
        job = slot.job
        assert job is not None and slot.sampler is not None
        mask = None
        if job.constraint is not None:
            task = slot.mask_task
            assert task is not None  # asked for at the job's start and after each token
            if not task.done:
                logits = np.ctypeslib.as_array(
                    llama.llama_get_logits_ith(self._ctx, row), shape=(self.n_vocab,)
                )
                slot.held_logits = logits.copy()
                slot.state, slot.next_token = SlotState.DECODE, None
                return
            mask = self._take_mask(slot, task)
            if mask is False:
                return
        self._pick(slot, mask, row, None)

    def _take_mask(self, slot: Slot, task: MaskTask) -> Any:
        """The ready mask (None: unconstrained at this point), or False once the job was ended for it."""
        slot.mask_task = None
        slot.mask_seconds += task.elapsed
        slot.mask_costly = task.elapsed > COSTLY_MASK
        if task.error is not None:
            code = "constraint_timeout" if task.timed_out else None
            self._finish(slot, "error", error=task.error, error_code=code)
            return False
        mask = task.mask
        if mask is not None and not mask.any():
            self._finish(slot, "error", error="the output constraint allows no further token")
            return False
        return mask

    def _collect_masks(self) -> None:
        """End the request of a mask over its time budget; sample the slots whose late mask is ready."""
        overdue = self._masks.overdue()
        for slot in self.slots:
            task = slot.mask_task
            if task is None or slot.job is None:
                continue
            if overdue is not None and task is overdue:
                slot.mask_task = None
                self._finish(slot, "error", error=overdue.error, error_code="constraint_timeout")
            elif slot.held_logits is not None and task.done:
                logits, slot.held_logits = slot.held_logits, None
                mask = self._take_mask(slot, task)
                if mask is not False:
                    self._pick(slot, mask, None, logits)

    def _pick(self, slot: Slot, mask: Any, row: int | None, held: Any) -> None:
        """Choose the token (from batch row `row`, or from logits kept aside) and act on it."""
        job = slot.job
        assert job is not None and slot.sampler is not None
        logits = held
        if held is None and (mask is not None or slot.sampler.is_plain_greedy):
            logits = np.ctypeslib.as_array(llama.llama_get_logits_ith(self._ctx, row), shape=(self.n_vocab,))
        if mask is not None:
            np.copyto(logits, -np.inf, where=~mask)
        if slot.sampler.is_plain_greedy:
            # llama.cpp's sampler copies all candidates first (about 1 ms for 262k tokens); argmax suffices
            token = int(logits.argmax())
        elif held is not None:
            token = sample_from_logits(slot.sampler, held)
        else:
            token = int(llama.llama_sampler_sample(slot.sampler.handle, self._ctx, row))
        if token in self._eog_ids and not job.params.ignore_eos:
            self._finish(slot, "stop")  # a constraint allowed the end only where its output may end
            return
        slot.n_generated += 1
        assert slot.detok is not None and slot.stop is not None
        text, hit_stop = slot.stop.feed(slot.detok.feed(self._pieces[token]))
        if text:
            job.emit(Piece(text, token), self._outbox)
        if hit_stop:
            self._finish(slot, "stop", flush=False)
        elif (job.params.max_tokens is not None and slot.n_generated >= job.params.max_tokens) or len(
            slot.cached
        ) + 1 >= self.n_ctx_slot:
            self._finish(slot, "length")
        else:
            slot.next_token = token
            slot.state = SlotState.DECODE
            if job.constraint is not None:  # advanced and asked again while the next step decodes
                slot.mask_task = self._masks.submit(
                    job.constraint, token, slot.mask_seconds, slot.mask_costly
                )

    def _finish(
        self,
        slot: Slot,
        reason: str,
        *,
        error: str | None = None,
        error_code: str | None = None,
        flush: bool = True,
    ) -> None:
        job = slot.job
        if job is None:
            return
        if flush and slot.detok is not None and slot.stop is not None and reason in ("stop", "length"):
            tail, _ = slot.stop.feed(slot.detok.flush())
            tail += slot.stop.flush()
            if tail:
                job.emit(Piece(tail, -1), self._outbox)
        matched = slot.stop.matched if slot.stop is not None and reason == "stop" else None
        done = Done(
            reason,
            len(job.prompt),
            slot.n_generated,
            slot.reused_tokens,
            error=error,
            stop_sequence=matched,
            error_code=error_code,
        )
        slot.last_used = time.monotonic()
        slot.release()
        self._emit_done(job, done)

    def _emit_done(self, job: Job, done: Done) -> None:
        with self._cond:
            self._n_inflight -= 1
        job.emit(done, self._outbox)


def _text_only(plan: BatchPlan) -> BatchPlan:
    """The plan with each prompt chunk cut before its first image placeholder (images are evaluated
    apart, by `_evaluate_images`, once the text before them is in the cache)."""
    entries: list[BatchEntry] = []
    for entry in plan.entries:
        keep = text_run(entry.tokens, len(entry.tokens))
        if keep == len(entry.tokens):
            entries.append(entry)
        elif keep > 0:
            entries.append(BatchEntry(entry.slot, entry.tokens[:keep], entry.start_pos, False))
    return BatchPlan(entries)
