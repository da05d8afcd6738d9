"""Embeddings per second for 256 short inputs: tokenloom's server at request batch sizes 1, 16 and 64,
beside llama-cpp-python's `Llama(embedding=True).embed`, one input at a time, in the same run.

    python benchmarks/bench_embeddings.py [--repeat 2] [--engine]

`--engine` adds tokenloom's embedding context in-process at 16 inputs a decode, with and without the
vocabulary projection skipped (engine/embed_tap.py), to show what that projection costs. Each rate is
printed as it is measured (a loaded machine makes a run long).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.server_process import ServerProcess
from tokenloom.engine.model import default_model_path

INPUTS = [f"Sentence number {i}: the quick brown fox jumps over the lazy dog." for i in range(256)]


def server_rate(url: str, batch: int) -> float:
    start = time.perf_counter()
    with httpx.Client(timeout=600) as client:
        for i in range(0, len(INPUTS), batch):
            response = client.post(f"{url}/v1/embeddings", json={"input": INPUTS[i : i + batch]})
            response.raise_for_status()
    return len(INPUTS) / (time.perf_counter() - start)


def peer_rate(model: object) -> float:
    start = time.perf_counter()
    for text in INPUTS:
        model.embed(text)  # type: ignore[attr-defined]
    return len(INPUTS) / (time.perf_counter() - start)


def engine_rate(embedder: object, inputs: list[list[int]]) -> float:
    start = time.perf_counter()
    for i in range(0, len(inputs), 16):
        embedder.submit(inputs[i : i + 16]).result.result()  # type: ignore[attr-defined]
    return len(inputs) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--engine", action="store_true", help="also the in-process embedding context")
    args = parser.parse_args()
    from llama_cpp import Llama

    print(f"CPU pressure: {Path('/proc/pressure/cpu').read_text().splitlines()[0]}; load {os.getloadavg()}")
    server = ServerProcess("--parallel", "1", "--threads", str(args.threads)).start()
    peer = Llama(
        model_path=str(default_model_path()),
        embedding=True,
        pooling_type=1,  # mean, as tokenloom uses for this model
        n_ctx=2048,
        n_threads=args.threads,
        verbose=False,
    )
    rates: dict[str, list[float]] = {}

    def note(name: str, rate: float) -> None:
        rates.setdefault(name, []).append(rate)
        print(f"  {name}: {rate:.2f} inputs/s", flush=True)

    engines = _engines(args.threads) if args.engine else {}
    try:
        server_rate(server.url, 16)  # warm-up: the embedding context is made by the first request
        for _ in range(args.repeat):  # interleaved, so both see the same machine load
            for batch in (1, 16, 64):
                note(f"tokenloom batch {batch}", server_rate(server.url, batch))
            note("llama-cpp-python embed, one at a time", peer_rate(peer))
            for name, (embedder, inputs) in engines.items():
                note(name, engine_rate(embedder, inputs))
    finally:
        server.stop()
        for embedder, _ in engines.values():
            embedder.close()  # type: ignore[attr-defined]
    one_at_a_time = max(rates["llama-cpp-python embed, one at a time"])
    print(f"{'path':<42}{'inputs/s (best)':>16}{'vs one at a time':>18}")
    for name, values in rates.items():
        print(f"{name:<42}{max(values):>16.2f}{max(values) / one_at_a_time:>17.2f}x")


def _engines(threads: int) -> dict[str, tuple[object, list[list[int]]]]:
    from tokenloom.engine.embed import EmbedConfig, Embedder
    from tokenloom.engine.model import load_model
    from tokenloom.engine.vocab import Tokenizer

    loaded = load_model(None)
    tokenizer = Tokenizer(loaded)
    inputs = [tokenizer.tokenize(text, add_bos=True, parse_special=False) for text in INPUTS]
    out: dict[str, tuple[object, list[list[int]]]] = {}
    for skip in (True, False):
        name = "engine 16/decode, " + ("projection skipped" if skip else "projection computed")
        embedder = Embedder(loaded, EmbedConfig(skip_output_layer=skip, n_threads=threads))
        out[name] = (embedder, inputs)
    return out


if __name__ == "__main__":
    main()
