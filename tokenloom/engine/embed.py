"""Embeddings and scoring on the engine's model: a second llama context (same weights) on its own thread.

Generation keeps its context and scheduler; this one serves `/v1/embeddings` and reranking beside it, so
neither kind of request waits for the other's queue. Many inputs go into one `llama_decode` (one sequence
each) as far as the batch and the sequence count allow. Two jobs: pooled vectors (mean, CLS, last token,
or a classifier head's score with rank pooling), and the logits of chosen tokens at the last position
(the yes/no judging recipe of chat-model rerankers).
"""

from __future__ import annotations

import logging
import queue
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import llama_cpp as llama
import numpy as np

from tokenloom.engine.embed_tap import HiddenStateTap, pool_rows
from tokenloom.engine.model import LoadedModel
from tokenloom.errors import ContextOverflow, EngineError, Overloaded

logger = logging.getLogger(__name__)

POOLING = {
    "none": int(llama.LLAMA_POOLING_TYPE_NONE),
    "mean": int(llama.LLAMA_POOLING_TYPE_MEAN),
    "cls": int(llama.LLAMA_POOLING_TYPE_CLS),
    "last": int(llama.LLAMA_POOLING_TYPE_LAST),
    "rank": int(llama.LLAMA_POOLING_TYPE_RANK),
}


@dataclass(frozen=True, slots=True)
class EmbedConfig:
    # Tokens decoded together (the sum of one batch's inputs), also the longest input. llama.cpp keeps room
    # for the logits of every token of a pooled batch (computed unless embed_tap skips them), about 2 MiB
    # of memory per token with a 262k vocabulary (measured: +1.0 GiB at 512, +3.8 GiB at 2048); 512 is
    # llama-server's default too.
    n_ctx: int = 512
    n_seq: int = 16  # inputs decoded together (measured best: 8-16; more pays for attention masks)
    max_input_tokens: int = 512  # the longest single input (at most n_ctx)
    pooling: str | None = None  # None: what the GGUF says, or mean when it says nothing
    n_threads: int | None = None
    max_queue: int = 32  # jobs waiting; beyond it a 429
    flash_attention: bool = True
    skip_output_layer: bool = True  # pool from the hidden states and stop before the logits (embed_tap.py)


@dataclass(slots=True)
class _Job:
    inputs: list[list[int]]
    logit_tokens: tuple[int, ...] | None  # None: pooled vectors; else these tokens' logits at the end
    result: Future[list[np.ndarray[Any, Any]]] = field(default_factory=Future)


