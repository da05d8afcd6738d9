"""KV-cache reuse: shared system prompts, multi-turn follow-ups, sequence-0 message cache."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from tests.integration.conftest import TIMEOUT, _serve
from tests.integration.server_process import ServerProcess

pytestmark = pytest.mark.integration

SYSTEM = " ".join(f"Rule {i}: answer politely, stay on topic and keep every reply short." for i in range(25))


@pytest.fixture(scope="module")
def no_reuse_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from _serve(
        tmp_path_factory, "noreuse", "--parallel", "2", "--ctx-size", "2048", "--no-prefix-reuse"
    )


@pytest.fixture(scope="module")
def system_cache_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from _serve(
        tmp_path_factory, "syscache", "--parallel", "2", "--ctx-size", "2048", "--system-prompt-cache",
        "--cache-min-tokens", "100",
    )  # fmt: skip


def _chat(client: openai.OpenAI, question: str, history: list[dict] | None = None) -> tuple[str, int, int]:
    messages = [
        {"role": "system", "content": SYSTEM},
        *(history or []),
        {"role": "user", "content": question},
    ]
    r = client.chat.completions.create(model="", messages=messages, max_tokens=16, temperature=0)
    assert r.usage is not None and r.usage.prompt_tokens_details is not None
    return (
        r.choices[0].message.content or "",
        r.usage.prompt_tokens,
        r.usage.prompt_tokens_details.cached_tokens or 0,
    )


def test_shared_system_prompt_is_reused_and_output_matches_no_cache(
    client: openai.OpenAI, no_reuse_server: ServerProcess
) -> None:
    plain = openai.OpenAI(base_url=no_reuse_server.base_url, api_key="x", timeout=TIMEOUT, max_retries=0)
    _, prompt_tokens, _ = _chat(client, "What is the capital of Italy?")
    assert prompt_tokens >= 200
    text, _, cached = _chat(client, "Name a large animal.")
    assert cached >= 200
    reference, _, reference_cached = _chat(plain, "Name a large animal.")
    assert reference_cached == 0
    assert text == reference


def test_multi_turn_follow_up_reuses_the_history(client: openai.OpenAI) -> None:
    first, first_prompt, _ = _chat(client, "Tell me about rivers.")
    history = [{"role": "user", "content": "Tell me about rivers."}, {"role": "assistant", "content": first}]
    _, _, cached = _chat(client, "And lakes?", history)
    assert cached >= first_prompt - 2  # everything up to the new turn came from the cache


def test_system_prompt_cache_in_sequence_zero(system_cache_server: ServerProcess) -> None:
    c = openai.OpenAI(base_url=system_cache_server.base_url, api_key="x", timeout=TIMEOUT, max_retries=0)
    _chat(c, "First question?")
    # both slots get busy with other prompts, so the reuse below can only come from sequence 0
    for question in ("Unrelated A?", "Unrelated B?"):
        c.chat.completions.create(model="", messages=[{"role": "user", "content": question}], max_tokens=2)
    _, _, cached = _chat(c, "Second question?")
    assert cached >= 200
