"""`python -m tokenloom.parsing template analyze|parse`: the debugger without the main CLI."""

from __future__ import annotations

import argparse
import sys

from tokenloom.parsing.debugger import register


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tokenloom.parsing")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
