"""200 concurrent invocations, parallel branches included, on one runner:
every trace complete and separate, nothing lost in the pipeline, nothing left
in adk-otel's bookkeeping."""

from __future__ import annotations

import asyncio

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import adk_otel
from adk_otel.pipeline.provider import build_tracer_provider, exporting_processor

from . import agents

CONCURRENT = 200


def test_concurrent_invocations_make_complete_separate_traces():
    exporter = InMemorySpanExporter()
    provider = build_tracer_provider(exporter=exporter)
    runner = adk_otel.instrument(agents.runner(agents.fan_out()), tracer_provider=provider)
    plugin = adk_otel.plugin_of(runner)

    async def all_at_once() -> list[int]:
        return await asyncio.gather(*(agents.invoke(runner) for _ in range(CONCURRENT)))

    events = asyncio.run(all_at_once())
    provider.force_flush()
    processor = exporting_processor(provider)
    spans = exporter.get_finished_spans()
    provider.shutdown()

    assert all(count > 0 for count in events)
    by_trace = agents.traces(spans)
    assert len(by_trace) == CONCURRENT
    problems = {
        trace_id: found
        for trace_id, members in by_trace.items()
        if (found := agents.trace_problems(members, agents.FAN_OUT_SPANS))
    }
    assert problems == {}
    # Each trace is one invocation: its invocation id on every span.
    for members in by_trace.values():
        assert len({span.attributes.get("adk.invocation.id") for span in members}) == 1
    assert processor.ended == len(spans) == CONCURRENT * sum(agents.FAN_OUT_SPANS.values())
    assert processor.dropped == processor.failed == 0
    assert plugin.open_spans == 0
    assert (
        plugin._runs.by_context == {}
        and plugin._runs.by_invocation == {}
        and plugin._runs.orphans == {}
    )
