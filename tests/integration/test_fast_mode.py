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
