"""Each model call counted once beside a client instrumentation, decided in this process.

``test_counted_once_clients.py`` counts these set-ups end to end as their users turn them on
(fresh processes, before ADK's import, through the global providers), in minutes. Here each is
turned on in this process, on the test's own providers, so what each call rests on fails in
seconds: which recorder's span is the inference (adk-otel's model span is then the ADK layer),
whether a second recorder is asked to stand down (Traceloop's, by its own key in the call's
context), and who records the metrics. Counted as backends count, never by asking adk-otel's
own helpers: the spans carrying a call's usage, the spans classified as an LLM call, and the
``gen_ai.client.token.usage`` recordings that reach the reader.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased
from opentelemetry.trace import StatusCode
from opentelemetry.util._once import Once
from telemetry.viewers import langfuse_type, phoenix_kind  # tests/ is on the path

import adk_otel
from adk_otel import semconv as sc

from .api_servers import api_server
from .test_counted_once_clients import EXPECTED, Expected
from .turns import ask_turns, metric_points

CALLS = 2
SETUPS = {
    # name (as in test_counted_once_clients.py): (model API, client instrumentations, streaming)
    "anthropic+traceloop": ("anthropic", "traceloop-anthropic", False),
    "anthropic+traceloop sse": ("anthropic", "traceloop-anthropic", True),
    "anthropic+traceloop metrics-off": ("anthropic", "traceloop-anthropic metrics-off", False),
    "anthropic+traceloop+sdk": ("anthropic", "traceloop-anthropic anthropic-sdk", False),
    "anthropic+traceloop+sdk sse": ("anthropic", "traceloop-anthropic anthropic-sdk", True),
    "anthropic+sdk": ("anthropic", "anthropic-sdk", False),
    "gemini+traceloop": ("gemini", "traceloop-google-generativeai", False),
    "gemini+traceloop sse": ("gemini", "traceloop-google-generativeai", True),
    "gemini+traceloop metrics-off": ("gemini", "traceloop-google-generativeai metrics-off", False),
    "gemini+opentelemetry+traceloop": (
        "gemini",
        "traceloop-google-generativeai opentelemetry-google-genai",
        False,
    ),
}
LLM_OPERATIONS = {"generate_content", "chat", "text_completion"}

CLIENT_METHODS = {
    # The client classes the instrumentations wrap, whose methods ADK's model classes call.
    "anthropic.resources.messages": ("AsyncMessages", "Messages"),
    "anthropic.resources.beta.messages.messages": ("AsyncMessages", "Messages"),
    "google.genai.models": ("AsyncModels", "Models"),
}


@contextlib.contextmanager
def client_methods_restored() -> Iterator[None]:
    """Every client method as it was before, whatever an instrumentation's
    ``uninstrument()`` leaves behind."""
    saved = []
    for module_name, names in CLIENT_METHODS.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # not in this release of the client library
            continue
        for name in names:
            owner = getattr(module, name)
            saved.append((owner, dict(vars(owner))))
    try:
        yield
    finally:
        for owner, methods in saved:
            for attribute, value in methods.items():
                if vars(owner).get(attribute) is not value:
                    setattr(owner, attribute, value)


@contextlib.contextmanager
def global_tracer_provider(provider: TracerProvider | None) -> Iterator[None]:
    """OpenTelemetry's global tracer provider set to ``provider`` (None: never set) for the
    block, the process's own restored after, as OpenTelemetry's own tests reset it. The
    anthropic SDK's tracing records through the global provider only."""
    saved = trace._TRACER_PROVIDER, trace._TRACER_PROVIDER_SET_ONCE
    trace._TRACER_PROVIDER, trace._TRACER_PROVIDER_SET_ONCE = None, Once()
    try:
        if provider is not None:
            trace.set_tracer_provider(provider)
        yield
    finally:
        trace._TRACER_PROVIDER, trace._TRACER_PROVIDER_SET_ONCE = saved


