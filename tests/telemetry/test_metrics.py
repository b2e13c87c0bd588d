"""Metrics from real runs: names, units, bucket advice, attributes, errors, and
no stream recorded twice alongside ADK's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.tools.agent_tool import AgentTool
from opentelemetry import metrics as otel_metrics

from adk_otel import plugin_of, settings
from adk_otel import semconv as sc
from adk_otel.ledger import metrics as adk_metrics
from adk_otel.testing.model import ScriptedModel, call, fail, reply

from .harness import Recorded, ScriptedGemini, run


class ToolBroke(RuntimeError):
    pass


def lookup(sku: str) -> dict[str, Any]:
    """Stock level for a SKU; raises for 'bad'."""
    if sku == "bad":
        raise ToolBroke(sku)
    return {"stock": 3}


def clerk(*script: Any, **options: Any) -> LlmAgent:
    model = options.pop("model", None) or ScriptedModel(script=list(script))
    return LlmAgent(name="clerk", model=model, tools=[lookup], **options)


async def test_streams_units_and_bucket_advice() -> None:
    rec = await run(clerk(call("lookup", {"sku": "A"}), reply("done")))
    expected = {
        sc.METRIC_CLIENT_OPERATION_DURATION: ("s", adk_metrics.DURATION_BUCKETS),
        sc.METRIC_EXECUTE_TOOL_DURATION: ("s", adk_metrics.DURATION_BUCKETS),
        sc.METRIC_INVOKE_AGENT_DURATION: ("s", adk_metrics.AGENT_DURATION_BUCKETS),
        sc.METRIC_CLIENT_TOKEN_USAGE: ("{token}", adk_metrics.TOKEN_BUCKETS),
    }
    found = rec.metrics()
    assert set(found) == {*expected, sc.METRIC_INVOCATION_COUNT}
    for name, (unit, buckets) in expected.items():
        assert found[name].unit == unit
        for point in found[name].data.data_points:
            assert tuple(point.explicit_bounds) == tuple(float(b) for b in buckets)
    assert found[sc.METRIC_INVOCATION_COUNT].unit == "{invocation}"
    # The conventions' bucket advice, spelled out.
    assert adk_metrics.DURATION_BUCKETS[0] == 0.01 and adk_metrics.DURATION_BUCKETS[-1] == 81.92
    assert adk_metrics.AGENT_DURATION_BUCKETS[-1] == 409.6
    assert adk_metrics.TOKEN_BUCKETS[-1] == 67108864


async def test_model_call_metrics() -> None:
    rec = await run(clerk(model=ScriptedGemini(script=[call("lookup", {"sku": "A"}), reply("ok")])))
    wanted = {
        sc.GEN_AI_OPERATION_NAME: "generate_content",
        sc.GEN_AI_PROVIDER_NAME: "gcp.gemini",
        sc.GEN_AI_REQUEST_MODEL: "gemini-2.5-flash",
        sc.GEN_AI_RESPONSE_MODEL: "scripted-model-001",
    }
    duration = rec.point(sc.METRIC_CLIENT_OPERATION_DURATION, wanted)
    assert duration.count == 2
    assert sc.ERROR_TYPE not in duration.attributes
    spans = rec.kind("model")
    assert duration.sum == pytest.approx(
        sum((s.end_time - s.start_time) / 1e9 for s in spans), abs=0.01
    )
    tokens_in = rec.point(sc.METRIC_CLIENT_TOKEN_USAGE, {**wanted, sc.GEN_AI_TOKEN_TYPE: "input"})
    tokens_out = rec.point(sc.METRIC_CLIENT_TOKEN_USAGE, {**wanted, sc.GEN_AI_TOKEN_TYPE: "output"})
    assert (tokens_in.count, tokens_in.sum) == (2, 24)
    assert (tokens_out.count, tokens_out.sum) == (2, 14)


async def test_agent_and_tool_durations() -> None:
    rec = await run(clerk(call("lookup", {"sku": "A"}), reply("done")))
    agent = rec.point(
        sc.METRIC_INVOKE_AGENT_DURATION,
        {sc.GEN_AI_AGENT_NAME: "clerk", sc.GEN_AI_REQUEST_MODEL: "scripted-model"},
    )
    assert agent.count == 1
    span = rec.one("invoke_agent clerk")
    assert agent.sum == pytest.approx((span.end_time - span.start_time) / 1e9, abs=0.01)
    tool = rec.point(
        sc.METRIC_EXECUTE_TOOL_DURATION,
        {
            sc.GEN_AI_TOOL_NAME: "lookup",
            sc.GEN_AI_TOOL_TYPE: "function",
            sc.GEN_AI_AGENT_NAME: "clerk",
        },
    )
    assert tool.count == 1


async def test_failures_carry_error_type() -> None:
    rec = await run(clerk(call("lookup", {"sku": "bad"}), reply("never")))
    assert isinstance(rec.error, ToolBroke)
    error = f"{__name__}.ToolBroke"
    tool = rec.point(sc.METRIC_EXECUTE_TOOL_DURATION, {sc.GEN_AI_TOOL_NAME: "lookup"})
    assert tool.attributes[sc.ERROR_TYPE] == error
    agent = rec.point(sc.METRIC_INVOKE_AGENT_DURATION, {sc.GEN_AI_AGENT_NAME: "clerk"})
    assert agent.attributes[sc.ERROR_TYPE] == error
    (runs,) = rec.points(sc.METRIC_INVOCATION_COUNT)
    assert dict(runs.attributes) == {
        sc.ADK_APP_NAME: "shop",
        sc.ADK_OUTCOME: "error",
        sc.ERROR_TYPE: error,
    }
    assert runs.value == 1


async def test_model_failure_carries_error_type() -> None:
    rec = await run(clerk(fail(ConnectionError("model down"))))
    model = rec.point(sc.METRIC_CLIENT_OPERATION_DURATION, {})
    assert model.attributes[sc.ERROR_TYPE] == "ConnectionError"
    assert rec.points(sc.METRIC_CLIENT_TOKEN_USAGE) == []


async def test_invocation_count_by_app_and_outcome() -> None:
    helper = LlmAgent(name="helper", model=ScriptedModel(script=[reply("x")]))
    agent = LlmAgent(
        name="clerk",
        model=ScriptedModel(script=[call("helper", {"request": "r"}), reply("done")]),
        tools=[AgentTool(helper)],
    )
    rec = await run(agent)
    (ok,) = rec.points(sc.METRIC_INVOCATION_COUNT)
    assert dict(ok.attributes) == {sc.ADK_APP_NAME: "shop", sc.ADK_OUTCOME: "ok"}
    assert ok.value == 2  # the run and the AgentTool's nested run


async def test_instruments_are_created_once_per_provider() -> None:
    rec = await run(clerk(reply("a")))
    first = _plugin(rec)
    await run(
        clerk(reply("b")),
        recorded=rec,
        tracer_provider=first._options[settings.TRACER_PROVIDER],
        meter_provider=first._options[settings.METER_PROVIDER],
    )
    second = _plugin(rec)
    assert second is not first
    assert first._ledger.instruments is not None
    assert second._ledger.instruments is first._ledger.instruments
    (runs,) = rec.points(sc.METRIC_INVOCATION_COUNT)
    assert runs.value == 2


def _plugin(rec: Recorded) -> Any:
    assert rec.runner is not None
    found = plugin_of(rec.runner)
    assert found is not None
    return found


@pytest.fixture
def no_global_meter_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """The API's state before any meter provider is set, whatever ran before in
    this process (the test neither skips nor depends on the order of tests)."""
    from opentelemetry.environment_variables import OTEL_PYTHON_METER_PROVIDER
    from opentelemetry.metrics import _internal as api

    monkeypatch.delenv(OTEL_PYTHON_METER_PROVIDER, raising=False)
    monkeypatch.setattr(api, "_METER_PROVIDER", None)
    assert type(otel_metrics.get_meter_provider()).__name__ == "_ProxyMeterProvider"


async def test_no_meter_provider_means_no_metric_work(no_global_meter_provider: None) -> None:
    rec = await run(clerk(reply("a")), meter_provider=None)
    assert _plugin(rec)._ledger.instruments is None
    assert rec.metrics() == {}


# -- ADK's own metrics: never the same stream twice -------------------------------------------

_GLOBAL_PROVIDER_RUN = textwrap.dedent(
    """
    import asyncio, json
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner
    from google.genai import types
    from opentelemetry import metrics
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider

    import adk_otel
    from adk_otel.testing.model import ScriptedModel, call, reply

    reader = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))

    def lookup(sku: str) -> dict:
        "Stock."
        return {"stock": 1}

    agent = LlmAgent(name="clerk", tools=[lookup],
                     model=ScriptedModel(script=[call("lookup", {"sku": "A"}), reply("ok")]))

    async def main():
        runner = adk_otel.instrument(InMemoryRunner(agent=agent, app_name="shop"),
                                     tracer_provider=TracerProvider())
        session = await runner.session_service.create_session(app_name="shop", user_id="u")
        async for _ in runner.run_async(user_id="u", session_id=session.id,
                                        new_message=types.UserContent("hi")):
            pass

    asyncio.run(main())
    streams = {}
    for rm in reader.get_metrics_data().resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                streams.setdefault(m.name, []).append(sm.scope.name)
    print(json.dumps(streams))
    """
)


def _streams_with_global_provider(**env: str) -> dict[str, list[str]]:
    """Metric stream name -> scopes, from a fresh process whose global meter
    provider is an SDK one (ADK records into the global provider)."""
    result = subprocess.run(
        [sys.executable, "-c", _GLOBAL_PROVIDER_RUN],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


OVERLAPPING = (
    sc.METRIC_CLIENT_OPERATION_DURATION,
    sc.METRIC_CLIENT_TOKEN_USAGE,
    sc.METRIC_INVOKE_AGENT_DURATION,
    sc.METRIC_EXECUTE_TOOL_DURATION,
)


def test_adk_meter_is_switched_off_where_adk_otel_records() -> None:
    streams = _streams_with_global_provider(ADK_OTEL_KEEP_ADK_METRICS="")
    for name in OVERLAPPING:
        assert streams.get(name) == [sc.INSTRUMENTATION_SCOPE], (name, streams)
    assert sc.ADK_SCOPE not in {scope for scopes in streams.values() for scope in scopes}


def test_kept_adk_metrics_are_not_recorded_twice() -> None:
    streams = _streams_with_global_provider(ADK_OTEL_KEEP_ADK_METRICS="true")
    for name in OVERLAPPING:
        assert streams.get(name) == [sc.ADK_SCOPE], (name, streams)
    assert streams[sc.METRIC_INVOCATION_COUNT] == [sc.INSTRUMENTATION_SCOPE]
