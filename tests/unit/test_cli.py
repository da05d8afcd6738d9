"""The command line explains itself: every serve option has a meaning and shows its default."""

from __future__ import annotations

import argparse

import pytest

from tokenloom import __version__
from tokenloom.cli import build_parser


def _serve_parser() -> argparse.ArgumentParser:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["serve"]


def test_every_serve_option_has_help() -> None:
    missing = [
        action.option_strings[0]
        for action in _serve_parser()._actions
        if action.option_strings and not action.help
    ]
    assert missing == []


def test_serve_help_shows_defaults_and_the_key_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKENLOOM_API_KEY", "s3cret-value")
    text = _serve_parser().format_help()
    assert "(default: 4)" in text  # --parallel
    assert "(default: 16)" in text  # --queue-size
    assert "(default: 127.0.0.1)" in text
    assert "TOKENLOOM_API_KEY" in text
    assert "s3cret-value" not in text  # the key itself is never printed


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"tokenloom {__version__}"


def test_api_key_comes_from_the_environment_when_not_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKENLOOM_API_KEY", "from-env")
    args = build_parser().parse_args(["serve"])
    assert args.api_key is None  # resolved in run_serve, so --help never carries it
