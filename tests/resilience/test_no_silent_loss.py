"""A burst of spans larger than the SDK's default queue (2048) while the
exporter is busy: adk-otel's default pipeline exports every span, where the
SDK's default ``BatchSpanProcessor`` drops some; and when spans are dropped
anyway, the user is told how many."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

import adk_otel
from adk_otel.pipeline import shutdown
from adk_otel.pipeline.export import ExportingProcessor
from adk_otel.pipeline.provider import build_tracer_provider, exporting_processor
from adk_otel.pipeline.shutdown import flush_and_report

from . import agents

RUNS = 330
SPANS_PER_RUN = 8
BURST = RUNS * SPANS_PER_RUN  # 2640 spans: more than 2048 queued + 512 in one export
assert BURST > 2048 + 512


class HeldExporter(SpanExporter):
    """Blocks every export until released, like a collector that is slow
    while the burst happens; then takes everything."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.entered.set()
        self.release.wait(60)
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


def burst(provider: TracerProvider, exporter: HeldExporter) -> None:
    runner = adk_otel.instrument(agents.runner(agents.sequential()), tracer_provider=provider)

    async def runs() -> None:
        await asyncio.gather(*(agents.invoke(runner) for _ in range(RUNS)))

    try:
        asyncio.run(runs())
    finally:
        exporter.release.set()
    provider.force_flush()
    provider.shutdown()


def test_burst_is_fully_exported_by_the_default_pipeline(monkeypatch, caplog):
    for name in ("OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"):
        monkeypatch.delenv(name, raising=False)
    caplog.set_level(logging.WARNING)
    exporter = HeldExporter()
    provider = build_tracer_provider(exporter=exporter)
    processor = exporting_processor(provider)
    burst(provider, exporter)
    assert exporter.entered.is_set()  # the exporter really was busy during the burst
    assert exporter.spans == processor.ended == BURST
    assert processor.dropped == processor.failed == processor.unsent == 0
    assert not [r for r in caplog.records if r.name.startswith(("adk_otel", "opentelemetry"))]


def test_the_sdk_default_processor_drops_the_same_burst():
    """The reason for adk-otel's defaults, shown on the same burst."""
    exporter = HeldExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    burst(provider, exporter)
    assert exporter.spans < BURST


def test_dropped_spans_are_counted_and_reported(monkeypatch, caplog):
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "256")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "64")
    caplog.set_level(logging.WARNING)
    # Also counting the drops of providers adk-otel did not build, as a server's
    # shutdown report does (once on, for the rest of the process): this one's
    # drops are counted by its own processor, not a second time there.
    shutdown.count_sdk_drops()
    sdk_drops_before = shutdown.SDK_DROPS.dropped
    exporter = HeldExporter()
    provider = build_tracer_provider(exporter=exporter)
    processor = exporting_processor(provider)
    burst(provider, exporter)
    assert shutdown.SDK_DROPS.dropped == sdk_drops_before
    # At most one queue plus one batch survive the hold; the rest is counted.
    assert processor.dropped >= BURST - 256 - 64
    assert exporter.spans + processor.dropped == processor.ended == BURST
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    # One warning when dropping starts (the next would come a minute later),
    # one with the count at shutdown; the SDK's own "Queue full" line is held back.
    assert len(messages) == 2, messages
    assert "the span export queue is full (256 spans)" in messages[0]
    assert f"{processor.dropped} of {BURST} span(s) were not exported" in messages[1]
    assert f"{processor.dropped} dropped because the export queue was full" in messages[1]


@pytest.mark.parametrize("report", ["shutdown", "exit_flush"])
def test_a_span_seen_dropped_but_exported_after_all_counts_once(report, caplog):
    """``on_end`` counts a drop when it sees the queue full, before the SDK
    appends the span; the export thread can empty the queue in between, and
    then the span is exported too. Here the check sees the queue full at one
    span (its capacity lowered) while the SDK's holds eight: every span is
    exported, and neither the processor's shutdown nor the flush at exit
    reports any of them dropped."""
    caplog.set_level(logging.INFO)
    exporter = HeldExporter()
    exporter.release.set()
    processor = ExportingProcessor(
        exporter,
        max_queue_size=8,
        schedule_delay_millis=60_000,
        max_export_batch_size=8,
        shutdown_timeout=5,
    )
    processor.capacity = 1  # what the check sees; the SDK's queue takes 8
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("test")
    for _ in range(5):
        tracer.start_span("span").end()
    assert processor.dropped == 4  # as the check saw it
    if report == "shutdown":
        provider.shutdown()
    else:
        flush_and_report(provider, ended=5, cut_off=0)
        assert any("all 5 span(s) exported" in r.getMessage() for r in caplog.records)
    assert exporter.spans == processor.ended == 5
    assert processor.dropped == 0 and processor.lost == 0
    assert not [r for r in caplog.records if "were not exported" in r.getMessage()]
    provider.shutdown()
