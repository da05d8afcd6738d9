"""Ollama's API with the official `ollama` client, unmodified, against the real server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import jsonschema
import ollama
import pytest

from tests.conftest import TEMPLATES
from tests.integration.conftest import _serve
from tests.integration.server_process import ServerProcess

pytestmark = pytest.mark.integration

GREEDY = {"temperature": 0, "num_predict": 16}
ASK = [{"role": "user", "content": "Name three colours."}]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


@pytest.fixture(scope="module")
def ollama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from _serve(
        tmp_path_factory, "ollama", "--parallel", "2", "--ctx-size", "2048", "--alias", "gemma3:270m"
    )


@pytest.fixture(scope="module")
def client(ollama_server: ServerProcess) -> ollama.Client:
    client = ollama.Client(host=ollama_server.url, timeout=120)
    client.chat(model="gemma3:270m", messages=ASK, options={**GREEDY, "num_predict": 1})  # warm the cache
    return client


def test_chat_streamed_and_not_agree(client: ollama.Client) -> None:
    whole = client.chat(model="llama3.2", messages=ASK, options=GREEDY)
    assert whole.done and whole.done_reason in ("stop", "length")
    assert whole.message.role == "assistant" and whole.message.content
    assert whole.eval_count and whole.prompt_eval_count and whole.total_duration and whole.eval_duration
    parts = list(client.chat(model="llama3.2", messages=ASK, options=GREEDY, stream=True))
    assert parts[-1].done and not any(part.done for part in parts[:-1])
    assert "".join(part.message.content or "" for part in parts) == whole.message.content
    assert parts[-1].eval_count == whole.eval_count


def test_generate_streamed_and_not_agree(client: ollama.Client) -> None:
    whole = client.generate(model="x", prompt="Why is the sky blue?", options=GREEDY)
    assert whole.done and whole.response
    parts = list(client.generate(model="x", prompt="Why is the sky blue?", options=GREEDY, stream=True))
    assert "".join(part.response or "" for part in parts) == whole.response
    raw = client.generate(
        model="x", prompt="<start_of_turn>user\nHi<end_of_turn>\n", raw=True, options=GREEDY
    )
    assert raw.done and raw.prompt_eval_count and raw.prompt_eval_count < (whole.prompt_eval_count or 0) + 10


def test_format_schema_is_enforced(client: ollama.Client) -> None:
    schema = {
        "type": "object",
        "properties": {"colour": {"type": "string", "enum": ["red", "green", "blue"]}},
        "required": ["colour"],
        "additionalProperties": False,
    }
    reply = client.chat(model="x", messages=[{"role": "user", "content": "A colour?"}], format=schema,
                        options={"temperature": 0, "num_predict": 120})  # fmt: skip
    jsonschema.validate(json.loads(reply.message.content or ""), schema)
    as_json = client.chat(
        model="x", messages=ASK, format="json", options={"temperature": 0, "num_predict": 120}
    )
    assert isinstance(json.loads(as_json.message.content or ""), dict)


def test_tools_render_and_a_tool_history_round_trips(client: ollama.Client) -> None:
    ask = [{"role": "user", "content": "Weather in Paris?"}]
    bare = client.chat(model="x", messages=ask, options={"temperature": 0, "num_predict": 1})
    offered = client.chat(
        model="x", messages=ask, tools=[WEATHER], options={"temperature": 0, "num_predict": 1}
    )
    assert (offered.prompt_eval_count or 0) > (bare.prompt_eval_count or 0)  # the template shows the tool
    history: list[Any] = [
        *ask,
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
        },
        {"role": "tool", "content": "Sunny, 24 C", "tool_name": "get_weather"},
    ]
    reply = client.chat(model="x", messages=history, tools=[WEATHER], options=GREEDY)
    assert reply.done and (reply.prompt_eval_count or 0) > (offered.prompt_eval_count or 0)


def test_list_show_ps_version(client: ollama.Client, ollama_server: ServerProcess) -> None:
    names = [model.model for model in client.list().models]
    assert "gemma3:270m" in names
    shown = client.show("gemma3:270m")
    assert shown.details is not None and shown.details.format == "gguf" and shown.details.family == "gemma3"
    assert shown.modelinfo and shown.modelinfo["general.architecture"] == "gemma3"
    assert shown.capabilities and "completion" in shown.capabilities and "tools" in shown.capabilities
    assert shown.template
    running = client.ps().models
    assert running and running[0].context_length == 2048
    assert httpx.get(f"{ollama_server.url}/api/version").json()["version"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/chat", {"model": "x", "messages": [{"role": "bot", "content": "x"}]}, "messages[0].role"),
        ("/api/chat", {"model": "x", "messages": ASK, "options": {"num_ctx": 100000}}, "options.num_ctx"),
        ("/api/chat", {"model": "x", "messages": ASK, "options": {"temperature": -1}}, "options.temperature"),
        ("/api/chat", {"model": "x", "messages": [{**ASK[0], "images": ["AAAA"]}]}, "messages[0].images"),
        ("/api/generate", {"model": "x", "prompt": "x", "suffix": "y"}, "suffix"),
        ("/api/chat", {"model": "x", "messages": ASK, "format": {"$ref": "#"}}, "format"),
    ],
)
def test_errors_name_the_field(
    ollama_server: ServerProcess, path: str, body: dict[str, Any], field: str
) -> None:
    response = httpx.post(f"{ollama_server.url}{path}", json={**body, "stream": False}, timeout=60)
    assert response.status_code == 400, response.text
    assert response.json()["error"].startswith(field)


@pytest.fixture(scope="module")
def thinking_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ollama.Client]:
    template = TEMPLATES / "GLM-4.7-Flash.jinja"
    for server in _serve(
        tmp_path_factory, "ollama-think", "--parallel", "1", "--chat-template-file", str(template)
    ):
        yield ollama.Client(host=server.url, timeout=120)


def test_think_puts_reasoning_in_message_thinking(thinking_client: ollama.Client) -> None:
    ask = [{"role": "user", "content": "Tell me about the sea."}]
    options = {"temperature": 0, "num_predict": 30}
    thinking_client.chat(model="x", messages=ask, think=True, options=options)  # warm the prefix (see
    # test_anthropic_api: a cold and a cached prefill may round differently)
    thought = thinking_client.chat(model="x", messages=ask, think=True, options=options)
    assert thought.message.thinking
    assert "thinking" in (thinking_client.show("x").capabilities or [])
    parts = list(thinking_client.chat(model="x", messages=ask, think=True, options=options, stream=True))
    assert "".join(part.message.thinking or "" for part in parts) == thought.message.thinking
    quiet = thinking_client.chat(model="x", messages=ask, think=False, options=options)
    assert not quiet.message.thinking


def test_embed_gives_unit_vectors(client: ollama.Client) -> None:
    reply = client.embed(model="x", input=["Hello world", "The cat sat on the mat."])
    vectors = reply.embeddings
    assert len(vectors) == 2 and len(vectors[0]) == 640
    assert all(abs(sum(v * v for v in vector) - 1.0) < 1e-4 for vector in vectors)
    assert reply.prompt_eval_count and reply.prompt_eval_count > 4
    single = client.embed(model="x", input="Hello world").embeddings[0]
    assert sum(a * b for a, b in zip(single, vectors[0], strict=True)) > 0.999  # batched: see test_embeddings


def test_reasoning_budget_extension_ends_the_thinking(thinking_client: ollama.Client) -> None:
    ask = [{"role": "user", "content": "Tell me about the sea."}]
    body = {"model": "x", "messages": ask, "think": True, "stream": False, "reasoning_budget": 3,
            "options": {"temperature": 0, "num_predict": 30}}  # fmt: skip
    reply = httpx.post(f"{thinking_client._client.base_url}/api/chat", json=body, timeout=120).json()
    thinking = reply["message"].get("thinking") or ""
    assert thinking and len(thinking.split()) <= 6  # three tokens of reasoning, then the answer
    assert reply["message"]["content"]
