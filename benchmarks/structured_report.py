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


def summary(tally: Any, n: int, common: set[str]) -> dict[str, Any]:
    every = [t for ts in tally.mask_s_by_schema.values() for t in ts]
    shared = [t for sid, ts in tally.mask_s_by_schema.items() if sid in common for t in ts]
    return {
        "compiled": tally.compiled,
        "schemas": n,
        "compile_ms_median": 1e3 * _pct(tally.compile_s, 0.5),
        "compile_ms_p90": 1e3 * _pct(tally.compile_s, 0.9),
        "mask": mask_stats(every),
        "mask_common": mask_stats(shared),
        "followed": dict(tally.followed),
        "instances": dict(tally.instances),
        "generated": tally.generated,
        "finished": tally.finished,
        "invalid": tally.invalid,
        "stuck": tally.stuck,
        "timeouts": tally.timeouts,
    }


def print_report(set_name: str, n: int, tallies: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """Print the table for one set; return its numbers."""
    compiled_by = [set(t.mask_s_by_schema) for t in tallies.values()]
    common = set.intersection(*compiled_by) if compiled_by else set()
    rows = {name: summary(t, n, common) for name, t in tallies.items()}
    order = "any order" if args.any_order else "schema order"
    print(f"\n== {set_name}: {n} schemas; Gemma 3 vocabulary; properties in {order} ==")
    lines: list[tuple[str, Any]] = [
        ("schemas compiled", lambda r: f"{r['compiled']} / {r['schemas']}"),
        ("compile ms median / p90", lambda r: f"{r['compile_ms_median']:.1f} / {r['compile_ms_p90']:.1f}"),
        ("mask µs mean / p50", lambda r: f"{r['mask']['mean_us']:,.0f} / {r['mask']['p50_us']:,.1f}"),
        ("mask µs p99 / max", lambda r: f"{r['mask']['p99_us']:,.0f} / {r['mask']['max_us']:,.0f}"),
        ("steps over 1 ms", lambda r: f"{r['mask']['over_1ms_pct']:.1f}% of {r['mask']['steps']:,.0f}"),
        (
            f"same, {len(common)} schemas all compiled",
            lambda r: (
                f"{r['mask_common']['mean_us']:,.0f} / {r['mask_common']['p50_us']:,.1f} / "
                f"{r['mask_common']['p99_us']:,.0f}"
            ),
        ),
    ]
    for form in next(iter(rows.values()))["followed"]:
        lines.append((f"followed: {form}", lambda r, f=form: "{} / {}".format(*r["followed"][f])))
    lines += [
        ("all valid instances followed", lambda r: "{} / {}".format(*r["instances"]["valid"])),
        ("all invalid instances refused", lambda r: "{} / {}".format(*r["instances"]["invalid"])),
        ("random: finished / generated", lambda r: f"{r['finished']} / {r['generated']}"),
        ("random: invalid outputs", lambda r: str(r["invalid"])),
        ("random: dead ends", lambda r: str(r["stuck"])),
        ("schemas over the time limit", lambda r: str(r["timeouts"])),
    ]
    width = max(22, *(len(name) + 2 for name in rows))
    print(f"{'':40}" + "".join(f"{name:>{width}}" for name in rows))
    for label, cell in lines:
        print(f"{label:40}" + "".join(f"{cell(r):>{width}}" for r in rows.values()))
    for name, tally in tallies.items():
        if tally.failures:
            # dead ends, invalid outputs, timeouts and refusals first: rejected instances are many
            notes = sorted(tally.failures, key=lambda line: "instance rejected" in line)
            print(f"{name}: {len(notes)} notes (first 40)")
            for line in notes[:40]:
                print("   ", line)
    return rows
