"""Backpressure: three normal streams, alone and then beside one client that reads a chunk per second.

The slow client's slot pauses once it is `--stream-backlog` events behind (after the kernel's socket
buffers fill), so the others' throughput should not depend on it. Both runs in one process, alternating.

    python benchmarks/bench_backpressure.py [--repeat 3] [--stream-backlog 64]
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


def slow_reader(url: str, stop: threading.Event) -> int:
    """Streams a long completion but reads one line a second; returns the lines it read."""
    body = {"prompt": "Write a very long story.", "max_tokens": 1500, "ignore_eos": True, "stream": True}
    lines = 0
    with httpx.stream("POST", f"{url}/v1/completions", json=body, timeout=900) as response:
        for _ in response.iter_lines():
            lines += 1
            if stop.wait(1.0):
                break
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--stream-backlog", type=int, default=64)
    args = parser.parse_args()
    print(f"CPU pressure: {Path('/proc/pressure/cpu').read_text().splitlines()[0]}")
    server = ServerProcess("--parallel", "4", "--threads", "2", "--stream-backlog", str(args.stream_backlog))
    server.start()
    alone: list[float] = []
    beside: list[float] = []
    try:
        for _ in range(args.repeat):
            alone.append(streams(server.url, 3, 128)["tok_s"])
            stop = threading.Event()
            with ThreadPoolExecutor(1) as pool:
                slow = pool.submit(slow_reader, server.url, stop)
                time.sleep(3.0)  # the slow client is in its slot and has filled the socket buffers
                beside.append(streams(server.url, 3, 128)["tok_s"])
                stop.set()
                slow.result()
    finally:
        server.stop()
    a, b = statistics.median(alone), statistics.median(beside)
    print(f"3 streams alone:                   {alone} tok/s, median {a:.1f}")
    print(f"3 streams beside a slow reader:    {beside} tok/s, median {b:.1f}")
    print(f"ratio (beside / alone):            {b / a:.2f}")


if __name__ == "__main__":
    main()
