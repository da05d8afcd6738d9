"""Does a server slow down or grow as work accumulates on one process? Rounds side by side with llama-server.

One tokenloom process and one llama-server process (both as in bench_serving.py: 8 slots of 2,048 tokens,
128 greedy tokens per stream) get the same rounds of 1, 4 and 8 streams, interleaved stream count by stream
count so both see the same load. Each round prints both servers' tok/s, their ratio and their RSS; the end
compares each server's first and second half of the rounds. A server that leaves something behind (KV
cells, bookkeeping, allocator growth) shows it as a falling ratio or a growing RSS over the rounds; a
machine that gets busier moves both servers alike.

    LLAMA_SERVER=/path/to/llama-server python benchmarks/bench_rounds.py [--rounds 10] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_serving import pressure, rss_mib, start_llama_server, start_tokenloom, streams

STREAM_COUNTS = (1, 4, 8)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=128)
    args = parser.parse_args()
    binary = os.environ.get("LLAMA_SERVER") or shutil.which("llama-server")
    if binary is None:
        sys.exit("llama-server not found: set LLAMA_SERVER")
    ours = start_tokenloom("tokenloom", args.threads)
    theirs = start_llama_server(binary, args.threads)
    print(f"start: CPU {pressure()}; load average {os.getloadavg()}")
    rates: dict[tuple[str, int], list[float]] = {}
    try:
        for number in range(args.rounds):
            for n in STREAM_COUNTS:
                for peer in (ours, theirs):
                    rate = streams(peer.url, n, args.max_tokens)["tok_s"]
                    rates.setdefault((peer.name, n), []).append(rate)
            last = {key: values[-1] for key, values in rates.items()}
            cells = " ".join(
                f"c{n} {last[(ours.name, n)]:.1f}/{last[(theirs.name, n)]:.1f}" for n in STREAM_COUNTS
            )
            print(
                f"round {number}: tok/s tokenloom/llama-server {cells}; RSS MiB "
                f"{rss_mib(ours.pid)[0]} / {rss_mib(theirs.pid)[0]}",
                flush=True,
            )
    finally:
        for peer in (ours, theirs):
            peer.stop()  # type: ignore[operator]
    print(f"end: CPU {pressure()}; load average {os.getloadavg()}")
    half = args.rounds // 2
    for n in STREAM_COUNTS:
        a, b = rates[(ours.name, n)], rates[(theirs.name, n)]
        print(
            f"c{n}: tokenloom median {statistics.median(a):.1f} (halves {statistics.mean(a[:half]):.1f} -> "
            f"{statistics.mean(a[half:]):.1f}); llama-server median {statistics.median(b):.1f} (halves "
            f"{statistics.mean(b[:half]):.1f} -> {statistics.mean(b[half:]):.1f}); ratio of medians "
            f"{statistics.median(a) / statistics.median(b):.2f}"
        )


if __name__ == "__main__":
    main()
