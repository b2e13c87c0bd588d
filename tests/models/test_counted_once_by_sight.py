"""Counted once by what is seen, not by a list: a recorder adk-otel has never heard of.

``homemade_recorder`` wraps google-genai's client method from a module no table in adk-otel
names, and records each of ADK's real ``Gemini`` calls (over HTTP to a local Gemini-API server)
as an inference span, in each vocabulary backends read, with and without the GenAI metrics.
What backends add up over the trace and the metrics must count each call once: the recorder's
span is the inference, adk-otel's model span the ADK layer around it, and the metrics are
adk-otel's exactly where the recorder records none.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.models.google_llm import Gemini
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import adk_otel
from adk_otel import semconv as sc

from .api_servers import api_server
from .homemade_recorder import MARKS, SCOPE, HomemadeRecorder
from .turns import ask_turns, metric_points

PROMPT_TOKENS = 40  # what the local server reports for each call (api_servers.USAGE)
CALLS = 2


@pytest.fixture
def server(monkeypatch) -> Iterator[str]:
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")  # never sent anywhere but loopback
    for name in ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE"):
        monkeypatch.delenv(name, raising=False)
    with api_server("gemini") as (url, _requests):
        yield url


async def _run(
    url: str, *, mark: str | None, metrics: bool, stream: bool
) -> tuple[list[ReadableSpan], InMemoryMetricReader]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    recorder = (
        HomemadeRecorder(provider, meters if metrics else None, mark=mark)
        if mark is not None
        else None
    )
    if recorder is not None:
        recorder.on()
    try:
        model = Gemini(
            model="gemini-2.5-flash",
            base_url=url,
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        runner = adk_otel.instrument(
            InMemoryRunner(agent=LlmAgent(name="clerk", model=model), app_name="shop"),
            tracer_provider=provider,
            meter_provider=meters,
        )
        await ask_turns(runner, turns=CALLS, streaming=stream)
    finally:
        if recorder is not None:
            recorder.off()
    return list(exporter.get_finished_spans()), reader


def _is_llm(attributes: Any) -> bool:
    """A span some backend counts as an LLM call: by the GenAI operation name, OpenInference's
    kind or MLflow's span type."""
    return (
        attributes.get(sc.GEN_AI_OPERATION_NAME) in {"chat", "generate_content", "text_completion"}
        or attributes.get(sc.OPENINFERENCE_SPAN_KIND) == "LLM"
        or attributes.get("mlflow.spanType") in {'"LLM"', '"CHAT_MODEL"'}
    )


def _counted(spans: list[ReadableSpan]) -> tuple[int, int, int]:
    """Input tokens under the GenAI names (current and older), under OpenInference's, and the
    spans counted as an LLM call."""
    genai = prompt = llm = 0
    for span in spans:
        attributes = span.attributes or {}
        genai += int(attributes.get(sc.GEN_AI_USAGE_INPUT_TOKENS, 0))  # type: ignore[arg-type]
        genai += int(attributes.get("gen_ai.usage.prompt_tokens", 0))  # type: ignore[arg-type]
        prompt += int(attributes.get("llm.token_count.prompt", 0))  # type: ignore[arg-type]
        llm += _is_llm(attributes)
    return genai, prompt, llm


def _metric_sums(reader: InMemoryMetricReader) -> tuple[float, int]:
    """Input tokens in ``gen_ai.client.token.usage`` and the calls in
    ``gen_ai.client.operation.duration``, every meter's together."""
    tokens = sum(
        point.sum
        for _, point in metric_points(reader, "gen_ai.client.token.usage")
        if (point.attributes or {}).get("gen_ai.token.type") == "input"
    )
    durations = sum(
        point.count for _, point in metric_points(reader, "gen_ai.client.operation.duration")
    )
    return tokens, durations


