"""ADK's own ``Gemini`` model class, end to end over HTTP, offline: google-genai
talks to a local server speaking the Gemini REST API. The model span carries
what the API reported (provider, request and response model, usage with cached
and reasoning tokens, finish reason, request parameters, streaming), API errors
end it ERROR with ``error.type``, and the HTTP client's own span (aiohttp, as
google-genai uses it, instrumented with opentelemetry-instrumentation-aiohttp-client)
is its child."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from google.adk.models.google_llm import Gemini
from google.genai import types
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import StatusCode

from adk_otel import semconv as sc

from .api_servers import MODEL_VERSION, api_server
from .conftest import address, http_attribute, http_children, model_span, run_model


@pytest.fixture
def server(monkeypatch) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")  # never sent anywhere but loopback
    for name in ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE"):
        monkeypatch.delenv(name, raising=False)
    with api_server("gemini") as found:
        yield found


async def run_gemini(
    base_url: str, provider: TracerProvider, text: str, *, stream: bool = False
) -> BaseException | None:
    config = types.GenerateContentConfig(temperature=0.3, max_output_tokens=100, top_p=0.8)
    model = Gemini(
        model="gemini-2.5-flash",
        base_url=base_url,
        retry_options=types.HttpRetryOptions(attempts=1),  # one request per call
    )
    return await run_model(model, provider, text, config, stream=stream)


@pytest.mark.parametrize("stream", [False, True], ids=["generateContent", "streamGenerateContent"])
async def test_a_gemini_call_over_http(server, traced, stream) -> None:
    url, requests = server
    provider, exporter = traced
    assert await run_gemini(url, provider, "stock of A1?", stream=stream) is None

    span = model_span(exporter)
    attributes = dict(span.attributes or {})
    assert span.name == "generate_content gemini-2.5-flash"
    assert span.status.status_code is StatusCode.OK
    assert attributes[sc.GEN_AI_PROVIDER_NAME] == "gcp.gemini"
    assert (attributes[sc.SERVER_ADDRESS], attributes[sc.SERVER_PORT]) == address(url)
    assert attributes[sc.GEN_AI_REQUEST_MODEL] == "gemini-2.5-flash"
    assert attributes[sc.GEN_AI_RESPONSE_MODEL] == MODEL_VERSION
    assert attributes[sc.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)
    # As the API reported them (ADK's arithmetic: output includes thoughts).
    assert attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] == 40
    assert attributes[sc.GEN_AI_USAGE_OUTPUT_TOKENS] == 6 + 3
    assert attributes[sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 10
    assert attributes[sc.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] == 3
    assert attributes[sc.GEN_AI_REQUEST_TEMPERATURE] == 0.3
    assert attributes[sc.GEN_AI_REQUEST_MAX_TOKENS] == 100
    assert attributes[sc.GEN_AI_REQUEST_TOP_P] == 0.8
    if stream:
        assert attributes[sc.GEN_AI_REQUEST_STREAM] is True
        assert attributes[sc.ADK_MODEL_CHUNKS] == 3
        assert ":streamGenerateContent" in requests[-1]["path"]
        ttfc = attributes[sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK]
        assert 0 < ttfc < (span.end_time - span.start_time) / 1e9
    else:
        assert sc.GEN_AI_REQUEST_STREAM not in attributes
        assert sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK not in attributes
        assert requests[-1]["path"].endswith(":generateContent")
    (http,) = http_children(exporter, span)
    assert http_attribute(http, "http.request.method", "http.method") == "POST"


@pytest.mark.parametrize(
    ("text", "error_type", "status"),
    [
        ("busy", "google.adk.models.google_llm._ResourceExhaustedError", 429),
        ("broken", "google.genai.errors.ServerError", 500),
    ],
    ids=["429", "500"],
)
async def test_a_gemini_api_error_is_an_error(server, traced, text, error_type, status) -> None:
    url, _ = server
    provider, exporter = traced
    error = await run_gemini(url, provider, text)
    assert error is not None and error_type.endswith(type(error).__qualname__)

    span = model_span(exporter)
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})[sc.ERROR_TYPE].rsplit(".", 1)[-1] == type(error).__qualname__
    assert [e.name for e in span.events] == ["exception"]
    (http,) = http_children(exporter, span)
    assert http_attribute(http, "http.response.status_code", "http.status_code") == status
    invocation = next(s for s in exporter.get_finished_spans() if s.name == "invocation shop")
    assert invocation.status.status_code is StatusCode.ERROR
