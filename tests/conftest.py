"""Shared test helpers: where the shared test data lives."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"
TEMPLATES = SHARED / "templates"
