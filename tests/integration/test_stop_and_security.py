"""Stop strings across token boundaries; API keys and CORS; metrics."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest

from tests.integration.conftest import _serve
from tests.integration.server_process import ServerProcess

pytestmark = pytest.mark.integration

PROMPT = "Once upon a time, in a small village by the sea,"


def _complete(client: openai.OpenAI, max_tokens: int, stop: str | None = None) -> openai.types.Completion:
    return client.completions.create(model="", prompt=PROMPT, max_tokens=max_tokens, temperature=0, stop=stop)


@pytest.mark.parametrize("stream", [False, True])
def test_stop_string_split_across_tokens_is_honoured_and_not_emitted(
    client: openai.OpenAI, stream: bool
) -> None:
    # greedy prefixes of 1, 2, ... tokens reveal where the token boundaries of the output are
    prefixes = [_complete(client, n).choices[0].text for n in range(1, 13)]
    full = prefixes[-1]
    boundary = next(
        len(prefixes[i])
        for i in range(1, len(prefixes) - 1)
        if len(prefixes[i]) - len(prefixes[i - 1]) >= 2 and len(prefixes[i + 1]) - len(prefixes[i]) >= 2
    )
    stop = full[boundary - 1 : boundary + 1]  # last char of one token + first char of the next
    expected = full[: full.index(stop)]
    if stream:
        chunks = list(
            client.completions.create(
                model="", prompt=PROMPT, max_tokens=12, temperature=0, stop=stop, stream=True
            )
        )
        text = "".join(c.choices[0].text for c in chunks)
        reason = [c.choices[0].finish_reason for c in chunks if c.choices[0].finish_reason][-1]
    else:
        response = _complete(client, 12, stop)
        text, reason = response.choices[0].text, response.choices[0].finish_reason
    assert text == expected
    assert stop not in text
    assert reason == "stop"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from _serve(
        tmp_path_factory, "secured", "--parallel", "1", "--ctx-size", "1024", "--api-key", "s3cret",
        "--cors-origin", "https://app.example",
    )  # fmt: skip


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "s3cret"},
        {"Authorization": "bearer s3cret"},
        {"Authorization": "Basic czNjcmV0"},
        {"X-Api-Key": "s3cret"},
        {"Api-Key": "s3cret"},
        {"X-Forwarded-For": "127.0.0.1"},
    ],
)
def test_api_key_cannot_be_bypassed(secured: ServerProcess, headers: dict[str, str]) -> None:
    r = httpx.get(f"{secured.base_url}/models", headers=headers, timeout=10)
    assert r.status_code == 401
    assert r.json()["error"]["type"] == "authentication_error"


def test_api_key_accepted_with_the_openai_client(secured: ServerProcess) -> None:
    c = openai.OpenAI(base_url=secured.base_url, api_key="s3cret", timeout=60, max_retries=0)
    assert c.models.list().data[0].id
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=secured.base_url, api_key="nope", max_retries=0).models.list()


def test_cors_allows_the_configured_origin_only(secured: ServerProcess) -> None:
    def preflight(origin: str) -> httpx.Response:
        return httpx.options(
            f"{secured.base_url}/chat/completions",
            headers={"Origin": origin, "Access-Control-Request-Method": "POST"},
            timeout=10,
        )

    good = preflight("https://app.example")
    assert good.headers.get("access-control-allow-origin") == "https://app.example"
    evil = preflight("https://evil.example")
    assert evil.headers.get("access-control-allow-origin") != "https://evil.example"
    r = httpx.get(
        f"{secured.base_url}/models",
        headers={"Origin": "https://evil.example", "Authorization": "Bearer s3cret", "Cookie": "a=b"},
        timeout=10,
    )
    assert r.headers.get("access-control-allow-origin") not in ("https://evil.example", "*")


def test_metrics_expose_the_serving_counters(client: openai.OpenAI, http: httpx.Client) -> None:
    client.chat.completions.create(model="", messages=[{"role": "user", "content": "Hi"}], max_tokens=3)
    text = http.get("/metrics").text
    for name in (
        "tokenloom_requests_total",
        "tokenloom_prompt_tokens_total",
        "tokenloom_generated_tokens_total",
        "tokenloom_cached_tokens_total",
        "tokenloom_queue_depth",
        "tokenloom_busy_slots",
        "tokenloom_time_to_first_token_seconds_bucket",
        "tokenloom_time_per_output_token_seconds_bucket",
    ):
        assert name in text
