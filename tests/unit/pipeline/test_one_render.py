"""One request renders its prompt once and converts its tools once, whatever it asks for; the server
layer never reaches into templates, parsers or the harmony format."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TEMPLATES
from tokenloom.engine.vocab import Tokenizer, load_tokenizer
from tokenloom.parsing.analysis.analyze import analyze
from tokenloom.pipeline import PrefixPolicy, format_for_model
from tokenloom.pipeline.request import ToolSpec
from tokenloom.server.adapt_openai import chat_request
from tokenloom.server.wire import ChatCompletionRequest

chat_render = importlib.import_module("tokenloom.chat.render")  # the module, not chat.render()
SERVER = Path(__file__).resolve().parents[3] / "tokenloom" / "server"
TOOLS = [
    {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}},
    }
    for name in ("first", "second")
]


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return load_tokenizer()


@pytest.mark.parametrize("policy", [PrefixPolicy(), PrefixPolicy("system", 1), PrefixPolicy("first", 1)])
@pytest.mark.parametrize("template_name", ["Qwen-Qwen3-0.6B.jinja", "Qwen3-Coder.jinja"])
def test_a_request_renders_once_and_converts_its_tools_once(
    tokenizer: Tokenizer, monkeypatch: pytest.MonkeyPatch, policy: PrefixPolicy, template_name: str
) -> None:
    template = (TEMPLATES / template_name).read_text()
    chat_format = format_for_model(tokenizer, template, None)
    analyze(template)  # the per-template analysis is cached; it is not part of a request's cost
    renders: list[int] = []
    conversions: list[str] = []
    real_render, real_dict = chat_render.render, ToolSpec.openai_dict

    def counting_render(*args: Any, **kwargs: Any) -> str:
        renders.append(1)
        return real_render(*args, **kwargs)

    def counting_dict(self: ToolSpec) -> dict[str, Any]:
        conversions.append(self.name)
        return real_dict(self)

    monkeypatch.setattr(chat_render, "render", counting_render)
    monkeypatch.setattr(ToolSpec, "openai_dict", counting_dict)
    body = ChatCompletionRequest.model_validate(
        {
            "messages": [
                {"role": "system", "content": "You are terse. " * 20},
                {"role": "user", "content": "hi"},
            ],
            "tools": TOOLS,
        }
    )
    request = chat_request(body, n_vocab=300_000)
    prompt = chat_format.prompt(request, policy)
    chat_format.constraint(request, prompt)
    chat_format.output_parser(request, prompt)
    assert len(renders) == 1
    assert sorted(conversions) == ["first", "second"]
    if policy.mode == "system":
        assert prompt.cache_prefix_len > 0  # the one render also found where the system prompt ends
        assert "\ue000" not in prompt.text


def test_the_server_layer_knows_no_template_parser_or_harmony() -> None:
    imports = re.compile(r"^\s*(?:from|import) tokenloom\.(chat|parsing|harmony)\b", re.MULTILINE)
    for path in SERVER.glob("*.py"):
        text = path.read_text()
        assert not imports.search(text), path.name
        assert "harmony" not in text.lower(), path.name


def test_the_stream_parser_never_imports_the_template_analysis() -> None:
    """parsing/stream follows the structures analysis derived; it must not reach back into analysis."""
    stream = SERVER.parent / "parsing" / "stream"
    imports = re.compile(r"^\s*(?:from|import) tokenloom\.(parsing\.analysis|chat|cli)\b", re.MULTILINE)
    files = list(stream.glob("*.py"))
    assert len(files) > 5
    for path in files:
        assert not imports.search(path.read_text()), path.name
