"""One model call, one counted inference, whatever client instrumentation also records it.

ADK's real ``Gemini`` class over HTTP to a local Gemini-API server, with OpenTelemetry's and
OpenInference's google-genai instrumentations on the same provider. What backends add up is
counted over every span of the trace (``gen_ai.usage.*`` as Langfuse and OpenTelemetry readers
sum it, ``llm.token_count.*`` as Phoenix and Langfuse read OpenInference, spans classified as an
LLM call) and over the metrics (``gen_ai.client.token.usage``): each call once, and adk-otel's
model span still the ADK layer above it.
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
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased
from opentelemetry.trace import StatusCode
from telemetry.viewers import (  # tests/ is on the path
    langfuse_trace_input_tokens,
    langfuse_type,
    mlflow_trace_input_tokens,
    mlflow_type,
    phoenix_kind,
    phoenix_project_prompt_tokens,
    phoenix_trace_prompt_tokens,
)

import adk_otel
from adk_otel import semconv as sc

from .api_servers import api_server
from .turns import ask_turns, metric_points

PROMPT_TOKENS = 40  # what the local server reports for each call (api_servers.USAGE)
LLM_OPERATIONS = {"generate_content", "chat", "text_completion"}


@pytest.fixture
def server(monkeypatch) -> Iterator[str]:
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")  # never sent anywhere but loopback
    for name in ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE"):
        monkeypatch.delenv(name, raising=False)
    with api_server("gemini") as (url, _requests):
        yield url


def _client_instrumentors(names: tuple[str, ...]) -> list[Any]:
    found: list[Any] = []
    for name in names:
        if name == "opentelemetry":
            from opentelemetry.instrumentation.google_genai import GoogleGenAiSdkInstrumentor

            found.append(GoogleGenAiSdkInstrumentor())
        else:
            from openinference.instrumentation.google_genai import GoogleGenAIInstrumentor

            found.append(GoogleGenAIInstrumentor())
    return found


async def _run(
    url: str, clients: tuple[str, ...], *, stream: bool, calls: int = 2, sampler: Any = None
) -> tuple[list[ReadableSpan], dict[str, float]]:
    """``calls`` runs of one model call each; the spans and the metric sums by token type."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=sampler)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    instrumentors = _client_instrumentors(clients)
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=provider, meter_provider=meters)
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
        await ask_turns(runner, turns=calls, streaming=stream)
    finally:
        for instrumentor in reversed(instrumentors):  # innermost last, as wrappers unwind
            instrumentor.uninstrument()
    tokens: dict[str, float] = {}
    for _, point in metric_points(reader, "gen_ai.client.token.usage"):
        kind = str((point.attributes or {}).get("gen_ai.token.type"))
        tokens[kind] = tokens.get(kind, 0) + point.sum
    return list(exporter.get_finished_spans()), tokens


def _counted(spans: list[ReadableSpan]) -> tuple[int, int, int]:
    """What backends add up over the trace: input tokens under the GenAI conventions, input
    tokens under OpenInference's, and the spans classified as an LLM call (by Phoenix's and
    Langfuse's rules alike, and by the GenAI operation name)."""
    usage = prompt = llm_calls = 0
    for span in spans:
        attributes = span.attributes or {}
        usage += int(attributes.get(sc.GEN_AI_USAGE_INPUT_TOKENS, 0))  # type: ignore[arg-type]
        prompt += int(attributes.get("llm.token_count.prompt", 0))  # type: ignore[arg-type]
        verdicts = {
            phoenix_kind(attributes) == "LLM",
            langfuse_type(attributes) == "GENERATION",
        }
        assert len(verdicts) == 1, f"the viewers disagree on {span.name}"
        if verdicts.pop() or attributes.get(sc.GEN_AI_OPERATION_NAME) in LLM_OPERATIONS:
            llm_calls += 1
    return usage, prompt, llm_calls


SETUPS = {
    "opentelemetry": ("opentelemetry",),
    "openinference": ("openinference",),
    "both": ("opentelemetry", "openinference"),
}


