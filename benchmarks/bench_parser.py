"""Auto-parser overhead while streaming: µs per output token over the round-trip corpus of the real templates.

Tokens are approximated by 4-character pieces; each piece is fed on its own (one `feed` per token), then
`finish()`. Side by side: a pass-through that only collects the pieces (harness cost) and a naive parser
that re-parses the whole output so far at every token (what "never rescan" avoids). Also prints the share
of templates whose round trip passes, per format family, with the failures and their causes.

    PYTHONPATH=. python benchmarks/bench_parser.py [--templates ../shared/templates] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from tokenloom.cli.roundtrip import Case, check_case, family, round_trip_cases
from tokenloom.parsing.analysis.analyze import analyze
from tokenloom.parsing.stream.output_parser import make_output_parser

PIECE = 4  # characters per approximate token
DEFAULT_DIR = Path(__file__).resolve().parents[1] / ".." / "shared" / "templates"


def pieces(text: str) -> list[str]:
    return [text[i : i + PIECE] for i in range(0, len(text), PIECE)]


def run_streaming(case: Case, template: str, chunks: list[str]) -> None:
    parser = make_output_parser(
        analyze(template), tools=case.tools, generation_prompt=case.generation_prompt, id_prefix="c"
    )
    for chunk in chunks:
        parser.feed(chunk)
    parser.finish()


def run_passthrough(chunks: list[str]) -> None:
    seen: list[str] = []
    for chunk in chunks:
        seen.append(chunk)
    "".join(seen)


def run_naive(case: Case, template: str, chunks: list[str]) -> None:
    text = ""
    for chunk in chunks:
        text += chunk
        parser = make_output_parser(
            analyze(template), tools=case.tools, generation_prompt=case.generation_prompt, id_prefix="c"
        )
        parser.feed(text)
        parser.finish()


def best_of(repeat: int, fn: object, *args: object) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def source_families(directory: Path) -> dict[str, str]:
    """The coarse family column of SOURCES.md, when it is there."""
    families: dict[str, str] = {}
    sources = directory / "SOURCES.md"
    if sources.exists():
        for line in sources.read_text(encoding="utf-8").splitlines():
            if m := re.match(r"\| (\S+\.jinja) \| ([\w\-]+) \|", line):
                families[m.group(1)] = m.group(2)
    return families


def main() -> None:
    args_parser = argparse.ArgumentParser()
    args_parser.add_argument("--templates", type=Path, default=DEFAULT_DIR)
    args_parser.add_argument("--repeat", type=int, default=3)
    args = args_parser.parse_args()
    sources = source_families(args.templates)
    rows: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0, 0.0, 0.0])
    passes: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_source: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    failures: list[str] = []
    for path in sorted(args.templates.glob("*.jinja")):
        template = path.read_text(encoding="utf-8")
        if analyze(template).caps.is_harmony:
            continue
        cases = round_trip_cases(template, path.name)
        if not cases:
            continue
        fam = family(template)
        ok = True
        for case in cases:
            chunks = pieces(case.output)
            row = rows[fam]
            row[0] += 1
            row[1] += len(chunks)
            row[2] += best_of(args.repeat, run_streaming, case, template, chunks)
            row[3] += best_of(args.repeat, run_passthrough, chunks)
            row[4] += best_of(1, run_naive, case, template, chunks)
            if (cause := check_case(case, template)) is not None:
                ok = False
                failures.append(f"{path.name} [{case.label}]: {cause}")
        passes[fam][0 if ok else 1] += 1
        src = sources.get(path.name, "?")
        by_source[src][0 if ok else 1] += 1

    print(f"{'family':34} {'cases':>5} {'tokens':>7} {'parser µs/tok':>14} {'passthru':>9} {'naive':>9}")
    total = [0, 0, 0.0, 0.0, 0.0]
    for fam, (n, toks, t, p, naive) in sorted(rows.items()):
        print(
            f"{fam:34} {n:5d} {toks:7d} {t / toks * 1e6:14.2f} {p / toks * 1e6:9.2f}"
            f" {naive / toks * 1e6:9.1f}"
        )
        total = [a + b for a, b in zip(total, (n, toks, t, p, naive), strict=True)]
    us = total[2] / total[1] * 1e6
    print(
        f"{'ALL':34} {int(total[0]):5d} {int(total[1]):7d} {us:14.2f} {total[3] / total[1] * 1e6:9.2f}"
        f" {total[4] / total[1] * 1e6:9.1f}"
    )
    print()
    print(f"{'round trip by detected family':34} {'pass':>5} {'fail':>5} {'share':>6}")
    for fam, (good, bad) in sorted(passes.items()):
        print(f"{fam:34} {good:5d} {bad:5d} {good / (good + bad):6.0%}")
    print()
    print(f"{'round trip by SOURCES.md family':34} {'pass':>5} {'fail':>5} {'share':>6}")
    for fam, (good, bad) in sorted(by_source.items()):
        print(f"{fam:34} {good:5d} {bad:5d} {good / (good + bad):6.0%}")
    templates_ok = sum(g for g, _ in passes.values())
    templates_all = sum(g + b for g, b in passes.values())
    print()
    for failure in failures:
        print("FAIL", failure)
    result = {
        "us_per_token": round(us, 3),
        "passthrough_us_per_token": round(total[3] / total[1] * 1e6, 3),
        "naive_rescan_us_per_token": round(total[4] / total[1] * 1e6, 3),
        "tokens": int(total[1]),
        "cases": int(total[0]),
        "piece_chars": PIECE,
        "templates_round_trip_pass": templates_ok,
        "templates_round_trip_total": templates_all,
        "round_trip_share": round(templates_ok / max(templates_all, 1), 4),
        "failures": failures,
    }
    print("RESULT_JSON " + json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
