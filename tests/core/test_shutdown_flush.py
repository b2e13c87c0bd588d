"""The shutdown flush is bounded and says what it could not send; the SDK's
batch-queue drops are counted; each process gets its own instance id."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Sequence

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from adk_otel.pipeline import shutdown
from adk_otel.pipeline.instance import SERVICE_INSTANCE_ID, with_instance_id
from adk_otel.pipeline.provider import build_tracer_provider


class _Held(SpanExporter):
    """An exporter that blocks until released: a collector that never answers."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.release.wait(30)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.release.set()


def test_the_flush_gives_up_after_its_timeout_and_counts_what_is_still_queued():
    exporter = _Held()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter, max_export_batch_size=1))
    tracer = provider.get_tracer("t")
    try:
        for _ in range(5):
            tracer.start_span("s").end()
        result = shutdown.flush(provider, 0.3)
        assert not result.finished
        assert result.seconds < 5
        assert result.queued is not None and result.queued >= 3
    finally:
        exporter.release.set()
        provider.shutdown()


def test_a_flush_that_finishes_says_so():
    provider = TracerProvider()
    result = shutdown.flush(provider, 2.0)
    assert result.finished and result.queued == 0


def test_the_sdks_queue_full_lines_become_a_count(caplog):
    shutdown.count_sdk_drops()
    before = shutdown.SDK_DROPS.dropped
    exporter = _Held()
    provider = TracerProvider()
    provider.add_span_processor(
        BatchSpanProcessor(exporter, max_queue_size=2, max_export_batch_size=1)
    )
    tracer = provider.get_tracer("t")
    try:
        with caplog.at_level(logging.WARNING):
            for _ in range(20):
                tracer.start_span("s").end()
        dropped = shutdown.SDK_DROPS.dropped - before
        assert dropped >= 10
        assert not [r for r in caplog.records if "Queue full" in r.getMessage()]
    finally:
        exporter.release.set()
        provider.shutdown()


def test_a_provider_adk_otel_builds_has_an_instance_id(monkeypatch):
    """A random UUID, one per process (opentelemetry-sdk 1.44 makes one itself,
    once per process; before, adk-otel does): tests/serving checks two workers
    differ."""
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    value = build_tracer_provider().resource.attributes[SERVICE_INSTANCE_ID]
    assert uuid.UUID(str(value))
    assert with_instance_id(Resource({})).attributes[SERVICE_INSTANCE_ID]


def test_an_instance_id_the_user_set_is_kept(monkeypatch):
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "service.instance.id=pod-7")
    assert build_tracer_provider().resource.attributes[SERVICE_INSTANCE_ID] == "pod-7"
    assert (
        with_instance_id(Resource({SERVICE_INSTANCE_ID: "x"})).attributes[SERVICE_INSTANCE_ID]
        == "x"
    )
