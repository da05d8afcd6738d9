"""The side-by-side table of the structured-output benchmark: one column per engine, one row per measure.

Knows nothing of engines or schemas beyond the tallies it is handed.
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def mask_stats(times: list[float]) -> dict[str, float]:
    """Mask µs mean/p50/p99/max and the share of steps over 1 ms."""
    return {
        "mean_us": 1e6 * statistics.fmean(times) if times else 0.0,
        "p50_us": 1e6 * _pct(times, 0.5),
        "p99_us": 1e6 * _pct(times, 0.99),
        "max_us": 1e6 * max(times, default=0.0),
        "over_1ms_pct": 100.0 * sum(t > 1e-3 for t in times) / max(len(times), 1),
        "steps": float(len(times)),
    }


def times_on(tally: Any, ids: set[str]) -> list[float]:
    """An engine's mask times on the schemas `ids` only."""
    return [t for sid, ts in tally.mask_s_by_schema.items() if sid in ids for t in ts]


def summary(tally: Any, n: int, common: set[str]) -> dict[str, Any]:
    every = [t for ts in tally.mask_s_by_schema.values() for t in ts]
    shared = times_on(tally, common)
    in_common = [s for sid, s in zip(tally.compiled_ids, tally.compile_s, strict=True) if sid in common]
    return {
        "compiled": tally.compiled,
        "schemas": n,
        "compile_timeouts": list(tally.compile_timeouts),
        "refused": n - tally.compiled - len(tally.compile_timeouts),
        "compile_ms_median": 1e3 * _pct(tally.compile_s, 0.5),
        "compile_ms_p90": 1e3 * _pct(tally.compile_s, 0.9),
        "compile_ms_common_median": 1e3 * _pct(in_common, 0.5),
        "compile_ms_common_p90": 1e3 * _pct(in_common, 0.9),
        "mask": mask_stats(every),
        "mask_common": mask_stats(shared),
        "followed": dict(tally.followed),
        "instances": dict(tally.instances),
        "generated": tally.generated,
        "finished": tally.finished,
        "invalid": tally.invalid,
        "stuck": tally.stuck,
        "timeouts": tally.timeouts,
        "worker_deaths": tally.worker_deaths,
    }


def paired(tallies: dict[str, Any], anchor: str) -> dict[str, tuple[int, dict[str, dict[str, float]]]]:
    """Per other engine: how many schemas both it and `anchor` compiled, and both engines' mask numbers
    on just those schemas (the like-for-like comparison: each engine's own mean is over the schemas it
    compiled, which differ)."""
    mine = tallies[anchor]
    out: dict[str, tuple[int, dict[str, dict[str, float]]]] = {}
    for name, tally in tallies.items():
        if name == anchor:
            continue
        both = set(mine.compiled_ids) & set(tally.compiled_ids)
        stats = {who: mask_stats(times_on(tallies[who], both)) for who in (anchor, name)}
        out[name] = (len(both), stats)
    return out


def _mask_cells(m: dict[str, float]) -> tuple[str, str]:
    return (
        f"{m['mean_us']:,.0f} / {m['p50_us']:,.1f} / {m['p99_us']:,.0f}",
        f"{m['max_us']:,.0f}; {m['over_1ms_pct']:.1f}% of {m['steps']:,.0f}",
    )


