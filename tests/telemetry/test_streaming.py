"""Streamed model calls: the time to first chunk on the model span, and the
conventions' chunk metrics (ADK calls after_model once per partial chunk)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator

import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types

import adk_otel
from adk_otel import semconv as sc
from adk_otel.ledger import metrics as adk_metrics
from adk_otel.testing.model import reply, stream

from .harness import APP, USER, Recorded, ScriptedGemini, providers, run

DIMENSIONS = {
    sc.GEN_AI_OPERATION_NAME: "generate_content",
    sc.GEN_AI_PROVIDER_NAME: "gcp.gemini",
    sc.GEN_AI_REQUEST_MODEL: "gemini-2.5-flash",
    sc.GEN_AI_RESPONSE_MODEL: "scripted-model-001",
    # Where ADK's Gemini class sends its requests by default.
    sc.SERVER_ADDRESS: "generativelanguage.googleapis.com",
    sc.SERVER_PORT: 443,
}
LATENCY = 0.05
"""The scripted model's delay before its first chunk (a stand-in for the
network), so the measured time to first chunk has a known floor."""


@pytest.fixture(autouse=True)
def _gemini_api(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_GENAI_USE_ENTERPRISE",
        "GOOGLE_GEMINI_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)


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
    # Measured between chunks, not from the start: the gaps fit in what is left
    # of the span after the first chunk (a bound no pause on a busy machine breaks;
    # 5 ms for the span's wall clock against the chunks' monotonic one).
    after_first = (span.end_time - span.start_time) / 1e9 - ttfc
    assert 0 <= per_chunk.sum <= after_first + 0.005
    # The call's duration has the same dimensions, server.address and .port included.
    assert rec.point(sc.METRIC_CLIENT_OPERATION_DURATION, DIMENSIONS).count == 1
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


# -- calls that do not finish: no chunk metrics (the rule of the duration metric) --


class StallingGemini(ScriptedGemini):
    """Streams two chunks, then waits for a third that never comes."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        for text in ("in ", "stock"):
            await asyncio.sleep(0)
            yield LlmResponse(
                content=types.Content(role="model", parts=[types.Part(text=text)]), partial=True
            )
        await asyncio.Event().wait()
        yield LlmResponse()  # never reached


async def stalled_run(*, close: bool) -> Recorded:
    """A streamed run stopped after its two chunks arrived: the consumer closes
    the event stream (``close``), else the task running it is cancelled."""
    tracer_provider, exporter, meter_provider, reader = providers()
    recorded = Recorded(exporter=exporter, reader=reader)
    agent = LlmAgent(name="clerk", model=StallingGemini())
    runner = adk_otel.instrument(
        InMemoryRunner(agent=agent, app_name=APP),
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
    )
    session = await runner.session_service.create_session(app_name=APP, user_id=USER)
    both_chunks = asyncio.Event()

    async def consume() -> None:
        async with contextlib.aclosing(
            runner.run_async(
                user_id=USER,
                session_id=session.id,
                new_message=types.UserContent("stock?"),
                run_config=RunConfig(streaming_mode=StreamingMode.SSE),
            )
        ) as events:
            async for event in events:
                recorded.events.append(event)
                if len(recorded.events) == 2:
                    if close:
                        return
                    both_chunks.set()

    task = asyncio.create_task(consume())
    if close:
        await task
    else:
        await both_chunks.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    return recorded


@pytest.mark.parametrize(
    ("close", "outcome"), [(True, "incomplete"), (False, "cancelled")], ids=["closed", "cancelled"]
)
async def test_a_stream_that_does_not_finish_records_no_chunk_metrics(
    close: bool, outcome: str
) -> None:
    rec = await stalled_run(close=close)
    (span,) = rec.kind("model")
    assert span.attributes[sc.ADK_OUTCOME] == outcome
    # The first chunk did arrive: the span has its time to first chunk...
    assert span.attributes[sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] > 0
    # ...but a call that did not finish counts in no distribution, like its duration.
    assert not rec.points(sc.METRIC_CLIENT_TIME_TO_FIRST_CHUNK)
    assert not rec.points(sc.METRIC_CLIENT_TIME_PER_OUTPUT_CHUNK)
    assert not rec.points(sc.METRIC_CLIENT_OPERATION_DURATION)