@pytest.mark.parametrize("stream", [False, True], ids=["generateContent", "stream"])
@pytest.mark.parametrize("setup", list(SETUPS))
async def test_each_model_call_counted_once(server, setup, stream) -> None:
    clients = SETUPS[setup]
    spans, tokens = await _run(server, clients, stream=stream)

    # Exactly what each client instrumentation records of two calls, nothing added: its
    # usage family once per call, one LLM span per call and instrumentation. (Compared
    # with numbers, not with an un-instrumented run in this process: ADK's own telemetry
    # there goes through the process's global provider, shared with other tests.)
    otel, openinference = "opentelemetry" in clients, "openinference" in clients
    assert _counted(spans) == (
        2 * PROMPT_TOKENS if otel else 0,
        2 * PROMPT_TOKENS if openinference else 0,
        2 * len(clients),
    )
    # The metrics count each call once: the client's where it records them, else adk-otel's.
    assert tokens["input"] == 2 * PROMPT_TOKENS

    # adk-otel's model span is the ADK layer around the inference, with its detail.
    models = [s for s in spans if (s.attributes or {}).get(sc.ADK_SPAN_KIND) == "model"]
    assert len(models) == 2
    for span in models:
        attributes = dict(span.attributes or {})
        assert span.name == "call_llm gemini-2.5-flash"
        assert span.status.status_code is StatusCode.OK
        assert attributes[sc.OPENINFERENCE_SPAN_KIND] == sc.OI_CHAIN
        assert (phoenix_kind(attributes), langfuse_type(attributes)) == ("CHAIN", "CHAIN")
        assert sc.GEN_AI_OPERATION_NAME not in attributes
        assert attributes[sc.GEN_AI_REQUEST_MODEL] == "gemini-2.5-flash"
        assert attributes[sc.ADK_USAGE_INPUT_TOKENS] == PROMPT_TOKENS
        # Where both are on, the one that also records the metrics is named.
        named = "opentelemetry" if "opentelemetry" in clients else "openinference"
        assert attributes[sc.ADK_INFERENCE_RECORDED_BY] == f"{named}-instrumentation-google-genai"
        children = [
            s for s in spans if s.parent is not None and s.parent.span_id == span.context.span_id
        ]
        assert children, "the client instrumentation's inference span is the model span's child"
    # The roll-ups on the agent and invocation still total the run's usage.
    invocations = [s for s in spans if (s.attributes or {}).get(sc.ADK_SPAN_KIND) == "invocation"]
    assert [(s.attributes or {}).get(sc.ADK_USAGE_INPUT_TOKENS) for s in invocations] == [
        PROMPT_TOKENS,
        PROMPT_TOKENS,
    ]


# What each viewer counts for two model calls of 40 prompt tokens, by its own rules
# (tests/telemetry/viewers.py; the same numbers were read from a real Phoenix 20.26.1 and
# MLflow 3.17.2, docs/collector.md): LLM calls (Phoenix's LLM spans, Langfuse's
# generations, MLflow's LLM spans) and prompt tokens (Phoenix per trace and per
# project, Langfuse per trace, MLflow per trace). With both client instrumentations on,
# each writes its own LLM span with usage, nested in the other, as without adk-otel:
# Phoenix's project total and MLflow skip nested usage, Phoenix's trace view and
# Langfuse add it up.
VIEWER_COUNTS = {
    "alone": ((2, 2, 2), (80, 80, 80, 80)),
    "opentelemetry": ((2, 2, 2), (80, 80, 80, 80)),
    "openinference": ((2, 2, 2), (80, 80, 80, 80)),
    "both": ((4, 4, 4), (160, 80, 160, 80)),
}


@pytest.mark.parametrize("setup", list(VIEWER_COUNTS))
async def test_what_each_viewer_counts(server, setup) -> None:
    spans, _ = await _run(server, SETUPS.get(setup, ()), stream=False)
    calls = tuple(
        sum(classify(s.attributes or {}) == kind for s in spans)
        for classify, kind in (
            (phoenix_kind, "LLM"),
            (langfuse_type, "GENERATION"),
            (mlflow_type, "LLM"),
        )
    )
    tokens = (
        phoenix_trace_prompt_tokens(spans),
        phoenix_project_prompt_tokens(spans),
        langfuse_trace_input_tokens(spans),
        mlflow_trace_input_tokens(spans),
    )
    assert (calls, tokens) == VIEWER_COUNTS[setup]


async def test_without_a_client_instrumentation_the_model_span_is_the_inference(server) -> None:
    spans, tokens = await _run(server, (), stream=False)
    assert _counted(spans) == (2 * PROMPT_TOKENS, 0, 2)
    assert tokens["input"] == 2 * PROMPT_TOKENS
    (first, _) = [s for s in spans if (s.attributes or {}).get(sc.ADK_SPAN_KIND) == "model"]
    assert first.name == "generate_content gemini-2.5-flash"
    assert sc.ADK_INFERENCE_RECORDED_BY not in (first.attributes or {})


async def test_an_instrumentation_turned_off_is_seen_at_the_next_call(server) -> None:
    """Whether a client instrumentation records is asked at each call, not once."""
    await _run(server, ("opentelemetry",), stream=False, calls=1)
    spans, tokens = await _run(server, (), stream=False, calls=1)
    assert _counted(spans) == (PROMPT_TOKENS, 0, 1)
    assert tokens["input"] == PROMPT_TOKENS


@pytest.mark.parametrize("setup", list(SETUPS))
async def test_a_sampled_out_trace_counts_each_call_once_in_the_metrics(server, setup) -> None:
    """The sampler drops the trace, not the metrics: the client instrumentation still records
    its own, so adk-otel, on the cheap path of a dropped trace, must still leave them to it."""
    spans, tokens = await _run(server, SETUPS[setup], stream=False, sampler=ParentBased(ALWAYS_OFF))
    assert spans == []
    assert tokens["input"] == 2 * PROMPT_TOKENS
