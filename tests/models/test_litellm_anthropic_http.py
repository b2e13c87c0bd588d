"""ADK's ``LiteLlm`` (against a local OpenAI-compatible server) and
``AnthropicLlm`` (against a local Messages API server), end to end, offline:
provider, request and response model, usage (cached and reasoning tokens where
the API and ADK report them), finish reason, request parameters, an API error
ending the model span ERROR with ``error.type``, and (LiteLLM) the SDK's
httpx span as the model span's child."""

from __future__ import annotations

from importlib.metadata import version

import pytest
from google.genai import types
from opentelemetry.trace import StatusCode

from adk_otel import semconv as sc

from .api_servers import ANTHROPIC_MODEL_VERSION, OPENAI_MODEL_VERSION, api_server
from .conftest import address, http_attribute, http_children, model_span, run_model

ADK_VERSION = tuple(int(part) for part in version("google-adk").split(".")[:2])


def litellm_model(url: str) -> object:
    from google.adk.models.lite_llm import LiteLlm

    return LiteLlm(model="openai/gpt-4o", api_base=url, api_key="test-key")


async def test_litellm_over_http(traced) -> None:
    provider, exporter = traced
    config = types.GenerateContentConfig(temperature=0.3, max_output_tokens=100)
    with api_server("openai") as (url, requests):
        assert await run_model(litellm_model(url), provider, "stock?", config) is None
    span = model_span(exporter)
    attributes = dict(span.attributes or {})
    assert span.status.status_code is StatusCode.OK
    assert attributes[sc.GEN_AI_PROVIDER_NAME] == "openai"
    assert (attributes[sc.SERVER_ADDRESS], attributes[sc.SERVER_PORT]) == address(url)
    assert attributes[sc.GEN_AI_REQUEST_MODEL] == "openai/gpt-4o"
    assert attributes[sc.GEN_AI_RESPONSE_MODEL] == OPENAI_MODEL_VERSION
    assert attributes[sc.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)
    assert attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] == 25
    assert attributes[sc.GEN_AI_USAGE_OUTPUT_TOKENS] == 4 + 2  # ADK adds reasoning tokens
    assert attributes[sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 5
    assert attributes[sc.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] == 2
    assert attributes[sc.GEN_AI_REQUEST_TEMPERATURE] == 0.3
    assert attributes[sc.GEN_AI_REQUEST_MAX_TOKENS] == 100
    assert requests[-1]["body"]["temperature"] == 0.3
    (http,) = http_children(exporter, span)
    assert http_attribute(http, "http.request.method", "http.method") == "POST"


async def test_litellm_api_error(traced) -> None:
    provider, exporter = traced
    with api_server("openai") as (url, _):
        error = await run_model(litellm_model(url), provider, "invalid", None)
    assert type(error).__name__ == "BadRequestError"
    span = model_span(exporter)
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})[sc.ERROR_TYPE] == "litellm.exceptions.BadRequestError"
    (http,) = http_children(exporter, span)
    assert http_attribute(http, "http.response.status_code", "http.status_code") == 400


@pytest.fixture
def anthropic_api(monkeypatch):
    with api_server("anthropic") as (url, requests):
        # Both ADK releases build the SDK client from the environment.
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        # The SDK's own tracing off: with a global provider set (by an earlier test in
        # this process) its span would be the inference (tests/models/test_counted_once.py).
        monkeypatch.setenv("ANTHROPIC_OPEN_TELEMETRY", "false")
        yield url, requests


async def test_anthropic_over_http(traced, anthropic_api) -> None:
    from google.adk.models.anthropic_llm import AnthropicLlm

    provider, exporter = traced
    url, requests = anthropic_api
    # No generate_content_config: google-adk 2.13 passes `temperature` in a way
    # anthropic 2.12's client rejects (a TypeError, recorded as such).
    assert await run_model(AnthropicLlm(model="claude-sonnet-4"), provider, "stock?", None) is None
    span = model_span(exporter)
    attributes = dict(span.attributes or {})
    assert span.status.status_code is StatusCode.OK
    assert attributes[sc.GEN_AI_PROVIDER_NAME] == "anthropic"
    assert (attributes[sc.SERVER_ADDRESS], attributes[sc.SERVER_PORT]) == address(url)
    assert attributes[sc.GEN_AI_REQUEST_MODEL] == "claude-sonnet-4"
    assert attributes[sc.GEN_AI_USAGE_OUTPUT_TOKENS] == 5
    assert attributes[sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 8
    if ADK_VERSION >= (2, 13):
        # Newer ADK counts cache reads and writes into the input, reports the
        # cache writes, the response model and the stop reason.
        assert attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] == 30 + 8 + 4
        assert attributes[sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] == 4
        assert attributes[sc.GEN_AI_RESPONSE_MODEL] == ANTHROPIC_MODEL_VERSION
        assert attributes[sc.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)
    else:
        assert attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] == 30
    assert requests[-1]["path"] == "/v1/messages"
    # The anthropic SDK's own httpx client is not reached by the httpx
    # instrumentation's global patching (measured: no HTTP span at all), so
    # there is no HTTP child to check here; LiteLLM's and google-genai's are.


async def test_anthropic_api_error(traced, anthropic_api) -> None:
    from google.adk.models.anthropic_llm import AnthropicLlm

    provider, exporter = traced
    error = await run_model(AnthropicLlm(model="claude-sonnet-4"), provider, "invalid", None)
    assert type(error).__name__ == "BadRequestError"
    span = model_span(exporter)
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})[sc.ERROR_TYPE] == "anthropic.BadRequestError"
    assert [e.name for e in span.events] == ["exception"]
