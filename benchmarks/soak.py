"""Soak: mixed traffic against `--parallel 4 --queue-size 8` for a while, counting every request's fate.

Clients, all at once, each drawing its next request from a fixed-seed mix: plain and streamed chats,
streams read slowly, clients that hang up mid-stream or while still queued, bursts of 20 beyond the 12 the
server takes, malformed bodies, JSON-schema answers and forced tool calls. Every request ends as exactly
one of: completed, refused (429 with Retry-After), rejected (400 for a bad body), abandoned (the client
hung up on purpose), 5xx, or lost (accepted, then no answer within 300 s). Lost and 5xx must be 0.

    python benchmarks/soak.py [--minutes 10] [--clients 10] [--hog 0]

`--hog N` runs N busy processes beside the server (a loaded machine: the foundation's lost-request flake
was seen at load average ~8).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_serving import rss_mib
from tests.integration.server_process import ServerProcess

ANSWER_WAIT = 300.0  # an accepted request with no answer after this long is lost
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 40}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
BAD_BODIES = [
    b'{"messages": [{"role": "user", "content": "hi"}',  # cut short
    b'{"messages": [{"role": "wizard", "content": "hi"}]}',
    b'{"messages": [{"role": "user", "content": "hi"}], "temperature": NaN}',
    b'{"messages": [{"role": "user", "content": "hi"}], "max_tokens": -5}',
    b'{"messages": "not a list"}',
]


def _has_text(line: str) -> bool:
    content = '"content":"' in line and '"content":""' not in line
    return content or ('"arguments":"' in line and '"arguments":""' not in line)


def chat(text: str, max_tokens: int, **extra: object) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": text}], "max_tokens": max_tokens, **extra}


class Soak:
    def __init__(self, url: str) -> None:
        self.url = f"{url}/v1/chat/completions"
        self.fates: Counter[str] = Counter()
        self.kinds: Counter[str] = Counter()
        self.ttft: list[float] = []
        self.missing_retry_after = 0
        self.details: list[str] = []

    def record(self, kind: str, fate: str, detail: str = "") -> None:
        self.kinds[kind] += 1
        self.fates[fate] += 1
        if fate in ("lost", "5xx") and len(self.details) < 20:
            self.details.append(f"{kind}: {fate} {detail}")

    async def refused(self, kind: str, response: httpx.Response) -> None:
        """A 429: counted, then the client waits as Retry-After says (at most 2 s), as real clients do."""
        retry_after = response.headers.get("retry-after")
        if not retry_after:
            self.missing_retry_after += 1
        self.record(kind, "refused")
        await asyncio.sleep(min(float(retry_after or 1), 2.0))

    async def plain(self, client: httpx.AsyncClient, kind: str, body: dict[str, object]) -> None:
        try:
            r = await client.post(self.url, json=body, timeout=ANSWER_WAIT)
        except httpx.TimeoutException:
            self.record(kind, "lost", "no response")
            return
        if r.status_code == 200:
            ok = r.json()["usage"]["completion_tokens"] >= 0
            self.record(kind, "completed" if ok else "5xx")
        elif r.status_code == 429:
            await self.refused(kind, r)
        elif r.status_code >= 500:
            self.record(kind, "5xx", r.text[:200])
        else:
            self.record(kind, "rejected", r.text[:200])

    async def stream(
        self,
        client: httpx.AsyncClient,
        kind: str,
        body: dict[str, object],
        *,
        pause: float = 0.0,
        hang_up: int = 0,
    ) -> None:
        """A streamed chat read to its end (pausing `pause` s per chunk), or hung up on after `hang_up`
        chunks."""
        start = time.monotonic()
        chunks = 0
        try:
            async with client.stream(
                "POST", self.url, json={**body, "stream": True}, timeout=ANSWER_WAIT
            ) as r:
                if r.status_code == 429:
                    await r.aread()
                    await self.refused(kind, r)
                    return
                if r.status_code != 200:
                    text = (await r.aread()).decode(errors="replace")[:200]
                    self.record(kind, "5xx" if r.status_code >= 500 else "rejected", text)
                    return
                async for line in r.aiter_lines():
                    if not line.startswith("data: "):
                        continue
                    if line == "data: [DONE]":
                        self.record(kind, "completed")
                        return
                    if _has_text(line):
                        if chunks == 0:
                            self.ttft.append(time.monotonic() - start)  # the first output text
                        chunks += 1
                    if '"error"' in line:
                        self.record(kind, "5xx", line[:200])
                        return
                    if hang_up and chunks >= hang_up:
                        self.record(kind, "abandoned")
                        return
                    if pause:
                        await asyncio.sleep(pause)
                self.record(kind, "lost", f"stream ended without [DONE] after {chunks} chunks")
        except httpx.TimeoutException:
            self.record(kind, "lost", f"no progress after {chunks} chunks")

    async def queued_hang_up(self, client: httpx.AsyncClient) -> None:
        """Gives up after 0.3 s, usually while the request still waits for a slot."""
        try:
            r = await client.post(self.url, json=chat("Tell me about rivers.", 48), timeout=0.3)
        except httpx.TimeoutException:
            self.record("hang-up-queued", "abandoned")
            return
        if r.status_code == 429:
            await self.refused("hang-up-queued", r)
        else:
            self.record("hang-up-queued", "completed" if r.status_code == 200 else "5xx", r.text[:200])

    async def bad(self, client: httpx.AsyncClient, rng: random.Random) -> None:
        body = rng.choice(BAD_BODIES)
        r = await client.post(
            self.url, content=body, headers={"content-type": "application/json"}, timeout=60
        )
        if r.status_code >= 500:
            self.record("bad-body", "5xx", r.text[:200])
        else:
            self.record("bad-body", "rejected" if r.status_code == 400 else "5xx", r.text[:200])

    async def burst(self, client: httpx.AsyncClient) -> None:
        """20 requests at once: more than the 4 slots and 8 queue places."""
        await asyncio.gather(*(self.plain(client, "burst", chat(f"Say {i}.", 8)) for i in range(20)))

    async def one(self, client: httpx.AsyncClient, rng: random.Random) -> None:
        kind = rng.choices(
            [
                "plain",
                "stream",
                "slow-stream",
                "hang-up-stream",
                "hang-up-queued",
                "bad",
                "burst",
                "json",
                "tool",
            ],
            weights=[14, 14, 6, 8, 8, 10, 2, 8, 8],
        )[0]
        n = rng.randint(8, 64)
        if kind == "plain":
            await self.plain(client, kind, chat("Write a line about the sea.", n, temperature=0.8))
        elif kind == "stream":
            await self.stream(client, kind, chat("Count to twenty.", n))
        elif kind == "slow-stream":
            await self.stream(client, kind, chat("Tell a story.", 48, ignore_eos=True), pause=0.5)
        elif kind == "hang-up-stream":
            await self.stream(client, kind, chat("Tell a long story.", 400, ignore_eos=True), hang_up=3)
        elif kind == "hang-up-queued":
            await self.queued_hang_up(client)
        elif kind == "bad":
            await self.bad(client, rng)
        elif kind == "burst":
            await self.burst(client)
        elif kind == "json":
            fmt = {"type": "json_schema", "json_schema": {"name": "person", "schema": SCHEMA}}
            await self.plain(client, kind, chat("Invent a person.", 64, response_format=fmt))
        else:
            body = chat("Weather in Oslo?", 64, tools=TOOLS, tool_choice="required")
            if rng.random() < 0.5:
                await self.stream(client, kind, body)
            else:
                await self.plain(client, kind, body)

    async def client_loop(self, seed: int, until: float) -> None:
        rng = random.Random(seed)
        limits = httpx.Limits(max_connections=32, max_keepalive_connections=0)
        async with httpx.AsyncClient(limits=limits) as client:
            while time.monotonic() < until:
                await self.one(client, rng)


def hog(stop_at: float) -> None:
    while time.monotonic() < stop_at:
        sum(i * i for i in range(10_000))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--hog", type=int, default=0, help="busy processes beside the server")
    args = parser.parse_args()
    print(f"CPU pressure: {Path('/proc/pressure/cpu').read_text().splitlines()[0]}")
    server = ServerProcess("--parallel", "4", "--queue-size", "8", "--ctx-size", "1024").start()
    hogs: list[multiprocessing.Process] = []
    try:
        warm = httpx.post(f"{server.base_url}/chat/completions", json=chat("Hi", 4), timeout=300)
        warm.raise_for_status()
        warm = httpx.post(  # the first constrained request builds the vocabulary trie
            f"{server.base_url}/chat/completions",
            json=chat("Hi", 4, response_format={"type": "json_object"}),
            timeout=300,
        )
        assert server.proc is not None
        rss_start = rss_mib(server.proc.pid)[0]
        started = time.monotonic()
        until = started + 60 * args.minutes
        hogs = [
            multiprocessing.Process(target=hog, args=(until + 400,), daemon=True) for _ in range(args.hog)
        ]
        for h in hogs:
            h.start()
        soak = Soak(server.url)

        async def run() -> None:
            await asyncio.gather(*(soak.client_loop(seed, until) for seed in range(args.clients)))

        asyncio.run(run())
        elapsed = time.monotonic() - started
        rss_end = rss_mib(server.proc.pid)[0]
        alive = server.is_alive() and httpx.get(f"{server.url}/health", timeout=30).status_code == 200
    finally:
        for h in hogs:
            h.terminate()
        server.stop()
    total = sum(soak.fates.values())
    accepted = total - soak.fates["refused"] - soak.fates["rejected"]
    print(f"{elapsed / 60:.1f} minutes, {args.clients} clients, {args.hog} CPU hogs; {total} requests")
    print(f"by kind: {dict(sorted(soak.kinds.items()))}")
    print(f"accepted {accepted}: completed {soak.fates['completed']}, abandoned by their clients "
          f"{soak.fates['abandoned']}, lost {soak.fates['lost']}, 5xx {soak.fates['5xx']}")  # fmt: skip
    print(f"refused (429) {soak.fates['refused']} (without Retry-After: {soak.missing_retry_after}); "
          f"rejected bad bodies (400) {soak.fates['rejected']}")  # fmt: skip
    if soak.ttft:
        ordered = sorted(soak.ttft)
        p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
        print(f"TTFT of accepted streams: p50 {statistics.median(ordered):.2f} s, p99 {p99:.2f} s")
    print(f"server RSS: start {rss_start} MiB, end {rss_end} MiB (growth {rss_end - rss_start} MiB)")
    print(f"server healthy at the end: {alive}")
    for line in soak.details:
        print("  ", line)
    print(f"CPU pressure: {Path('/proc/pressure/cpu').read_text().splitlines()[0]}")
    print(json.dumps({"lost": soak.fates["lost"], "5xx": soak.fates["5xx"]}))


if __name__ == "__main__":
    main()
