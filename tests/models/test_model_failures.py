"""Model failures named through real clients, offline: ADK's Gemini class
(google-genai), LiteLlm (openai) and AnthropicLlm against local API servers
answering each failure. The model span carries ``adk.error.category``,
``adk.error.retryable``, ``http.response.status_code`` and, where the
provider gave one, ``adk.error.retry_after``; the agent and the run carry the
same category."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from google.adk.models.google_llm import Gemini
from google.genai import types
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from adk_otel import semconv as sc

from .api_servers import api_server
from .conftest import model_span, run_model

CATEGORY, RETRYABLE = sc.ADK_ERROR_CATEGORY, sc.ADK_ERROR_RETRYABLE
STATUS = sc.HTTP_RESPONSE_STATUS_CODE


@pytest.fixture
def gemini_env(monkeypatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")  # never sent anywhere but loopback
    for name in ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def gemini(gemini_env) -> Iterator[str]:
    with api_server("gemini") as (url, _):
        yield url


def gemini_model(url: str) -> Gemini:
    return Gemini(
        model="gemini-2.5-flash",
        base_url=url,
        retry_options=types.HttpRetryOptions(attempts=1),  # one request per call
    )


def spans_named(exporter: Any) -> dict[str, ReadableSpan]:
    return {s.name: s for s in exporter.get_finished_spans()}


def assert_layers(exporter: Any, category: str, *, model_only: bool = False) -> ReadableSpan:
    """The model span is ERROR with ``category``; so are the agent and the
    run (unless the failure is a response, not an exception)."""
    model = model_span(exporter)
    assert model.status.status_code is StatusCode.ERROR
    assert (model.attributes or {})[CATEGORY] == category
    spans = spans_named(exporter)
    for name in ("invoke_agent clerk", "invocation shop"):
        attributes = spans[name].attributes or {}
        if model_only:
            assert attributes[sc.ADK_ERROR_COUNT] >= 1
            assert category in attributes[sc.ADK_ERROR_CATEGORIES]
        else:
            assert attributes[CATEGORY] == category, name
    return model


@pytest.mark.parametrize(
    ("text", "category", "status", "retryable"),
    [
        ("busy", "rate_limited", 429, True),
        ("unauthorized", "auth", 401, False),
        ("forbidden", "auth", 403, False),
        ("invalid", "invalid_request", 400, False),
        ("missing", "invalid_request", 404, False),
        ("broken", "provider_unavailable", 500, True),
        ("unavailable", "provider_unavailable", 503, True),
    ],
)
async def test_gemini_api_errors(gemini, traced, text, category, status, retryable) -> None:
    provider, exporter = traced
    error = await run_model(gemini_model(gemini), provider, text)
    assert error is not None
    model = assert_layers(exporter, category)
    attributes = model.attributes or {}
    assert attributes[STATUS] == status
    assert attributes[RETRYABLE] is retryable
    if status == 429:
        assert attributes[sc.ADK_ERROR_RETRY_AFTER] == 12.0  # google.rpc.RetryInfo
    else:
        assert sc.ADK_ERROR_RETRY_AFTER not in attributes


@pytest.mark.parametrize("text", ["unsafe", "jailbreak"], ids=["candidate", "prompt"])
async def test_gemini_blocked_content(gemini, traced, text) -> None:
    provider, exporter = traced
    assert await run_model(gemini_model(gemini), provider, text) is None
    model = assert_layers(exporter, "content_blocked", model_only=True)
    assert (model.attributes or {})[RETRYABLE] is False
    assert spans_named(exporter)["invocation shop"].status.status_code is StatusCode.OK


async def test_gemini_server_that_never_answers_is_timeout(gemini, traced) -> None:
    provider, exporter = traced
    config = types.GenerateContentConfig(http_options=types.HttpOptions(timeout=300))
    error = await run_model(gemini_model(gemini), provider, "silent", config)
    assert error is not None
    model = assert_layers(exporter, "timeout")
    assert (model.attributes or {})[RETRYABLE] is True


async def test_gemini_closed_port_is_connection(gemini_env, traced) -> None:
    provider, exporter = traced
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    error = await run_model(gemini_model(f"http://127.0.0.1:{port}"), provider, "hello")
    assert error is not None
    model = assert_layers(exporter, "connection")
    assert (model.attributes or {})[RETRYABLE] is True


# -- LiteLLM and Anthropic -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "category", "status"),
    [
        ("busy", "rate_limited", 429),
        ("unauthorized", "auth", 401),
        ("broken", "provider_unavailable", 500),
        ("overloaded", "provider_unavailable", 529),
    ],
)
async def test_litellm_errors(traced, text, category, status) -> None:
    from google.adk.models.lite_llm import LiteLlm

    provider, exporter = traced
    with api_server("openai") as (url, _):
        model = LiteLlm(model="openai/gpt-4o", api_base=url, api_key="test-key", num_retries=0)
        error = await run_model(model, provider, text, None)
    assert error is not None
    span = assert_layers(exporter, category)
    assert (span.attributes or {})[STATUS] == status
    if status == 429:
        assert (span.attributes or {})[sc.ADK_ERROR_RETRY_AFTER] == 3.0  # Retry-After


@pytest.mark.parametrize(
    ("text", "category", "status"),
    [
        ("busy", "rate_limited", 429),
        ("unauthorized", "auth", 401),
        ("broken", "provider_unavailable", 500),
        ("overloaded", "provider_unavailable", 529),
    ],
)
async def test_anthropic_errors(traced, monkeypatch, text, category, status) -> None:
    from google.adk.models.anthropic_llm import AnthropicLlm

    provider, exporter = traced
    with api_server("anthropic") as (url, _):
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        # The SDK's own tracing off: with a global provider set (by an earlier test in
        # this process) its span would be the inference (tests/models/test_counted_once.py).
        monkeypatch.setenv("ANTHROPIC_OPEN_TELEMETRY", "false")
        error = await run_model(AnthropicLlm(model="claude-sonnet-4"), provider, text, None)
    assert error is not None
    span = assert_layers(exporter, category)
    assert (span.attributes or {})[STATUS] == status
    if status == 429:
        assert (span.attributes or {})[sc.ADK_ERROR_RETRY_AFTER] == 3.0  # Retry-After