def print_report(
    set_name: str,
    n: int,
    tallies: dict[str, Any],
    args: argparse.Namespace,
    pressure: dict[str, str],
    cut: str = "",
) -> dict[str, Any]:
    """Print the table for one set (Markdown); return its numbers."""
    compiled_by = [set(t.compiled_ids) for t in tallies.values()]
    common = set.intersection(*compiled_by) if compiled_by else set()
    rows = {name: summary(t, n, common) for name, t in tallies.items()}
    order = "any order" if args.any_order else "schema order"
    print(
        f"\n== {set_name}: {n} schemas; Gemma 3 vocabulary; properties in {order}; budgets "
        f"{args.compile_seconds} s CPU per compile, {args.schema_seconds} s after it; "
        f"--random {args.random} --max-steps {args.max_steps} =="
    )
    if cut:
        print(f"RUN {cut.upper()}: the table covers only those")
    lines: list[tuple[str, Any]] = [
        ("schemas compiled", lambda r: f"{r['compiled']} / {r['schemas']}"),
        (f"compile timeouts (> {args.compile_seconds} s CPU)", lambda r: str(len(r["compile_timeouts"]))),
        ("compile refused or crashed", lambda r: str(r["refused"])),
        ("compile ms median / p90", lambda r: f"{r['compile_ms_median']:.1f} / {r['compile_ms_p90']:.1f}"),
        ("mask µs per token mean / p50 / p99", lambda r: _mask_cells(r["mask"])[0]),
        ("mask µs max; steps over 1 ms", lambda r: _mask_cells(r["mask"])[1]),
        (
            f"compile ms median / p90, {len(common)} schemas all compiled",
            lambda r: f"{r['compile_ms_common_median']:.1f} / {r['compile_ms_common_p90']:.1f}",
        ),
        (f"mask µs mean / p50 / p99, {len(common)} all compiled", lambda r: _mask_cells(r["mask_common"])[0]),
        (f"mask µs max; over 1 ms, {len(common)} all compiled", lambda r: _mask_cells(r["mask_common"])[1]),
        ("random: invalid outputs", lambda r: str(r["invalid"])),
        ("random: dead ends", lambda r: str(r["stuck"])),
        ("random: finished / generated", lambda r: f"{r['finished']} / {r['generated']}"),
    ]
    pair_lines: list[tuple[str, Any]] = []  # like for like with each peer, after the all-compiled rows
    anchor = "tokenloom" if "tokenloom" in tallies else next(iter(tallies))
    for peer, (count, stats) in (paired(tallies, anchor) if len(tallies) > 1 else {}).items():
        cells = {id(rows[who]): _mask_cells(stats[who])[0] for who in (anchor, peer)}
        rows[anchor].setdefault("mask_paired", {})[peer] = stats[anchor]
        rows[peer].setdefault("mask_paired", {})[anchor] = stats[peer]
        label = f"mask µs mean / p50 / p99, {count} compiled by {anchor} and {peer}"
        pair_lines.append((label, lambda r, cells=cells: cells.get(id(r), "")))
    after = next(i for i, (label, _) in enumerate(lines) if label.startswith("mask µs max; over 1 ms")) + 1
    lines[after:after] = pair_lines
    for form in next(iter(rows.values()))["followed"]:
        lines.append((f"followed: {form}", lambda r, f=form: "{} / {}".format(*r["followed"][f])))
    if args.all_instances:
        lines += [
            ("all valid instances followed", lambda r: "{} / {}".format(*r["instances"]["valid"])),
            ("all invalid instances refused", lambda r: "{} / {}".format(*r["instances"]["invalid"])),
        ]
    lines += [
        (f"over {args.schema_seconds} s after the compile", lambda r: str(r["timeouts"])),
        ("workers ended by the kernel or crashed", lambda r: str(r["worker_deaths"])),
    ]
    width = max(24, *(len(name) for name in rows))
    label_width = max(len(label) for label, _ in lines)
    print(f"| {'':{label_width}} |" + "".join(f" {name:>{width}} |" for name in rows))
    print(f"|{'-' * (label_width + 2)}|" + "".join(f"{'-' * (width + 1)}:|" for _ in rows))
    for label, cell in lines:
        print(f"| {label:{label_width}} |" + "".join(f" {cell(r):>{width}} |" for r in rows.values()))
    for name, r in rows.items():
        if r["compile_timeouts"]:
            print(f"{name} compile timeouts: {', '.join(r['compile_timeouts'])}")
    print(f"CPU pressure (/proc/pressure/cpu): start {pressure['start']}; end {pressure.get('end', '?')}")
    for name, tally in tallies.items():
        if tally.failures:
            # timeouts, dead ends, invalid outputs and refusals first: rejected instances are many
            notes = sorted(tally.failures, key=lambda line: "instance rejected" in line)
            print(f"{name}: {len(notes)} notes (first 40)")
            for line in notes[:40]:
                print("   ", line)
    return rows
