"""Per-request sampling: parameters, llama.cpp sampler chains, and stop strings across token boundaries."""

from __future__ import annotations

import ctypes
import random
from dataclasses import dataclass, field
from typing import Any

import llama_cpp as llama
import numpy as np
import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class SamplingParams:
    """What a request asks of the sampler; ranges are checked at the HTTP edge before they get here."""

    temperature: float = 1.0  # 0 = greedy
    top_k: int = 0  # 0 = off
    top_p: float = 1.0
    min_p: float = 0.0
    repeat_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    penalty_last_n: int = 64
    seed: int | None = None
    logit_bias: tuple[tuple[int, float], ...] = ()
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    ignore_eos: bool = False

    @property
    def is_greedy(self) -> bool:
        return self.temperature <= 0.0


@dataclass(slots=True)
class SamplerChain:
    """A llama.cpp sampler chain owned by one slot for one request."""

    handle: Any
    seed: int
    is_plain_greedy: bool = False  # argmax of the raw logits: numpy does it without copying candidates

    def free(self) -> None:
        if self.handle is not None:
            llama.llama_sampler_free(self.handle)
            self.handle = None


def build_sampler(params: SamplingParams, n_vocab: int) -> SamplerChain:
    """The chain llama.cpp's own server builds: bias, penalties, top-k, top-p, min-p, temperature, draw."""
    chain_params = llama.llama_sampler_chain_default_params()
    chain_params.no_perf = True
    chain = llama.llama_sampler_chain_init(chain_params)
    add = llama.llama_sampler_chain_add
    if params.logit_bias:
        biases = (llama.llama_logit_bias * len(params.logit_bias))()
        for i, (token_id, bias) in enumerate(params.logit_bias):
            biases[i].token = token_id  # type: ignore[assignment]  # ctypes field
            biases[i].bias = bias
        add(chain, llama.llama_sampler_init_logit_bias(n_vocab, len(params.logit_bias), biases))
    has_penalties = params.repeat_penalty != 1.0 or bool(params.presence_penalty or params.frequency_penalty)
    if has_penalties:
        add(
            chain,
            llama.llama_sampler_init_penalties(
                params.penalty_last_n,
                params.repeat_penalty,
                params.frequency_penalty,
                params.presence_penalty,
            ),
        )
    seed = params.seed if params.seed is not None else random.getrandbits(32)
    if params.is_greedy:
        add(chain, llama.llama_sampler_init_greedy())
    else:
        if params.top_k > 0:
            add(chain, llama.llama_sampler_init_top_k(params.top_k))
        if params.top_p < 1.0:
            add(chain, llama.llama_sampler_init_top_p(params.top_p, 1))
        if params.min_p > 0.0:
            add(chain, llama.llama_sampler_init_min_p(params.min_p, 1))
        add(chain, llama.llama_sampler_init_temp(params.temperature))
        add(chain, llama.llama_sampler_init_dist(seed & 0xFFFFFFFF))
    plain = params.is_greedy and not params.logit_bias and not has_penalties
    return SamplerChain(handle=chain, seed=seed, is_plain_greedy=plain)


_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


def sample_from_logits(chain: SamplerChain, logits: npt.NDArray[np.float32]) -> int:
    """Draw from logits kept aside (not the context's current ones) with a slot's chain, exactly as
    `llama_sampler_sample` does from the context: every candidate in id order, then accept."""
    candidates = np.zeros(len(logits), dtype=_TOKEN_DATA)
    candidates["id"] = np.arange(len(logits), dtype=np.int32)
    candidates["logit"] = logits
    array = llama.llama_token_data_array(
        data=candidates.ctypes.data_as(ctypes.POINTER(llama.llama_token_data)),
        size=len(logits),
        selected=-1,
        sorted=False,
    )
    llama.llama_sampler_apply(chain.handle, ctypes.byref(array))
    token = int(array.data[array.selected].id)
    llama.llama_sampler_accept(chain.handle, token)
    return token


@dataclass(slots=True)
class StopMatcher:
    """Finds stop strings in streamed text, holding back text that may still become one."""

    stops: tuple[str, ...]
    _pending: str = field(default="")
    matched: str | None = None  # the stop string that ended the output (Anthropic reports it)

    def feed(self, text: str) -> tuple[str, bool]:
        """Returns (text safe to emit, whether a stop string was found). The stop itself is never emitted."""
        if not self.stops:
            return text, False
        self._pending += text
        first = -1
        for stop in self.stops:
            index = self._pending.find(stop)
            if index >= 0 and (first < 0 or index < first):
                first, self.matched = index, stop
        if first >= 0:
            out = self._pending[:first]
            self._pending = ""
            return out, True
        keep = _held_back(self._pending, self.stops)
        cut = len(self._pending) - keep
        out, self._pending = self._pending[:cut], self._pending[cut:]
        return out, False

    def flush(self) -> str:
        out, self._pending = self._pending, ""
        return out


def _held_back(text: str, stops: tuple[str, ...]) -> int:
    """How many characters at the end of `text` could still grow into one of `stops` (held back until
    the next piece tells); stop strings are short, so trying each suffix length is cheap."""
    longest = min(len(text), max((len(stop) for stop in stops), default=1) - 1)
    for size in range(longest, 0, -1):
        tail = text[-size:]
        if any(stop.startswith(tail) for stop in stops):
            return size
    return 0
