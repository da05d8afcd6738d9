"""The template debugger (seed 000): `template analyze` and `template parse` subcommands.

`register(subparsers)` adds them to an argparse parser; each sets `func(args) -> int` for the caller to run.
Writes to stdout/stderr itself (no logging setup here; that belongs to `tokenloom/cli/__init__.py`).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, TextIO

from tokenloom.cli.report import describe, markdown_table
from tokenloom.cli.roundtrip import TOOLS
from tokenloom.errors import TokenloomError
from tokenloom.events import OutputParser, ParseError
from tokenloom.parsing.analysis.analyze import analyze
from tokenloom.parsing.analysis.tool_grammar import tool_call_grammar
from tokenloom.parsing.stream.output_parser import make_output_parser

PARSE_HELP = """input fields (one JSON object per line):
  template           path of a .jinja chat template (required); harmony (gpt-oss) templates are
                     parsed by tokenloom.harmony
  text               the model's output to parse (required)
  tools              the request's tools, OpenAI's form (optional)
  partial            true: the output may continue (no end-of-output checks)
  reasoning_format   "auto" (default) or "none" (reasoning stays in the content)
  enable_thinking    true / false / absent: the template's reasoning switch
  generation_prompt  the text the prompt ended with (e.g. "<think>\n"), when it matters
  prefill            the start of the assistant message the model continued (a final assistant message
                     in the conversation); the result is the whole message, prefill and text together
  json_schema        the request's response_format schema (any JSON), when it asked for a JSON answer:
                     a ```json fence around the answer is dropped

output fields (one JSON object per line, in input order):
  content, reasoning_content   strings or null
  tool_calls                   [{"id", "name", "arguments"}], arguments a JSON text
  error                        null, or what went wrong (a bad line never stops the command)
"""


def register(subparsers: Any) -> None:
    """Add `template analyze` and `template parse` to the subparsers of the `tokenloom` command."""
    template = subparsers.add_parser("template", help="inspect chat templates (auto-parser debugger)")
    commands = template.add_subparsers(dest="template_command", required=True)
    analyze_cmd = commands.add_parser("analyze", help="show the detected structures, markers and triggers")
    analyze_cmd.add_argument("file", nargs="?", type=Path, help="a .jinja chat template")
    analyze_cmd.add_argument("--json", action="store_true", help="print the analysis as JSON")
    analyze_cmd.add_argument("--all", type=Path, metavar="DIR", help="analyse every *.jinja in DIR")
    analyze_cmd.add_argument("--markdown", action="store_true", help="with --all: a markdown table")
    analyze_cmd.set_defaults(func=run_analyze)
    parse_cmd = commands.add_parser(
        "parse",
        help="parse model outputs given as JSON lines on stdin",
        description="Reads one JSON object per line on stdin and writes one JSON object per line.",
        epilog=PARSE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parse_cmd.set_defaults(func=run_parse)


def run_analyze(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    if args.all is not None:
        paths = sorted(Path(args.all).glob("*.jinja"))
        if args.markdown:
            out.write(markdown_table(paths))
        else:
            for path in paths:
                out.write(json.dumps({"template": path.name, **analyze(_read(path)).to_dict()}) + "\n")
        return 0
    if args.file is None:
        sys.stderr.write("template analyze: give FILE.jinja or --all DIR\n")
        return 2
    analysis = analyze(_read(args.file))
    if args.json:
        grammar = tool_call_grammar(analysis, TOOLS)
        data = analysis.to_dict()
        data["triggers"] = list(analysis.tools.triggers)
        data["example_grammar_triggers"] = list(grammar.triggers) if grammar else []
        data["example_grammar"] = repr(grammar.root) if grammar else None
        out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    else:
        out.write(describe(args.file.name, analysis))
    return 0


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@lru_cache(maxsize=64)
def _template(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


def parse_line(request: dict[str, Any]) -> dict[str, Any]:
    """One `template parse` request -> one result object; every failure becomes the `error` field."""
    result: dict[str, Any] = {"content": None, "reasoning_content": None, "tool_calls": [], "error": None}
    try:
        analysis = analyze(_template(str(request["template"])))
        parser: OutputParser = make_output_parser(  # harmony templates get tokenloom.harmony's parser
            analysis,
            tools=request.get("tools") or None,
            reasoning_format="none" if request.get("reasoning_format") == "none" else "auto",
            enable_thinking=request.get("enable_thinking"),
            generation_prompt=request.get("generation_prompt"),
            id_prefix="call_",
            prefill=str(request.get("prefill") or ""),
            json_answer=request.get("json_schema") is not None,
        )
        events = list(parser.feed(str(request.get("text", ""))))
        if not request.get("partial"):
            events += parser.finish()
    except (KeyError, OSError, TokenloomError) as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
        return result
    except Exception as exc:  # any other fault is reported on its line; the command goes on
        result["error"] = f"internal error: {type(exc).__name__}: {exc}"
        return result
    message = parser.message()
    errors = [e.message for e in events if isinstance(e, ParseError)]
    result.update(
        content=message.content,
        reasoning_content=message.reasoning_content,
        tool_calls=[{"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls],
        error="; ".join(errors) or None,
    )
    return result


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _json_line(result: dict[str, Any]) -> str:
    """One output line; a lone surrogate (from input JSON, or odd model output) is written escaped, so
    the line is valid UTF-8 and parses back to the same string."""
    text = json.dumps(result, ensure_ascii=False)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


def run_parse(args: argparse.Namespace, stdin: TextIO | None = None, out: TextIO | None = None) -> int:
    stdin, out = stdin or sys.stdin, out or sys.stdout
    for line in stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError as exc:
            result: dict[str, Any] = {"content": None, "reasoning_content": None, "tool_calls": []}
            result["error"] = f"bad input line: {exc}"
        else:
            result = parse_line(request) if isinstance(request, dict) else {"error": "input is not an object"}
        out.write(_json_line(result))
        out.flush()
    return 0
