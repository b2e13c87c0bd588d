"""Streamed model calls: the time to first chunk on the model span, and the
conventions' chunk metrics (ADK calls after_model once per partial chunk)."""

from __future__ import annotations

import pytest
from google.adk.agents import LlmAgent

from adk_otel import metrics as adk_metrics
from adk_otel import semconv as sc
from adk_otel.testing.model import reply, stream

from .harness import ScriptedGemini, run

DIMENSIONS = {
    sc.GEN_AI_OPERATION_NAME: "generate_content",
    sc.GEN_AI_PROVIDER_NAME: "gcp.gemini",
    sc.GEN_AI_REQUEST_MODEL: "gemini-2.5-flash",
    sc.GEN_AI_RESPONSE_MODEL: "scripted-model-001",
}
LATENCY = 0.05
"""The scripted model's delay before its first chunk (a stand-in for the
network), so the measured time to first chunk has a known floor."""


def clerk(*script: object) -> LlmAgent:
    return LlmAgent(name="clerk", model=ScriptedGemini(script=list(script)))


async def test_a_streamed_call_has_its_time_to_first_chunk_and_chunk_metrics() -> None:
    rec = await run(clerk(stream("in ", "stock", "!", delay=LATENCY)), streaming=True)
    (span,) = rec.kind("model")
    ttfc = span.attributes[sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK]
    assert isinstance(ttfc, float)
    assert LATENCY <= ttfc < (span.end_time - span.start_time) / 1e9
    assert span.attributes[sc.ADK_MODEL_CHUNKS] == 3

    first = rec.point(sc.METRIC_CLIENT_TIME_TO_FIRST_CHUNK, DIMENSIONS)
    assert (first.count, first.sum) == (1, pytest.approx(ttfc, abs=0.005))
    assert dict(first.attributes) == DIMENSIONS
    per_chunk = rec.point(sc.METRIC_CLIENT_TIME_PER_OUTPUT_CHUNK, DIMENSIONS)
    assert per_chunk.count == 2  # every chunk after the first
    assert 0 <= per_chunk.sum < ttfc
    metrics = rec.metrics()
    for name in (sc.METRIC_CLIENT_TIME_TO_FIRST_CHUNK, sc.METRIC_CLIENT_TIME_PER_OUTPUT_CHUNK):
        assert metrics[name].unit == "s"
        (point,) = metrics[name].data.data_points
        assert tuple(point.explicit_bounds) == adk_metrics.DURATION_BUCKETS


async def test_a_call_that_is_not_streamed_has_neither() -> None:
    rec = await run(clerk(reply("in stock")))
    (span,) = rec.kind("model")
    assert sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK not in span.attributes
    assert not rec.points(sc.METRIC_CLIENT_TIME_TO_FIRST_CHUNK)
    assert not rec.points(sc.METRIC_CLIENT_TIME_PER_OUTPUT_CHUNK)


async def test_a_streamed_call_with_one_final_response_is_its_own_first_chunk() -> None:
    rec = await run(clerk(reply("in stock", delay=LATENCY)), streaming=True)
    (span,) = rec.kind("model")
    assert span.attributes[sc.GEN_AI_REQUEST_STREAM] is True
    assert span.attributes[sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] >= LATENCY
    assert rec.point(sc.METRIC_CLIENT_TIME_TO_FIRST_CHUNK, DIMENSIONS).count == 1
    assert not rec.points(sc.METRIC_CLIENT_TIME_PER_OUTPUT_CHUNK)


async def test_without_a_meter_provider_the_span_still_has_it() -> None:
    rec = await run(clerk(stream("a", "b", delay=LATENCY)), streaming=True, meter_provider=None)
    (span,) = rec.kind("model")
    assert span.attributes[sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] >= LATENCY
    assert not rec.metrics()
