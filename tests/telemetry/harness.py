"""Real ADK runs recorded on explicit, test-local tracer and meter providers."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass, field
from typing import Any

from google.adk.agents import BaseAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.models.google_llm import Gemini
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader, Metric
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import adk_otel
from adk_otel.semconv import ADK_SPAN_KIND, INSTRUMENTATION_SCOPE
from adk_otel.testing.model import ScriptedModel

APP = "shop"
USER = "u1"


class ScriptedGemini(ScriptedModel, Gemini):
    """The scripted model with ADK's Gemini class in its MRO (no network)."""

    model: str = "gemini-2.5-flash"


class RichUsageModel(ScriptedModel):
    """Reports cached and reasoning tokens, and cache writes the way ADK's
    Anthropic model does (an attribute outside the usage model's fields);
    streamed chunks carry inflated usage that must never be counted (only
    the final response is)."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        async for response in super().generate_content_async(llm_request, stream):
            usage = types.GenerateContentResponseUsageMetadata(
                prompt_token_count=100,
                candidates_token_count=20,
                cached_content_token_count=60,
                thoughts_token_count=5,
                tool_use_prompt_token_count=3,
            )
            object.__setattr__(usage, "cache_creation_input_tokens", 40)
            if response.partial:
                usage = types.GenerateContentResponseUsageMetadata(
                    prompt_token_count=9999, candidates_token_count=9999
                )
            yield response.model_copy(update={"usage_metadata": usage})


@dataclass
class Recorded:
    """What one test's runs produced."""

    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    runner: InMemoryRunner | None = None
    events: list[Any] = field(default_factory=list)
    error: BaseException | None = None

    @property
    def spans(self) -> list[ReadableSpan]:
        return [
            s
            for s in self.exporter.get_finished_spans()
            if s.instrumentation_scope is not None
            and s.instrumentation_scope.name == INSTRUMENTATION_SCOPE
        ]

    def kind(self, kind: str) -> list[ReadableSpan]:
        return [s for s in self.spans if s.attributes.get(ADK_SPAN_KIND) == kind]

    def one(self, name: str) -> ReadableSpan:
        found = [s for s in self.spans if s.name == name]
        assert len(found) == 1, f"expected one {name!r}, got {[s.name for s in self.spans]}"
        return found[0]

    def metrics(self) -> dict[str, Metric]:
        """adk-otel's metric streams by name (scope ``adk_otel`` only)."""
        data = self.reader.get_metrics_data()
        out: dict[str, Metric] = {}
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                if sm.scope.name == INSTRUMENTATION_SCOPE:
                    for m in sm.metrics:
                        out[m.name] = m
        return out

    def points(self, name: str) -> list[Any]:
        metric = self.metrics().get(name)
        return list(metric.data.data_points) if metric is not None else []

    def point(self, name: str, wanted: dict[str, Any]) -> HistogramDataPoint:
        """The one data point of ``name`` whose attributes include ``wanted``."""
        found = [
            p for p in self.points(name) if all(p.attributes.get(k) == v for k, v in wanted.items())
        ]
        assert len(found) == 1, (
            f"{name} {wanted}: {[dict(p.attributes) for p in self.points(name)]}"
        )
        return found[0]


def providers() -> tuple[TracerProvider, InMemorySpanExporter, MeterProvider, InMemoryMetricReader]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    return tracer_provider, exporter, MeterProvider(metric_readers=[reader]), reader


async def run(
    agent: BaseAgent,
    *messages: str,
    recorded: Recorded | None = None,
    streaming: bool = False,
    plugin_only: bool = False,
    **options: Any,
) -> Recorded:
    """Run ``agent`` once per message (one session), instrumented with fresh
    in-memory providers unless ``recorded`` is given; ``options`` go to
    ``adk_otel.instrument``, or with ``plugin_only`` to an ``AdkOtelPlugin`` handed to
    the runner (the ``--extra_plugins`` path: no runner wrapper, every hook runs)."""
    tracer_provider, exporter, meter_provider, reader = providers()
    if recorded is None:
        recorded = Recorded(exporter=exporter, reader=reader)
        options.setdefault("tracer_provider", tracer_provider)
        options.setdefault("meter_provider", meter_provider)
    if plugin_only:
        plugin = adk_otel.AdkOtelPlugin(**options)
        runner = InMemoryRunner(agent=agent, app_name=APP, plugins=[plugin])
    else:
        runner = adk_otel.instrument(InMemoryRunner(agent=agent, app_name=APP), **options)
    recorded.runner = runner
    session = await runner.session_service.create_session(app_name=APP, user_id=USER)
    config = RunConfig(streaming_mode=StreamingMode.SSE) if streaming else RunConfig()
    for text in messages or ("hello",):
        try:
            async for event in runner.run_async(
                user_id=USER,
                session_id=session.id,
                new_message=types.UserContent(text),
                run_config=config,
            ):
                recorded.events.append(event)
        except Exception as exc:
            recorded.error = exc
    return recorded


def all_strings(spans: list[ReadableSpan]) -> Iterator[tuple[str, str]]:
    """Every string an exported span carries: name, status, attribute and
    event values (sequences flattened), with where it was found."""
    for span in spans:
        yield f"{span.name}: name", span.name
        yield f"{span.name}: status", span.status.description or ""
        for key, value in (span.attributes or {}).items():
            for item in value if isinstance(value, tuple | list) else (value,):
                yield f"{span.name}: {key}", str(item)
        for event in span.events:
            yield f"{span.name}: event {event.name}", event.name
            for key, value in (event.attributes or {}).items():
                for item in value if isinstance(value, tuple | list) else (value,):
                    yield f"{span.name}: event {event.name} {key}", str(item)