def _instrumentors(clients: str, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The client instrumentations of a set-up (``SETUPS``), innermost first."""
    found: list[Any] = []
    if "metrics-off" in clients:  # read at instrument(), as Traceloop.init() has it read
        monkeypatch.setenv("TRACELOOP_METRICS_ENABLED", "false")
    if "opentelemetry-google-genai" in clients:  # as Agent Engine's AdkApp turns it on
        from opentelemetry.instrumentation.google_genai import GoogleGenAiSdkInstrumentor

        found.append(GoogleGenAiSdkInstrumentor())
    if "traceloop-google-generativeai" in clients:
        from opentelemetry.instrumentation.google_generativeai import (
            GoogleGenerativeAiInstrumentor,
        )

        found.append(GoogleGenerativeAiInstrumentor())
    if "traceloop-anthropic" in clients:
        from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor

        found.append(AnthropicInstrumentor())
    return found


def _model(api: str, url: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    if api == "gemini":
        from google.adk.models.google_llm import Gemini

        monkeypatch.setenv("GOOGLE_API_KEY", "test-key")  # never sent anywhere but loopback
        for name in ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE"):
            monkeypatch.delenv(name, raising=False)
        return Gemini(
            model="gemini-2.5-flash",
            base_url=url,
            retry_options=types.HttpRetryOptions(attempts=1),
        )
    from google.adk.models.anthropic_llm import AnthropicLlm

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    return AnthropicLlm(model="claude-sonnet-4")


@dataclass
class Counted:
    usage_spans: int
    """Spans carrying a call's input tokens, under either convention."""
    llm_spans: int
    """Spans Phoenix, Langfuse or the GenAI operation name classify as an LLM call."""
    token_recordings: int
    """``gen_ai.client.token.usage`` input recordings, from every scope."""
    adk_otel_token_recordings: int
    """Those adk-otel made."""
    duration_recordings: int
    """``gen_ai.client.operation.duration`` recordings, from every scope."""


@dataclass
class Ran:
    spans: list[ReadableSpan]
    counted: Counted

    @property
    def models(self) -> list[ReadableSpan]:
        return [s for s in self.spans if (s.attributes or {}).get(sc.ADK_SPAN_KIND) == "model"]


def _count(spans: list[ReadableSpan], reader: InMemoryMetricReader) -> Counted:
    usage = llm = 0
    for span in spans:
        attributes = span.attributes or {}
        usage += (
            sc.GEN_AI_USAGE_INPUT_TOKENS in attributes or "llm.token_count.prompt" in attributes
        )
        llm += (
            phoenix_kind(attributes) == "LLM"
            or langfuse_type(attributes) == "GENERATION"
            or attributes.get(sc.GEN_AI_OPERATION_NAME) in LLM_OPERATIONS
        )
    recordings = own = 0
    for scope, point in metric_points(reader, "gen_ai.client.token.usage"):
        labels = point.attributes or {}
        if (labels.get("gen_ai.token.type") or labels.get("gen_ai.usage.token_type")) == "input":
            recordings += point.count
            own += point.count if scope == "adk_otel" else 0
    durations = sum(
        point.count for _, point in metric_points(reader, "gen_ai.client.operation.duration")
    )
    return Counted(usage, llm, recordings, own, durations)


async def _run(
    setup: str,
    monkeypatch: pytest.MonkeyPatch,
    *,
    sampler: Any = None,
    global_provider: bool = True,
) -> Ran:
    """Two one-call runs of ``setup`` (``SETUPS``) with adk-otel, its client instrumentations
    on the test's providers for the run's length. Where the anthropic SDK's own tracing is on,
    it records through the global provider: set to the test's, or (``global_provider=False``)
    to none; the other set-ups leave the process's global as it is."""
    api, clients, streaming = SETUPS[setup]
    if "anthropic-sdk" in clients:  # on by default in anthropic 2.x
        monkeypatch.delenv("ANTHROPIC_OPEN_TELEMETRY", raising=False)
    else:
        monkeypatch.setenv("ANTHROPIC_OPEN_TELEMETRY", "false")
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=sampler)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    with (
        api_server(api) as (url, _),
        client_methods_restored(),
        global_tracer_provider(provider if global_provider else None)
        if "anthropic-sdk" in clients
        else contextlib.nullcontext(),
    ):
        instrumentors = _instrumentors(clients, monkeypatch)
        for instrumentor in instrumentors:
            instrumentor.instrument(tracer_provider=provider, meter_provider=meters)
        try:
            runner = adk_otel.instrument(
                InMemoryRunner(
                    agent=LlmAgent(name="clerk", model=_model(api, url, monkeypatch)),
                    app_name="shop",
                ),
                tracer_provider=provider,
                meter_provider=meters,
            )
            await ask_turns(runner, turns=CALLS, streaming=streaming)
        finally:
            for instrumentor in reversed(instrumentors):
                instrumentor.uninstrument()
    spans = list(exporter.get_finished_spans())
    return Ran(spans, _count(spans, reader))