class Embedder:
    """Pooled vectors and last-position logits for lists of token inputs, batched, on one thread."""

    def __init__(self, loaded: LoadedModel, config: EmbedConfig | None = None) -> None:
        self.config = config or EmbedConfig()
        self.loaded = loaded
        self._tap = HiddenStateTap() if self.config.skip_output_layer else None
        self._ctx = self._create_context()
        self.pooling = int(llama.llama_pooling_type(self._ctx))
        self.n_embd = int(loaded.n_embd)
        self.n_cls_out = max(1, int(llama.llama_model_n_cls_out(loaded.model)))
        self._memory = llama.llama_get_memory(self._ctx)
        self._batch = llama.llama_batch_init(self.config.n_ctx, 0, 1)
        self._jobs: queue.Queue[_Job | None] = queue.Queue(maxsize=self.config.max_queue)
        self._thread = threading.Thread(target=self._run, name="tokenloom-embed", daemon=True)
        self._thread.start()

    def _create_context(self) -> Any:
        cfg = self.config
        params = llama.llama_context_default_params()
        params.n_ctx = cfg.n_ctx
        params.n_batch = params.n_ubatch = cfg.n_ctx  # a sequence must fit one ubatch for pooling
        params.n_seq_max = cfg.n_seq
        params.kv_unified = True
        params.embeddings = True
        params.pooling_type = (
            POOLING[cfg.pooling] if cfg.pooling else int(llama.LLAMA_POOLING_TYPE_UNSPECIFIED)
        )
        threads = cfg.n_threads or 2
        params.n_threads = params.n_threads_batch = threads
        params.no_perf = True
        if self._tap is not None:
            params.cb_eval = self._tap.callback
        params.flash_attn_type = int(llama.LLAMA_FLASH_ATTN_TYPE_AUTO) if cfg.flash_attention else 0
        ctx = llama.llama_init_from_model(self.loaded.model, params)
        if not ctx:
            raise EngineError("llama.cpp could not create the embedding context")
        if cfg.pooling is None and int(llama.llama_pooling_type(ctx)) == POOLING["none"]:
            # a chat model's GGUF names no pooling: average its last hidden states
            llama.llama_free(ctx)
            params.pooling_type = POOLING["mean"]
            ctx = llama.llama_init_from_model(self.loaded.model, params)
            if not ctx:
                raise EngineError("llama.cpp could not create the embedding context")
        return ctx

    @property
    def pooling_name(self) -> str:
        return next((name for name, value in POOLING.items() if value == self.pooling), str(self.pooling))

    # ---- caller side ------------------------------------------------------------------------------
    def check_lengths(self, inputs: list[list[int]]) -> None:
        for index, tokens in enumerate(inputs):
            if not tokens:
                raise ContextOverflow(f"input[{index}] is empty")
            if len(tokens) > self.config.max_input_tokens:
                raise ContextOverflow(
                    f"input[{index}] has {len(tokens)} tokens but an input may have at most "
                    f"{self.config.max_input_tokens}"
                )

    def submit(self, inputs: list[list[int]], logit_tokens: tuple[int, ...] | None = None) -> _Job:
        """Queue a job (raises Overloaded when the queue is full); its `result` is a Future."""
        self.check_lengths(inputs)
        job = _Job(inputs, logit_tokens)
        try:
            self._jobs.put_nowait(job)
        except queue.Full:
            raise Overloaded("too many embedding requests are waiting; retry shortly") from None
        return job

    def cancel(self, job: _Job) -> None:
        job.result.cancel()  # a job not yet started is skipped; a running one finishes its batch

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join(timeout=10)
        llama.llama_batch_free(self._batch)
        llama.llama_free(self._ctx)

    # ---- the worker thread -------------------------------------------------------------------------
    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            if not job.result.set_running_or_notify_cancel():
                continue
            try:
                job.result.set_result(self._compute(job))
            except Exception as exc:  # an engine failure ends this job, never the thread
                logger.exception("embedding job failed")
                job.result.set_exception(exc if isinstance(exc, EngineError) else EngineError(str(exc)))

    def _compute(self, job: _Job) -> list[np.ndarray[Any, Any]]:
        wanted_logits = job.logit_tokens is not None
        llama.llama_set_embeddings(self._ctx, not wanted_logits)
        out: list[np.ndarray[Any, Any]] = []
        for group in self._groups(job.inputs):
            out.extend(self._decode_group(group, job.logit_tokens))
        return out

    def _groups(self, inputs: list[list[int]]) -> list[list[list[int]]]:
        """Consecutive inputs packed into decodes of at most n_ctx tokens and n_seq sequences."""
        groups: list[list[list[int]]] = []
        current: list[list[int]] = []
        used = 0
        for tokens in inputs:
            if current and (used + len(tokens) > self.config.n_ctx or len(current) >= self.config.n_seq):
                groups.append(current)
                current, used = [], 0
            current.append(tokens)
            used += len(tokens)
        if current:
            groups.append(current)
        return groups

    def _decode_group(
        self, group: list[list[int]], logit_tokens: tuple[int, ...] | None
    ) -> list[np.ndarray[Any, Any]]:
        batch = self._batch
        n = 0
        last_rows: list[int] = []
        for seq, tokens in enumerate(group):
            for position, token in enumerate(tokens):
                batch.token[n], batch.pos[n], batch.n_seq_id[n] = token, position, 1
                batch.seq_id[n][0] = seq
                batch.logits[n] = (
                    logit_tokens is not None and position == len(tokens) - 1
                ) or logit_tokens is None
                n += 1
            last_rows.append(n - 1)
        batch.n_tokens = n
        llama.llama_memory_clear(self._memory, True)
        tapped = (
            self._tap is not None and logit_tokens is None and self.pooling_name in ("mean", "cls", "last")
        )
        if tapped:
            assert self._tap is not None
            self._tap.expect(n, self.n_embd)
        try:
            if llama.llama_decode(self._ctx, batch) != 0:
                raise EngineError("llama.cpp could not decode the embedding batch")
        finally:
            if self._tap is not None:
                self._tap.disarm()
        if tapped and self._tap is not None and self._tap.rows is not None:
            return pool_rows(self._tap.rows, [len(tokens) for tokens in group], self.pooling_name)
        results: list[np.ndarray[Any, Any]] = []
        if logit_tokens is not None:
            n_vocab = int(llama.llama_vocab_n_tokens(self.loaded.vocab))
            for row in last_rows:
                logits = np.ctypeslib.as_array(llama.llama_get_logits_ith(self._ctx, row), shape=(n_vocab,))
                results.append(np.array([logits[t] for t in logit_tokens], dtype=np.float32))
            return results
        width = self.n_cls_out if self.pooling == POOLING["rank"] else self.n_embd
        for seq in range(len(group)):
            pointer = llama.llama_get_embeddings_seq(self._ctx, seq)
            if not pointer:
                raise EngineError("llama.cpp returned no pooled embedding")
            results.append(np.ctypeslib.as_array(pointer, shape=(width,)).astype(np.float32, copy=True))
        return results