# What the recorder's own span adds up to for two calls, in each vocabulary: with adk-otel's
# model span the ADK layer, the trace adds up to exactly that.
RECORDER_ALONE = {
    "genai": (CALLS * PROMPT_TOKENS, 0, CALLS),
    "older_genai": (CALLS * PROMPT_TOKENS, 0, 0),  # usage alone names no LLM call
    "openinference": (0, CALLS * PROMPT_TOKENS, CALLS),
    "mlflow": (0, 0, CALLS),
}


@pytest.mark.parametrize("stream", [False, True], ids=["generateContent", "stream"])
@pytest.mark.parametrize("metrics", [False, True], ids=["no_metrics", "metrics"])
@pytest.mark.parametrize("mark", [m for m in MARKS if m != "none"])
async def test_an_unknown_recorder_is_counted_once(server, mark, metrics, stream) -> None:
    spans, reader = await _run(server, mark=mark, metrics=metrics, stream=stream)

    assert _counted(spans) == RECORDER_ALONE[mark]
    # Each call once in the metrics: the recorder's where it records them, else adk-otel's.
    assert _metric_sums(reader) == (CALLS * PROMPT_TOKENS, CALLS)
    scopes = {scope for scope, _ in metric_points(reader, "gen_ai.client.token.usage")}
    assert scopes == {SCOPE if metrics else sc.INSTRUMENTATION_SCOPE}

    models = [s for s in spans if (s.attributes or {}).get(sc.ADK_SPAN_KIND) == "model"]
    assert len(models) == CALLS
    for span in models:
        attributes = dict(span.attributes or {})
        assert span.name == "call_llm gemini-2.5-flash"
        assert span.status.status_code is StatusCode.OK
        assert attributes[sc.OPENINFERENCE_SPAN_KIND] == sc.OI_CHAIN
        assert sc.GEN_AI_OPERATION_NAME not in attributes
        assert attributes[sc.ADK_INFERENCE_RECORDED_BY] == SCOPE
        assert attributes[sc.ADK_USAGE_INPUT_TOKENS] == PROMPT_TOKENS
        assert sc.GEN_AI_USAGE_INPUT_TOKENS not in attributes
        children = [s for s in spans if s.parent and s.parent.span_id == span.context.span_id]
        assert [s.instrumentation_scope.name for s in children] == [SCOPE]
    # The roll-ups still total the run's usage.
    invocations = [s for s in spans if (s.attributes or {}).get(sc.ADK_SPAN_KIND) == "invocation"]
    assert [(s.attributes or {}).get(sc.ADK_USAGE_INPUT_TOKENS) for s in invocations] == [
        PROMPT_TOKENS
    ] * CALLS


@pytest.mark.parametrize("metrics", [False, True], ids=["no_metrics", "metrics"])
async def test_a_span_that_is_no_inference_leaves_the_model_span_the_inference(
    server, metrics
) -> None:
    """A library's span under the model call that carries no inference (an HTTP client's)
    changes nothing: adk-otel's model span stays the call's inference, its metrics adk-otel's."""
    spans, reader = await _run(server, mark="none", metrics=metrics, stream=False)
    assert _counted(spans) == (CALLS * PROMPT_TOKENS, 0, CALLS)
    assert _metric_sums(reader) == (CALLS * PROMPT_TOKENS, CALLS)
    models = [s for s in spans if (s.attributes or {}).get(sc.ADK_SPAN_KIND) == "model"]
    assert [s.name for s in models] == ["generate_content gemini-2.5-flash"] * CALLS
    for span in models:
        assert sc.ADK_INFERENCE_RECORDED_BY not in (span.attributes or {})


async def test_without_a_recorder_nothing_changes(server) -> None:
    spans, reader = await _run(server, mark=None, metrics=False, stream=False)
    assert _counted(spans) == (CALLS * PROMPT_TOKENS, 0, CALLS)
    assert _metric_sums(reader) == (CALLS * PROMPT_TOKENS, CALLS)