@pytest.mark.parametrize("setup", list(SETUPS))
async def test_each_model_call_counted_once(setup: str, monkeypatch) -> None:
    expected = EXPECTED[setup]
    ran = await _run(setup, monkeypatch)
    counted = ran.counted

    assert counted.usage_spans == counted.llm_spans == CALLS, counted
    assert counted.token_recordings == counted.duration_recordings == CALLS, counted
    usage_elsewhere = (
        expected.metrics_recorded_by is not None
        and expected.metrics_recorded_by not in sc.INFERENCE_RECORDERS_WITHOUT_TOKEN_USAGE
    )
    assert counted.adk_otel_token_recordings == (0 if usage_elsewhere else CALLS)
    _assert_model_spans(ran, expected)


def _assert_model_spans(ran: Ran, expected: Expected) -> None:
    assert len(ran.models) == CALLS
    for span in ran.models:
        attributes = dict(span.attributes or {})
        assert span.status.status_code is StatusCode.OK
        assert attributes.get(sc.ADK_INFERENCE_RECORDED_BY) == expected.recorded_by
        assert attributes.get(sc.ADK_INFERENCE_METRICS_RECORDED_BY) == expected.metrics_recorded_by
        assert attributes.get(sc.ADK_INFERENCE_STOOD_DOWN) == expected.stood_down
        if expected.recorded_by is not None:
            # The ADK layer around the client's inference span, with the call's usage kept.
            assert span.name.startswith("call_llm ")
            assert sc.GEN_AI_OPERATION_NAME not in attributes
            assert attributes[sc.ADK_USAGE_INPUT_TOKENS] > 0
            children = [
                s
                for s in ran.spans
                if s.parent is not None and s.parent.span_id == span.context.span_id
            ]
            assert children, "the client's inference span is the model span's child"
        else:
            assert span.name.startswith("generate_content ")
            assert attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] > 0


@pytest.mark.parametrize(
    "setup",
    [
        "anthropic+traceloop",
        "anthropic+traceloop sse",
        "anthropic+traceloop+sdk",
        "gemini+traceloop",
    ],
)
async def test_a_dropped_trace_still_counts_each_call_once_in_the_metrics(
    setup: str, monkeypatch
) -> None:
    """Traceloop's instrumentations record the token usage on some paths only, so under a
    dropped trace they are asked to record nothing and adk-otel records the metrics."""
    ran = await _run(setup, monkeypatch, sampler=ParentBased(ALWAYS_OFF))
    assert ran.spans == []
    assert ran.counted.token_recordings == CALLS
    assert ran.counted.adk_otel_token_recordings == CALLS
    assert ran.counted.duration_recordings == CALLS


async def test_the_anthropic_sdks_tracing_with_no_provider_set_records_nothing(
    monkeypatch,
) -> None:
    """anthropic 2.x traces each call by default, through the global provider: with none set
    it records into nothing, so adk-otel's model span stays the inference, with the usage."""
    ran = await _run("anthropic+sdk", monkeypatch, global_provider=False)
    assert (ran.counted.usage_spans, ran.counted.llm_spans) == (CALLS, CALLS)
    assert ran.counted.adk_otel_token_recordings == CALLS
    _assert_model_spans(ran, Expected(None, None))
