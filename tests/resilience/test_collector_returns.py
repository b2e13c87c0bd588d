"""The collector is unavailable, then comes back: spans produced after it
returns are delivered, and the pipeline never raised into the agent."""

from __future__ import annotations

import asyncio
import logging

import pytest

import adk_otel
from adk_otel.pipeline.provider import build_tracer_provider, exporting_processor

from . import agents
from .conftest import endpoint_env

SPANS_PER_RUN = 8


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_spans_after_the_collector_returns_are_delivered(protocol, receiver, monkeypatch, caplog):
    caplog.set_level(logging.WARNING)
    url = receiver.grpc_endpoint if protocol == "grpc" else receiver.http_endpoint
    for name, value in endpoint_env(protocol, url).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "1")
    receiver.set_behaviour("unavailable")
    provider = build_tracer_provider()
    processor = exporting_processor(provider)
    runner = adk_otel.instrument(agents.runner(agents.sequential()), tracer_provider=provider)
    try:
        asyncio.run(agents.invoke(runner))  # produced while the collector is down
        receiver.wait_for_attempts(1, timeout=30)

        receiver.set_behaviour("ok")
        for _ in range(2):
            asyncio.run(agents.invoke(runner))  # produced after it is back
        provider.force_flush()
        # Both runs made after the collector returned arrive whole (the first
        # run's spans may or may not get through on a retry).
        spans = receiver.wait_for(lambda got: _complete_traces(got) >= 2, timeout=30)
    finally:
        provider.shutdown()
    assert processor.exported == len(spans)
    assert processor.exported + processor.failed + processor.dropped == processor.ended
    failures = [r for r in caplog.records if "could not export" in r.getMessage()]
    assert len(failures) <= 1
    if processor.failed:  # a failure was reported, and so was the recovery
        assert any("works again" in r.getMessage() for r in caplog.records)


def _complete_traces(spans) -> int:
    by_trace: dict[bytes, list] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    return sum(
        1
        for members in by_trace.values()
        if len(members) == SPANS_PER_RUN
        and sum(1 for span in members if span.name.startswith("invocation ")) == 1
    )
