"""``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` and the metrics:
the current conventions' instruments instead of the earlier ones (and only
then), with the same values, and still never a stream recorded twice
alongside ADK's own."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.agents import LlmAgent
from opentelemetry.sdk.metrics.export import Histogram, Sum

from adk_otel import semconv as sc
from adk_otel.ledger import metrics as adk_metrics
from adk_otel.pipeline.stability import LATEST_GEN_AI, OPT_IN_ENV
from adk_otel.testing.model import call, fail, reply, stream

from .harness import Recorded, RichUsageModel, ScriptedGemini, run
from .test_metrics import OVERLAPPING, _streams_with_global_provider, lookup

EARLIER_MODEL_STREAMS = (
    sc.METRIC_CLIENT_OPERATION_DURATION,
    sc.METRIC_CLIENT_TOKEN_USAGE,
    sc.METRIC_CLIENT_TIME_TO_FIRST_CHUNK,
    sc.METRIC_CLIENT_TIME_PER_OUTPUT_CHUNK,
)
USAGE_COUNTERS = {
    sc.METRIC_USAGE_INPUT_TOKENS: sc.GEN_AI_USAGE_INPUT_TOKENS,
    sc.METRIC_USAGE_OUTPUT_TOKENS: sc.GEN_AI_USAGE_OUTPUT_TOKENS,
    sc.METRIC_USAGE_CACHE_READ_INPUT_TOKENS: sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
    sc.METRIC_USAGE_CACHE_WRITE_INPUT_TOKENS: sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS,
    sc.METRIC_USAGE_REASONING_OUTPUT_TOKENS: sc.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
}
PER_CALL_HISTOGRAMS = {
    sc.METRIC_OPERATION_INPUT_TOKENS: sc.GEN_AI_USAGE_INPUT_TOKENS,
    sc.METRIC_OPERATION_OUTPUT_TOKENS: sc.GEN_AI_USAGE_OUTPUT_TOKENS,
}


def clerk(model: Any) -> LlmAgent:
    return LlmAgent(name="clerk", model=model, tools=[lookup])


async def tool_then_reply(opt_in: str | None, monkeypatch: pytest.MonkeyPatch) -> Recorded:
    if opt_in is None:
        monkeypatch.delenv(OPT_IN_ENV, raising=False)
    else:
        monkeypatch.setenv(OPT_IN_ENV, opt_in)
    return await run(clerk(RichUsageModel(script=[call("lookup", {"sku": "A"}), reply("done")])))


def _model_spans(rec: Recorded) -> list[Any]:
    return rec.kind(sc.SpanKind.MODEL.value)


async def test_by_default_the_earlier_instruments_only(monkeypatch: pytest.MonkeyPatch) -> None:
    rec = await tool_then_reply(None, monkeypatch)
    found = rec.metrics()
    assert set(found) == {
        sc.METRIC_CLIENT_OPERATION_DURATION,
        sc.METRIC_CLIENT_TOKEN_USAGE,
        sc.METRIC_INVOKE_AGENT_DURATION,
        sc.METRIC_EXECUTE_TOOL_DURATION,
        sc.METRIC_INVOCATION_COUNT,
    }
    inputs = rec.point(sc.METRIC_CLIENT_TOKEN_USAGE, {sc.GEN_AI_TOKEN_TYPE: "input"})
    spans = _model_spans(rec)
    assert inputs.count == len(spans) == 2
    assert inputs.sum == sum(int(s.attributes[sc.GEN_AI_USAGE_INPUT_TOKENS]) for s in spans)


async def test_opting_in_records_only_the_current_instruments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rec = await tool_then_reply(f"http, {LATEST_GEN_AI}", monkeypatch)
    found = rec.metrics()
    assert set(found) == {
        sc.METRIC_CLIENT_INFERENCE_DURATION,
        *USAGE_COUNTERS,
        *PER_CALL_HISTOGRAMS,
        sc.METRIC_INVOKE_AGENT_DURATION,
        sc.METRIC_EXECUTE_TOOL_DURATION,
        sc.METRIC_INVOCATION_COUNT,
    }
    histograms = {
        sc.METRIC_CLIENT_INFERENCE_DURATION: ("s", adk_metrics.DURATION_BUCKETS),
        sc.METRIC_OPERATION_INPUT_TOKENS: ("{token}", adk_metrics.TOKEN_BUCKETS),
        sc.METRIC_OPERATION_OUTPUT_TOKENS: ("{token}", adk_metrics.TOKEN_BUCKETS),
        sc.METRIC_INVOKE_AGENT_DURATION: ("s", adk_metrics.AGENT_DURATION_BUCKETS),
        sc.METRIC_EXECUTE_TOOL_DURATION: ("s", adk_metrics.DURATION_BUCKETS),
    }
    for name, (unit, buckets) in histograms.items():
        assert isinstance(found[name].data, Histogram), name
        assert found[name].unit == unit
        for point in found[name].data.data_points:
            assert tuple(point.explicit_bounds) == tuple(float(b) for b in buckets)
    for name in USAGE_COUNTERS:
        data = found[name].data
        assert isinstance(data, Sum) and data.is_monotonic, name
        assert found[name].unit == "{token}"


async def test_opted_in_values_equal_the_model_calls_usage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rec = await tool_then_reply(LATEST_GEN_AI, monkeypatch)
    calls = _model_spans(rec)
    assert len(calls) == 2
    dims = {
        sc.GEN_AI_OPERATION_NAME: "generate_content",
        sc.GEN_AI_REQUEST_MODEL: "scripted-model",
    }
    for name, usage in USAGE_COUNTERS.items():
        (point,) = rec.points(name)
        assert point.value == sum(int(s.attributes[usage]) for s in calls), name
        assert point.attributes[sc.GEN_AI_TOKEN_MODALITY] == "unknown"
        assert sc.GEN_AI_TOKEN_TYPE not in point.attributes
        assert all(point.attributes[k] == v for k, v in dims.items())
    assert rec.points(sc.METRIC_USAGE_CACHE_WRITE_INPUT_TOKENS)[0].value == 80
    for name, usage in PER_CALL_HISTOGRAMS.items():
        (point,) = rec.points(name)
        assert point.count == 2, name
        assert point.sum == sum(int(s.attributes[usage]) for s in calls), name
        assert sc.GEN_AI_TOKEN_MODALITY not in point.attributes
    (duration,) = rec.points(sc.METRIC_CLIENT_INFERENCE_DURATION)
    assert duration.count == 2
    assert all(duration.attributes[k] == v for k, v in dims.items())


async def test_opted_in_model_failure_carries_error_type(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(OPT_IN_ENV, LATEST_GEN_AI)
    rec = await run(clerk(ScriptedGemini(script=[fail(RuntimeError("quota"))])))
    (point,) = rec.points(sc.METRIC_CLIENT_INFERENCE_DURATION)
    assert point.attributes[sc.ERROR_TYPE] == "RuntimeError"
    assert point.attributes[sc.GEN_AI_PROVIDER_NAME] == "gcp.gemini"
    assert not rec.points(sc.METRIC_CLIENT_OPERATION_DURATION)


async def test_opted_in_chunk_metrics_take_the_inference_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(OPT_IN_ENV, LATEST_GEN_AI)
    rec = await run(clerk(ScriptedGemini(script=[stream("in ", "stock", "!")])), streaming=True)
    found = rec.metrics()
    assert not set(EARLIER_MODEL_STREAMS) & set(found)
    (first,) = rec.points(sc.METRIC_CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK)
    assert first.count == 1
    assert first.sum == pytest.approx(
        rec.one("generate_content gemini-2.5-flash").attributes[
            sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK
        ]
    )
    (gaps,) = rec.points(sc.METRIC_CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK)
    assert gaps.count >= 2


# -- beside ADK's own metrics (which keep the earlier names) ------------------------------------


def test_opted_in_adk_meter_is_switched_off_where_adk_otel_records() -> None:
    streams = _streams_with_global_provider(
        ADK_OTEL_KEEP_ADK_METRICS="", OTEL_SEMCONV_STABILITY_OPT_IN=LATEST_GEN_AI
    )
    assert sc.ADK_SCOPE not in {scope for scopes in streams.values() for scope in scopes}
    for name in (sc.METRIC_CLIENT_OPERATION_DURATION, sc.METRIC_CLIENT_TOKEN_USAGE):
        assert name not in streams
    for name in (
        sc.METRIC_CLIENT_INFERENCE_DURATION,
        sc.METRIC_USAGE_INPUT_TOKENS,
        sc.METRIC_INVOKE_AGENT_DURATION,
        sc.METRIC_EXECUTE_TOOL_DURATION,
    ):
        assert streams.get(name) == [sc.INSTRUMENTATION_SCOPE], (name, streams)


def test_opted_in_with_kept_adk_metrics_no_stream_is_recorded_twice() -> None:
    streams = _streams_with_global_provider(
        ADK_OTEL_KEEP_ADK_METRICS="true", OTEL_SEMCONV_STABILITY_OPT_IN=LATEST_GEN_AI
    )
    # Whatever ADK records itself (2.15 also the current names), one scope a name.
    twice = {name: scopes for name, scopes in streams.items() if len(scopes) > 1}
    assert not twice, twice
    # ADK's streams, in the earlier names, stay ADK's alone.
    for name in OVERLAPPING:
        assert streams.get(name) == [sc.ADK_SCOPE], (name, streams)
    # The current names are recorded all the same: by ADK where its meter has
    # them, else by adk-otel.
    for name in (
        sc.METRIC_CLIENT_INFERENCE_DURATION,
        sc.METRIC_USAGE_INPUT_TOKENS,
        sc.METRIC_USAGE_OUTPUT_TOKENS,
        sc.METRIC_OPERATION_INPUT_TOKENS,
        sc.METRIC_OPERATION_OUTPUT_TOKENS,
    ):
        assert streams.get(name) in ([sc.ADK_SCOPE], [sc.INSTRUMENTATION_SCOPE]), (name, streams)
    assert streams[sc.METRIC_INVOCATION_COUNT] == [sc.INSTRUMENTATION_SCOPE]
