"""Backpressure: three normal streams, alone and then beside one client that reads a chunk per second.

The slow client's slot pauses once it is `--stream-backlog` events behind (after the kernel's socket
buffers fill: the benchmark waits for the `tokenloom_paused_slots` gauge), so the others' throughput
should not depend on it. Both runs in one process, alternating.

    python benchmarks/bench_backpressure.py [--repeat 3] [--stream-backlog 64]
"""

from __future__ import annotations

import argparse
import json
import socket
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


def paused_slots(url: str) -> float:
    for line in httpx.get(f"{url}/metrics", timeout=30).text.splitlines():
        if line.startswith("tokenloom_paused_slots "):
            return float(line.split()[1])
    return 0.0


def slow_reader(port: int, stop: threading.Event) -> int:
    """Streams a long completion but reads one small chunk (256 bytes) a second, as a client on a slow
    link would; returns the bytes it read."""
    body = json.dumps({"prompt": "Write a very long story.", "max_tokens": 3900, "ignore_eos": True,
                       "stream": True}).encode()  # fmt: skip
    head = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    head += f"Content-Length: {len(body)}\r\n\r\n"
    received = 0
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        sock.sendall(head.encode() + body)
        while not stop.wait(1.0):
            chunk = sock.recv(256)
            if not chunk:
                break
            received += len(chunk)
    return received


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
    waited: list[bool] = []
    try:
        for _ in range(args.repeat):
            alone.append(streams(server.url, 3, 128)["tok_s"])
            stop = threading.Event()
            with ThreadPoolExecutor(1) as pool:
                slow = pool.submit(slow_reader, server.port, stop)
                # the socket buffers between server and client take a few hundred KB first; once they
                # are full, the slow client's slot pauses (as llama-server's would block on its socket)
                deadline = time.monotonic() + 180
                while paused_slots(server.url) < 1 and time.monotonic() < deadline:
                    time.sleep(1.0)
                waited.append(paused_slots(server.url) >= 1)
                beside.append(streams(server.url, 3, 128)["tok_s"])
                stop.set()
                slow.result()
    finally:
        server.stop()
    a, b = statistics.median(alone), statistics.median(beside)
    print(f"3 streams alone:                   {alone} tok/s, median {a:.1f}")
    print(f"3 streams beside a slow reader:    {beside} tok/s, median {b:.1f}")
    print(f"ratio (beside / alone):            {b / a:.2f}")
    print(f"slow client's slot paused before each measurement: {waited}")


if __name__ == "__main__":
    main()
