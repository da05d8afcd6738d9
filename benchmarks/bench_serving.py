"""Serving benchmark: throughput at concurrency 1/4/8 and time to first token with a shared 1,500-token
system prompt, against the server over HTTP, and the same generation by a bare llama_cpp loop.

    python benchmarks/bench_serving.py [--max-tokens 64] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import llama_cpp as llama
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.server_process import ServerProcess
from tokenloom.engine.model import load_model
from tokenloom.engine.vocab import Tokenizer

PROMPTS = [f"Story {i}: once upon a time, in a land far away, there lived a" for i in range(8)]
N_CTX_SLOT = 2048


def server_throughput(server: ServerProcess, concurrency: int, max_tokens: int) -> float:
    def one(i: int) -> int:
        r = httpx.post(
            f"{server.base_url}/completions",
            json={"prompt": PROMPTS[i], "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True},
            timeout=600,
        )
        r.raise_for_status()
        return int(r.json()["usage"]["completion_tokens"])

    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        total = sum(pool.map(one, range(concurrency)))
    return total / (time.perf_counter() - start)


def ttft(server: ServerProcess, system: str, question: str) -> float:
    body = {
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": question}],
        "max_tokens": 2,
        "temperature": 0,
        "stream": True,
        "ignore_eos": True,
    }
    start = time.perf_counter()
    with httpx.stream("POST", f"{server.base_url}/chat/completions", json=body, timeout=600) as r:
        for line in r.iter_lines():
            if line.startswith("data: ") and '"content":"' in line and '"content":""' not in line:
                return time.perf_counter() - start
    raise RuntimeError("no content arrived")


def ttft_wave(server: ServerProcess, system: str, n: int) -> list[float]:
    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(lambda i: ttft(server, system, f"Question {i}: what next?"), range(n)))


class BareLoop:
    """The same greedy generation with nothing but llama_cpp: one llama_decode per step, numpy argmax."""

    def __init__(self) -> None:
        self.loaded = load_model()
        self.tokenizer = Tokenizer(self.loaded)
        params = llama.llama_context_default_params()
        params.n_ctx = N_CTX_SLOT * 9
        params.n_batch = params.n_ubatch = 512
        params.n_seq_max = 9
        params.swa_full = True
        params.kv_unified = False
        params.flash_attn_type = 0
        params.n_threads = params.n_threads_batch = 2
        self.ctx = llama.llama_init_from_model(self.loaded.model, params)
        self.batch = llama.llama_batch_init(512, 0, 1)

    def run(self, concurrency: int, max_tokens: int) -> float:
        ctx, batch, n_vocab = self.ctx, self.batch, self.tokenizer.n_vocab
        llama.llama_memory_clear(llama.llama_get_memory(ctx), True)
        start = time.perf_counter()
        pending = [self.tokenizer.tokenize(p, add_bos=True) for p in PROMPTS[:concurrency]]
        positions = [0] * concurrency
        generated = 0
        for _ in range(max_tokens):
            n = 0
            rows = []
            for seq, tokens in enumerate(pending):
                for i, token in enumerate(tokens):
                    batch.token[n], batch.pos[n], batch.n_seq_id[n] = token, positions[seq] + i, 1
                    batch.seq_id[n][0] = seq + 1
                    batch.logits[n] = i == len(tokens) - 1
                    n += 1
                positions[seq] += len(tokens)
                rows.append(n - 1)
            batch.n_tokens = n
            if llama.llama_decode(ctx, batch) != 0:
                raise RuntimeError("decode failed")
            for seq, row in enumerate(rows):
                logits = np.ctypeslib.as_array(llama.llama_get_logits_ith(ctx, row), shape=(n_vocab,))
                pending[seq] = [int(logits.argmax())]
                generated += 1
        return generated / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    system_a = " ".join(f"Guideline {i}: be accurate, cite nothing, and stay friendly." for i in range(120))
    system_b = " ".join(f"Policy {i}: answer in plain words and never guess facts." for i in range(120))
    results: dict[str, list[float]] = {}

    def record(name: str, value: float) -> None:
        results.setdefault(name, []).append(value)

    server = ServerProcess("--parallel", "8", "--ctx-size", str(N_CTX_SLOT), "--threads", "2").start()
    bare = BareLoop()
    try:
        # interleaved, so both sides see the same machine load; best of the repeats
        for _ in range(args.repeat):
            for c in (1, 4, 8):
                record(f"server_tok_s_c{c}", server_throughput(server, c, args.max_tokens))
                record(f"bare_tok_s_c{c}", bare.run(c, args.max_tokens))
        record("ttft_cold_s", ttft(server, system_a, "First question?"))
        record("ttft_cached_s", ttft(server, system_a, "Second question?"))
        first = ttft_wave(server, system_b, 8)
        second = ttft_wave(server, system_b, 8)
        record("ttft_wave1_mean_s", statistics.mean(first))
        record("ttft_wave1_max_s", max(first))
        record("ttft_wave2_mean_s", statistics.mean(second))
        record("ttft_wave2_max_s", max(second))
        prompt_tokens = httpx.post(
            f"{server.base_url}/chat/completions",
            json={"messages": [{"role": "system", "content": system_a}, {"role": "user", "content": "x"}],
                  "max_tokens": 1},
            timeout=600,
        ).json()["usage"]["prompt_tokens"]  # fmt: skip
    finally:
        server.stop()
    best = {k: (max(v) if "tok_s" in k else min(v)) for k, v in results.items()}
    ratio = best["server_tok_s_c8"] / best["bare_tok_s_c8"]
    print(
        f"shared system prompt: {prompt_tokens} tokens; max_tokens {args.max_tokens}; best of {args.repeat}"
    )
    print(f"{'concurrency':>12} {'server tok/s':>13} {'bare loop tok/s':>16} {'server/bare':>12}")
    for c in (1, 4, 8):
        s, b = best[f"server_tok_s_c{c}"], best[f"bare_tok_s_c{c}"]
        print(f"{c:>12} {s:>13.1f} {b:>16.1f} {s / b:>12.1%}")
    print(f"{'time to first token':<36} {'seconds':>8}")
    for key in ("ttft_cold_s", "ttft_cached_s", "ttft_wave1_mean_s", "ttft_wave1_max_s", "ttft_wave2_mean_s",
                "ttft_wave2_max_s"):  # fmt: skip
        print(f"{key:<36} {best[key]:>8.3f}")
    print("RESULT_JSON " + json.dumps({**best, "prompt_tokens": prompt_tokens, "server_over_bare_c8": ratio}))


if __name__ == "__main__":
    main()
