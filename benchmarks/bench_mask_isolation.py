"""Mask isolation: 7 unconstrained streams alone, then beside an 8th request whose every structured-output
mask costs a large part of a second (a counted repeat of counted runs), in one process, alternating.

With masks on the scheduler thread every step of the 7 would wait for the 8th's mask; computed beside the
batch, they only share the CPU with it. Prints tok/s, the inter-token gap p99 and the ratio.

    python benchmarks/bench_mask_isolation.py [--repeat 3] [--tokens 96]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_serving import streams
from tests.integration.server_process import ServerProcess

SLOW_PATTERN = r"(?:\S{1,20}\s{1,5}){0,30}\S{1,20}"


def slow_request(url: str, stop: threading.Event, masks: list[int]) -> None:
    """A streamed constrained request, hung up on at `stop`; counts its chunks (one costly mask each)."""
    body = {
        "messages": [{"role": "user", "content": "Describe the sea."}],
        "max_tokens": 400,
        "temperature": 0,
        "stream": True,
        "response_format": {"type": "regex", "regex": SLOW_PATTERN},
    }
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=900) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if '"content":"' in line:
                masks.append(1)
            if stop.is_set():
                return


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=96)
    args = parser.parse_args()
    print(f"CPU pressure: {Path('/proc/pressure/cpu').read_text().splitlines()[0]}")
    # a generous budget: this benchmark is about a slow mask that is allowed to run
    server = ServerProcess(
        "--parallel", "8", "--threads", "2", "--mask-timeout", "60", "--constraint-budget", "3600"
    )
    server.start()
    alone: list[dict[str, float]] = []
    beside: list[dict[str, float]] = []
    masks: list[int] = []
    try:
        streams(server.url, 7, 16)  # warm-up
        for _ in range(args.repeat):
            alone.append(streams(server.url, 7, args.tokens))
            stop = threading.Event()
            with ThreadPoolExecutor(1) as pool:
                slow = pool.submit(slow_request, server.url, stop, masks)
                time.sleep(2.0)  # it is in its slot, computing masks
                beside.append(streams(server.url, 7, args.tokens))
                stop.set()
                slow.result()
    finally:
        server.stop()
    a = statistics.median(r["tok_s"] for r in alone)
    b = statistics.median(r["tok_s"] for r in beside)
    print(f"7 streams alone:                  {[round(r['tok_s'], 1) for r in alone]} tok/s, median {a:.1f}")
    print(f"7 streams beside a slow mask:     {[round(r['tok_s'], 1) for r in beside]} tok/s, median {b:.1f}")
    print(f"ratio (beside / alone):           {b / a:.2f}")
    gap_a = statistics.median(r["gap_p99_ms"] for r in alone)
    gap_b = statistics.median(r["gap_p99_ms"] for r in beside)
    print(f"inter-token gap p99, ms:          alone {gap_a:.0f}, beside {gap_b:.0f}")
    print(f"the slow request's tokens meanwhile (one costly mask each): {sum(masks)}")
    print(f"CPU pressure: {Path('/proc/pressure/cpu').read_text().splitlines()[0]}")


if __name__ == "__main__":
    main()
