"""The default (fast) mode serves with flash attention: one request alone still gives stable output.

Batch independence is only promised with `--deterministic` (tests/integration/test_concurrency.py runs
there); here the same greedy request, sent alone again and again, must give the same text, streamed or not.
"""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from tests.integration.conftest import TIMEOUT, _serve
from tests.integration.server_process import ServerProcess

pytestmark = pytest.mark.integration

PROMPT = [{"role": "user", "content": "Write a short poem about the sea."}]


@pytest.fixture(scope="module")
def fast_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from _serve(tmp_path_factory, "fast", "--parallel", "2", "--ctx-size", "1024", deterministic=False)


def test_greedy_output_alone_is_stable_in_fast_mode(fast_server: ServerProcess) -> None:
    client = openai.OpenAI(base_url=fast_server.base_url, api_key="x", timeout=TIMEOUT, max_retries=0)
    texts = [
        client.chat.completions.create(model="", messages=PROMPT, max_tokens=32, temperature=0)
        .choices[0]
        .message.content
        for _ in range(3)
    ]
    stream = client.chat.completions.create(
        model="", messages=PROMPT, max_tokens=32, temperature=0, stream=True
    )
    streamed = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert texts[0]
    assert texts == [texts[0]] * 3
    assert streamed == texts[0]


def test_fast_mode_reuses_a_shared_prefix_from_its_unified_cache(fast_server: ServerProcess) -> None:
    client = openai.OpenAI(base_url=fast_server.base_url, api_key="x", timeout=TIMEOUT, max_retries=0)
    system = {"role": "system", "content": "You answer in one short sentence. " * 30}
    first = client.chat.completions.create(
        model="", messages=[system, PROMPT[0]], max_tokens=16, temperature=0
    )
    again = [
        client.chat.completions.create(model="", messages=[system, PROMPT[0]], max_tokens=16, temperature=0)
        for _ in range(2)
    ]
    other = client.chat.completions.create(
        model="",
        messages=[system, {"role": "user", "content": "Name a colour."}],
        max_tokens=8,
        temperature=0,
    )
    assert first.usage is not None and other.usage is not None
    details = other.usage.prompt_tokens_details
    assert details is not None and (details.cached_tokens or 0) >= 200  # the system prompt was not recomputed
    assert again[0].choices[0].message.content == again[1].choices[0].message.content
    assert first.choices[0].message.content
