"""Shared test helpers: where the shared test data lives."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from tokenloom.constrain.compiled import stale

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"
TEMPLATES = SHARED / "templates"


def pytest_configure(config: pytest.Config) -> None:
    """Refuse to test an old build: a compiled module older than its source would run the old code."""
    old = stale()
    if old:
        raise pytest.UsageError(
            f"compiled modules older than their source: {', '.join(old)}; "
            "build them again with `pip install -e . --no-deps`"
        )


def pytest_sessionfinish(session: object, exitstatus: int) -> None:
    """Freeze what the session built before pytest's exit-time garbage collections (five full passes,
    looking for unraisable exceptions): after the whole suite the process holds 8.4 GB of caches
    (compiled grammars, parser states, masks), and the passes over them took about ten minutes.
    Unraisable exceptions raised while tests run are still reported after each test."""
    gc.freeze()
