"""Collects the hard benchmark set from a SchemaStore checkout: schemas with patterns, formats, oneOf/not
or uniqueItems that come with a test instance the schema validates.

Writes benchmarks/data/hard_schemas.jsonl (one schema a line: id, source, schema, tests), each entry naming
the store's commit, schema file and test file it came from. Knows nothing of tokenloom.

    python benchmarks/collect_hard_schemas.py STORE_SRC COMMIT [--max 70]

STORE_SRC holds SchemaStore's src/ (schemas/json/*.json, test/<name>/*.json).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from jsonschema.validators import validator_for

OUT = Path(__file__).resolve().parent / "data" / "hard_schemas.jsonl"
MAX_SCHEMA_BYTES = 60_000  # bigger ones are config-file omnibuses: slow to compile for every engine
MAX_INSTANCE_CHARS = 2_500  # compact JSON; keeps the token-by-token walk of one instance short
_HARD_PATTERN = re.compile(r"\(\?[=!<]|\{\d+,?\d*\}|\)[*+]|\\[sS]")  # look-arounds, counted/nested repeats
_KEYWORDS = ("oneOf", "not", "uniqueItems")


def features(node: Any, found: dict[str, Any]) -> None:
    """Collect the patterns, formats and hard keywords of a schema, and whether it refers outside."""
    if isinstance(node, list):
        for item in node:
            features(item, found)
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        if key == "pattern" and isinstance(value, str):
            found["patterns"].append(value)
        elif key == "format" and isinstance(value, str):
            found["formats"].add(value)
        elif key in _KEYWORDS and (key != "uniqueItems" or value is True):
            found["keywords"].add(key)
        elif key == "$ref" and isinstance(value, str) and not value.startswith("#"):
            found["external"] = True
        features(value, found)


def valid_instances(schema: Any, tests: list[Path]) -> list[tuple[Path, Any]]:
    """The test instances that are short enough and that the schema validates (formats checked)."""
    cls = validator_for(schema)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    out = []
    for path in tests:
        try:
            data = json.loads(path.read_text())
            if len(json.dumps(data, separators=(",", ":"))) <= MAX_INSTANCE_CHARS and validator.is_valid(
                data
            ):
                out.append((path, data))
        except (ValueError, RecursionError, LookupError):
            continue
    return out


def family(name: str) -> str:
    """`aiproj-1.10` and `aiproj-1.2` are one family: the set keeps one of each."""
    return re.sub(r"[-_.]?v?\d+(\.\d+)*$", "", name)


def collect(src: Path, commit: str, limit: int) -> list[dict[str, Any]]:
    picked: list[tuple[int, dict[str, Any]]] = []
    for path in sorted((src / "schemas" / "json").glob("*.json")):
        name = path.stem
        tests = sorted((src / "test" / name).glob("*.json"))
        if not tests or path.stat().st_size > MAX_SCHEMA_BYTES:
            continue
        try:
            schema = json.loads(path.read_text())
        except ValueError:
            continue
        found: dict[str, Any] = {"patterns": [], "formats": set(), "keywords": set(), "external": False}
        features(schema, found)
        hard = [p for p in found["patterns"] if _HARD_PATTERN.search(p)]
        score = len(hard) + len(found["formats"]) + 2 * len(found["keywords"])
        if found["external"] or score < 2:
            continue
        try:
            instances = valid_instances(schema, tests)
        except Exception:  # a schema jsonschema itself cannot read is left out
            continue
        if not instances:
            continue
        rel = f"src/schemas/json/{path.name}"
        row = {
            "id": f"schemastore/{name}",
            "subset": "schemastore",
            "source": f"github.com/SchemaStore/schemastore@{commit}:{rel}",
            "schema": schema,
            "tests": [
                {"valid": True, "data": data, "source": f"src/test/{name}/{p.name}"}
                for p, data in instances[:3]
            ],
        }
        picked.append((score, row))
    best: dict[str, tuple[int, dict[str, Any]]] = {}
    for score, row in picked:
        fam = family(row["id"])
        if fam not in best or score > best[fam][0]:
            best[fam] = (score, row)
    ranked = sorted(best.values(), key=lambda sr: (-sr[0], sr[1]["id"]))
    return [row for _, row in ranked[:limit]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("src", type=Path)
    ap.add_argument("commit")
    ap.add_argument("--max", type=int, default=70)
    args = ap.parse_args()
    rows = collect(args.src, args.commit, args.max)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(f"{len(rows)} schemas -> {OUT}")


if __name__ == "__main__":
    main()
