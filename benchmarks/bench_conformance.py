"""llama.cpp test-chat conformance: how many of its parse expectations our parser meets, per format family.

Runs every case of tests/golden/llamacpp/cases.jsonl (llama.cpp b11434's tests/test-chat.cpp) through
`make_output_parser`, whole and split (per character, random pieces, and with --every-cut in two pieces cut
at every character), with test-chat's own comparison rules; prints "N of M" per family and per template,
then every miss with its reason. Then the same table for the wide round trip (tokenloom.cli.wide_corpus:
messages shaped like real conversations rendered through every shared template and parsed back).

    python benchmarks/bench_conformance.py [--templates ../shared/templates] [--every-cut] [--quiet]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import TextIO

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from tokenloom.cli.conformance import case_id, check, load_cases
from tokenloom.cli.roundtrip import check_case, family
from tokenloom.cli.wide_corpus import wide_cases

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "llamacpp"
DEFAULT_DIR = ROOT / ".." / "shared" / "templates"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--templates", type=Path, default=DEFAULT_DIR, help="the shared templates directory")
    ap.add_argument("--every-cut", action="store_true", help="also feed each text cut at every character")
    ap.add_argument("--quiet", action="store_true", help="totals per family only")
    args = ap.parse_args()
    cases = load_cases(GOLDEN / "cases.jsonl")
    known = json.loads((GOLDEN / "known_misses.json").read_text(encoding="utf-8"))
    total: Counter[str] = Counter()
    passed: Counter[str] = Counter()
    per_template: dict[str, Counter[str]] = defaultdict(Counter)
    misses: list[tuple[str, str, str]] = []
    families: dict[str, str] = {}
    for case in cases:
        name = case["template"]
        if name not in families:
            families[name] = family((args.templates / name).read_text(encoding="utf-8"))
        fam = families[name]
        problem = check(case, args.templates, num_splits=3, every_cut=args.every_cut)
        total[fam] += 1
        per_template[name]["total"] += 1
        if problem is None:
            passed[fam] += 1
            per_template[name]["passed"] += 1
        else:
            misses.append((case_id(case), problem, known.get(case_id(case), "")))
    out = sys.stdout
    out.write(f"{'format family':<34} {'passed':>7} {'cases':>6} {'share':>7}\n")
    for fam in sorted(total, key=lambda f: (-total[f], f)):
        out.write(f"{fam:<34} {passed[fam]:>7} {total[fam]:>6} {passed[fam] / total[fam]:>7.1%}\n")
    n_pass, n_all = sum(passed.values()), sum(total.values())
    out.write(f"{'all':<34} {n_pass:>7} {n_all:>6} {n_pass / n_all:>7.1%}\n")
    wide_misses = _wide_table(args.templates, families, out)
    if args.quiet:
        return 0
    out.write("\ntemplates with misses:\n")
    for name, counts in sorted(per_template.items()):
        if counts["passed"] < counts["total"]:
            out.write(f"  {name}: {counts['passed']} of {counts['total']}\n")
    out.write("\nmisses (case, what differs, [known miss: why]):\n")
    for cid, problem, why in misses:
        out.write(f"  {cid}: {problem[:240]}\n")
        if why:
            out.write(f"      known miss: {why}\n")
    out.write("\nwide round-trip misses:\n")
    for cid, problem in wide_misses:
        out.write(f"  {cid}: {problem}\n")
    return 0


def _wide_table(templates: Path, families: dict[str, str], out: TextIO) -> list[tuple[str, str]]:
    """Real-conversation round trips (tokenloom.cli.wide_corpus) over every template: N of M per family."""
    total: Counter[str] = Counter()
    passed: Counter[str] = Counter()
    misses: list[tuple[str, str]] = []
    for path in sorted(templates.glob("*.jinja")):
        template = path.read_text(encoding="utf-8")
        fam = families.get(path.name) or family(template)
        for case in wide_cases(template, path.name):
            total[fam] += 1
            if (problem := check_case(case, template)) is None:
                passed[fam] += 1
            else:
                misses.append((f"{path.name}/{case.label}", problem[:160]))
    out.write(f"\n{'wide round trip: format family':<34} {'passed':>7} {'cases':>6} {'share':>7}\n")
    for fam in sorted(total, key=lambda f: (-total[f], f)):
        out.write(f"{fam:<34} {passed[fam]:>7} {total[fam]:>6} {passed[fam] / total[fam]:>7.1%}\n")
    n_pass, n_all = sum(passed.values()), sum(total.values())
    out.write(f"{'all':<34} {n_pass:>7} {n_all:>6} {n_pass / n_all:>7.1%}\n")
    return misses


if __name__ == "__main__":
    raise SystemExit(main())
