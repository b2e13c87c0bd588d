"""Hand-built adk-otel span trees on a real SDK tracer provider.

A fake clock (one tick = 1 ms) makes start order, sibling order and
durations exact, so rendered trees can be compared as text.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Span, Status, StatusCode

from adk_otel import semconv as sc

T0 = 1_700_000_000_000_000_000
TICK = 1_000_000

_NAME = {
    sc.SpanKind.INVOCATION: ("invocation", sc.ADK_APP_NAME),
    sc.SpanKind.AGENT: (sc.OP_INVOKE_AGENT, sc.GEN_AI_AGENT_NAME),
    sc.SpanKind.MODEL: (sc.OP_GENERATE_CONTENT, sc.GEN_AI_REQUEST_MODEL),
    sc.SpanKind.TOOL: (sc.OP_EXECUTE_TOOL, sc.GEN_AI_TOOL_NAME),
}


MODEL_USAGE = {
    sc.GEN_AI_USAGE_INPUT_TOKENS: 12,
    sc.GEN_AI_USAGE_OUTPUT_TOKENS: 7,
    sc.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",),
}


class TraceBuilder:
    """``with b.span(SpanKind.AGENT, "root"): ...`` builds ``invoke_agent root``."""

    def __init__(self, provider: TracerProvider | None = None) -> None:
        self.exporter = InMemorySpanExporter()
        if provider is None:
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.provider = provider
        self.tracer = provider.get_tracer(sc.INSTRUMENTATION_SCOPE, "0.1.0")
        self.now = T0

    def tick(self) -> int:
        self.now += TICK
        return self.now

    @contextmanager
    def span(
        self,
        layer: sc.SpanKind,
        label: str,
        *,
        outcome: sc.Outcome = sc.Outcome.OK,
        error: BaseException | None = None,
        end: bool = True,
        attributes: dict[str, Any] | None = None,
    ) -> Iterator[Span]:
        prefix, key = _NAME[layer]
        kind = trace.SpanKind.CLIENT if layer is sc.SpanKind.MODEL else trace.SpanKind.INTERNAL
        span = self.tracer.start_span(
            f"{prefix} {label}",
            kind=kind,
            attributes={sc.ADK_SPAN_KIND: layer.value, key: label, **(attributes or {})},
            start_time=self.tick(),
        )
        with trace.use_span(span, end_on_exit=False):
            yield span
        if not end:
            return
        span.set_attribute(sc.ADK_OUTCOME, outcome.value)
        if error is not None:
            span.set_attribute(sc.ERROR_TYPE, type(error).__name__)
            span.record_exception(error, timestamp=self.tick())
            span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
        elif outcome is sc.Outcome.OK:
            span.set_status(Status(StatusCode.OK))
        span.end(end_time=self.tick())

    def finished(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())


def build_shop(builder: TraceBuilder | None = None, *, tool_error: bool = True) -> TraceBuilder:
    """invocation shop > invoke_agent root > [generate_content, execute_tool lookup]."""
    b = builder or TraceBuilder()
    error = ValueError("no such sku") if tool_error else None
    outcome = sc.Outcome.ERROR if tool_error else sc.Outcome.OK
    with (
        b.span(sc.SpanKind.INVOCATION, "shop", outcome=outcome, error=error),
        b.span(sc.SpanKind.AGENT, "root", outcome=outcome, error=error),
    ):
        with b.span(sc.SpanKind.MODEL, "scripted-model", attributes=MODEL_USAGE):
            pass
        with b.span(sc.SpanKind.TOOL, "lookup", outcome=outcome, error=error):
            pass
    return b
