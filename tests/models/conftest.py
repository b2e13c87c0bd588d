"""Real model clients against local API servers: nothing leaves the machine."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import adk_otel

# LiteLLM fetches its model price map from the network at import unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture
def traced() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """A provider whose spans land in memory, with the HTTP clients the model
    SDKs use (aiohttp for google-genai, httpx for openai/litellm and anthropic)
    instrumented on it for the test's length."""
    from opentelemetry.instrumentation.aiohttp_client import AioHttpClientInstrumentor
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentors = [AioHttpClientInstrumentor(), HTTPXClientInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=provider)
    try:
        yield provider, exporter
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()


def model_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    (span,) = [s for s in exporter.get_finished_spans() if s.name.startswith("generate_content")]
    return span


def http_children(exporter: InMemorySpanExporter, parent: ReadableSpan) -> list[ReadableSpan]:
    """The HTTP client spans made during the model call, as its children."""
    return [
        s
        for s in exporter.get_finished_spans()
        if s.parent is not None
        and s.parent.span_id == parent.context.span_id
        and s.instrumentation_scope is not None
        and ("aiohttp" in s.instrumentation_scope.name or "httpx" in s.instrumentation_scope.name)
    ]


def address(url: str) -> tuple[str, int]:
    """``(server.address, server.port)`` of a local API server's URL: the
    loopback address and the port it was given."""
    host, _, port = url.removeprefix("http://").partition(":")
    return host, int(port)


def http_attribute(span: ReadableSpan, current: str, legacy: str) -> object:
    """An HTTP attribute under its current name, or the older one the
    instrumentations still write by default (OTEL_SEMCONV_STABILITY_OPT_IN)."""
    attributes = span.attributes or {}
    return attributes.get(current, attributes.get(legacy))


async def run_model(
    model: object,
    provider: TracerProvider,
    text: str,
    config: types.GenerateContentConfig | None = None,
    *,
    stream: bool = False,
) -> BaseException | None:
    """One instrumented run of an agent on ``model``; its exception, if any."""
    agent = LlmAgent(name="clerk", model=model, generate_content_config=config)
    runner = adk_otel.instrument(
        InMemoryRunner(agent=agent, app_name="shop"),
        tracer_provider=provider,
        meter_provider=NoOpMeterProvider(),
    )
    session = await runner.session_service.create_session(app_name="shop", user_id="u")
    mode = StreamingMode.SSE if stream else StreamingMode.NONE
    try:
        async for _ in runner.run_async(
            user_id="u",
            session_id=session.id,
            new_message=types.UserContent(text),
            run_config=RunConfig(streaming_mode=mode),
        ):
            pass
    except Exception as exc:
        return exc
    return None
