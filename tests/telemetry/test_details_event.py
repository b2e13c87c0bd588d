"""The ``gen_ai.client.inference.operation.details`` event: a log record through
the Logs API (structured attributes, the model span's trace context), the
span-event form on request, and ADK's tool-call ids in its output messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider

import adk_otel
from adk_otel import semconv as sc
from adk_otel.pipeline.details import AS_SPAN_EVENT_ENV, DetailsLog
from adk_otel.reading.content import CAPTURE_ENV
from adk_otel.testing.model import ScriptedModel, Step, call, calls, fail, reply, stream
from adk_otel.testing.receiver import OtlpReceiver

from .harness import APP, USER, Recorded, ScriptedGemini, providers, run

PROMPT = "PROMPT-5e1c"


def lookup(sku: str) -> dict[str, Any]:
    """Stock level for a SKU."""
    return {"sku": sku, "stock": 3}


def price(sku: str) -> dict[str, Any]:
    """Price of a SKU."""
    return {"sku": sku, "eur": 9}


def clerk(*script: Any) -> LlmAgent:
    return LlmAgent(name="clerk", model=ScriptedModel(script=list(script)), tools=[lookup, price])


def logs() -> tuple[LoggerProvider, InMemoryLogRecordExporter]:
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    return provider, exporter


def details(exporter: InMemoryLogRecordExporter) -> list[Any]:
    return [
        data.log_record
        for data in exporter.get_finished_logs()
        if data.log_record.event_name == sc.GEN_AI_INFERENCE_DETAILS_EVENT
    ]


def tool_calls(record: Any) -> list[Mapping[str, Any]]:
    messages: Sequence[Mapping[str, Any]] = record.attributes[sc.GEN_AI_OUTPUT_MESSAGES]
    return [p for m in messages for p in m["parts"] if p["type"] == "tool_call"]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CAPTURE_ENV, raising=False)
    monkeypatch.delenv(AS_SPAN_EVENT_ENV, raising=False)


async def test_a_log_record_per_model_call_in_its_span_context() -> None:
    provider, exporter = logs()
    rec = await run(
        clerk(call("lookup", {"sku": "A1"}), reply("3 left")),
        PROMPT,
        capture_content="EVENT_ONLY",
        logger_provider=provider,
    )
    models = sorted(rec.kind("model"), key=lambda s: s.start_time or 0)
    records = details(exporter)
    assert len(records) == len(models) == 2
    by_span = {r.span_id: r for r in records}
    for span in models:
        record = by_span[span.context.span_id]
        assert record.trace_id == span.context.trace_id
        assert not [e for e in span.events if e.name == sc.GEN_AI_INFERENCE_DETAILS_EVENT]
        attributes = record.attributes
        assert attributes[sc.GEN_AI_OPERATION_NAME] == "generate_content"
        assert attributes[sc.GEN_AI_REQUEST_MODEL] == "scripted-model"
        assert attributes[sc.GEN_AI_RESPONSE_MODEL] == "scripted-model-001"
        assert attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] == 12
        assert attributes[sc.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)
        # Structured values, not JSON strings.
        first_input = attributes[sc.GEN_AI_INPUT_MESSAGES][0]
        assert first_input["role"] == "user"
        assert first_input["parts"][0] == {"type": "text", "content": PROMPT}
    last = by_span[models[-1].context.span_id]
    assert list(last.attributes[sc.GEN_AI_OUTPUT_MESSAGES][0]["parts"]) == [
        {"type": "text", "content": "3 left"}
    ]


async def test_tool_call_ids_in_the_record_are_the_execute_tool_spans_ids() -> None:
    provider, exporter = logs()
    rec = await run(
        clerk(calls(("lookup", {"sku": "A1"}), ("price", {"sku": "A1"})), reply("done")),
        capture_content="SPAN_AND_EVENT",
        logger_provider=provider,
    )
    tool_ids = {s.attributes[sc.GEN_AI_TOOL_NAME]: s.attributes[sc.GEN_AI_TOOL_CALL_ID]
                for s in rec.kind("tool")}  # fmt: skip
    assert set(tool_ids) == {"lookup", "price"}
    assert all(str(i).startswith("adk-") for i in tool_ids.values())
    (with_calls,) = [r for r in details(exporter) if tool_calls(r)]
    assert {c["name"]: c["id"] for c in tool_calls(with_calls)} == tool_ids
    # The model span itself ended before ADK assigned the ids: its attribute
    # cannot carry them (what the docs say does not link).
    first = min(rec.kind("model"), key=lambda s: s.start_time or 0)
    span_calls = json.loads(first.attributes[sc.GEN_AI_OUTPUT_MESSAGES])[0]["parts"]
    assert [c["id"] for c in span_calls] == [None, None]


async def test_a_streamed_call_has_its_time_to_first_chunk_in_the_record() -> None:
    provider, exporter = logs()
    rec = await run(
        clerk(stream("a", "b")),
        streaming=True,
        capture_content="EVENT_ONLY",
        logger_provider=provider,
    )
    (span,) = rec.kind("model")
    (record,) = details(exporter)
    assert (
        record.attributes[sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK]
        == span.attributes[sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK]
    )
    assert record.attributes[sc.GEN_AI_REQUEST_STREAM] is True


async def test_no_record_without_content_capture() -> None:
    provider, exporter = logs()
    await run(clerk(call("lookup", {"sku": "A1"}), reply("ok")), logger_provider=provider)
    assert exporter.get_finished_logs() == ()


@pytest.mark.parametrize("how", ["keyword", "environment"])
async def test_the_span_event_form_on_request(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    provider, exporter = logs()
    options: dict[str, Any] = {}
    if how == "keyword":
        options["details_as_span_event"] = True
    else:
        monkeypatch.setenv(AS_SPAN_EVENT_ENV, "true")
    rec: Recorded = await run(
        clerk(call("lookup", {"sku": "A1"}), reply("ok")),
        capture_content="EVENT_ONLY",
        logger_provider=provider,
        **options,
    )
    assert exporter.get_finished_logs() == ()
    models = rec.kind("model")
    assert len(models) == 2, [span.name for span in rec.spans]  # the tool call, then the reply
    for span in models:
        (event,) = span.events
        assert event.name == sc.GEN_AI_INFERENCE_DETAILS_EVENT
        assert isinstance(event.attributes[sc.GEN_AI_INPUT_MESSAGES], str)  # JSON text


async def test_a_failed_call_has_error_type_and_no_output() -> None:
    provider, exporter = logs()
    await run(
        clerk(fail(ValueError("model down"))),
        capture_content="EVENT_ONLY",
        logger_provider=provider,
    )
    (record,) = details(exporter)
    assert record.attributes[sc.ERROR_TYPE] == "ValueError"
    assert sc.GEN_AI_OUTPUT_MESSAGES not in record.attributes


# -- over the wire: the built-in pipeline, a real OTLP receiver -------------------------------

_WIRE = textwrap.dedent(
    """
    import asyncio
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner
    from google.genai import types
    from opentelemetry import trace
    from opentelemetry._logs import get_logger_provider
    import adk_otel
    from adk_otel.testing.model import ScriptedModel, call, reply

    def lookup(sku: str) -> dict:
        "Stock level."
        return {"stock": 3}

    async def main():
        agent = LlmAgent(name="clerk", tools=[lookup],
                         model=ScriptedModel(script=[call("lookup", {"sku": "A1"}), reply("ok")]))
        runner = adk_otel.instrument(InMemoryRunner(agent=agent, app_name="shop"))
        session = await runner.session_service.create_session(app_name="shop", user_id="u")
        async for _ in runner.run_async(user_id="u", session_id=session.id,
                                        new_message=types.UserContent("hi")):
            pass

    asyncio.run(main())
    trace.get_tracer_provider().shutdown()
    get_logger_provider().shutdown()
    """
)


def test_the_built_in_pipeline_exports_the_record_over_otlp() -> None:
    with OtlpReceiver() as receiver:
        env = {
            **os.environ,
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.http_endpoint.removesuffix("/v1/traces"),
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            CAPTURE_ENV: "EVENT_ONLY",
        }
        env.pop(AS_SPAN_EVENT_ENV, None)
        done = subprocess.run(
            [sys.executable, "-c", _WIRE], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        records = receiver.wait_for_logs(2)
        spans = receiver.spans()
        scopes = {
            scope_logs.scope.name
            for request in receiver.log_requests
            for resource_logs in request.resource_logs
            for scope_logs in resource_logs.scope_logs
        }
    assert scopes == {sc.INSTRUMENTATION_SCOPE}  # ADK's own log events are not exported
    models = {s.span_id: s for s in spans if s.name.startswith("generate_content")}
    assert len(models) == 2
    tools = [s for s in spans if s.name == "execute_tool lookup"]
    (tool_id,) = [
        a.value.string_value for a in tools[0].attributes if a.key == "gen_ai.tool.call.id"
    ]
    found_ids = []
    for record in records:
        assert record.event_name == sc.GEN_AI_INFERENCE_DETAILS_EVENT
        assert record.span_id in models
        assert record.trace_id == models[record.span_id].trace_id
        attributes = {a.key: a.value for a in record.attributes}
        output = attributes[sc.GEN_AI_OUTPUT_MESSAGES]
        assert output.HasField("array_value")  # structured, not a JSON string
        for message in output.array_value.values:
            fields = {kv.key: kv.value for kv in message.kvlist_value.values}
            for part in fields["parts"].array_value.values:
                kv = {p.key: p.value for p in part.kvlist_value.values}
                if kv["type"].string_value == "tool_call":
                    found_ids.append(kv["id"].string_value)
    assert found_ids == [tool_id]


async def test_an_id_the_model_gave_is_kept_and_matches_the_tool_span() -> None:
    provider, exporter = logs()
    given = Step(
        parts=(
            types.Part(
                function_call=types.FunctionCall(id="toolu_7", name="lookup", args={"sku": "A"})
            ),
        )
    )
    rec = await run(
        clerk(given, reply("ok")), capture_content="EVENT_ONLY", logger_provider=provider
    )
    (tool,) = rec.kind("tool")
    assert tool.attributes[sc.GEN_AI_TOOL_CALL_ID] == "toolu_7"
    (with_calls,) = [r for r in details(exporter) if tool_calls(r)]
    assert [c["id"] for c in tool_calls(with_calls)] == ["toolu_7"]


def test_a_record_still_waiting_when_its_run_ends_goes_out_without_ids() -> None:
    provider, exporter = logs()
    log = DetailsLog(provider.get_logger("test"))
    span = TracerProvider().get_tracer("test").start_span("generate_content m")
    output = [{"role": "assistant", "parts": [{"type": "tool_call", "id": None, "name": "a"}]}]
    log.emit_or_hold(span, {sc.GEN_AI_OUTPUT_MESSAGES: output}, "inv-1", "clerk")
    log.emit_or_hold(span, {sc.GEN_AI_OUTPUT_MESSAGES: output}, "inv-2", "clerk")
    assert exporter.get_finished_logs() == ()
    log.link("inv-1", "clerk", [("other", "adk-x")])  # names differ: not this record
    log.flush("inv-1")
    (flushed,) = details(exporter)
    assert tool_calls(flushed)[0]["id"] is None
    log.link("inv-2", "clerk", [("a", "adk-2")])
    assert [tool_calls(r)[0]["id"] for r in details(exporter)] == [None, "adk-2"]


def test_the_log_exporter_follows_the_otlp_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as Grpc
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as Http

    from adk_otel.pipeline.otel_env import otlp_log_exporter_from_env

    monkeypatch.delenv("OTEL_EXPORTER_OTLP_PROTOCOL", raising=False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "http://127.0.0.1:9/v1/logs")
    exporter = otlp_log_exporter_from_env()
    assert isinstance(exporter, Http)
    assert exporter._endpoint == "http://127.0.0.1:9/v1/logs"
    exporter.shutdown()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    exporter = otlp_log_exporter_from_env()
    assert isinstance(exporter, Grpc)
    exporter.shutdown()
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "none")
    assert otlp_log_exporter_from_env() is None


async def test_instrument_again_with_another_logger_provider_moves_only_the_records() -> None:
    """Options passed again change only those options: later records go to the
    new logger provider, spans stay on the tracer provider, capture stays on."""
    first, first_records = logs()
    second, second_records = logs()
    tracer_provider, spans, meter_provider, _ = providers()
    runner = adk_otel.instrument(
        InMemoryRunner(agent=clerk(reply("in stock")), app_name=APP),
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        capture_content="EVENT_ONLY",
        logger_provider=first,
    )

    async def one_run() -> None:
        session = await runner.session_service.create_session(app_name=APP, user_id=USER)
        async for _ in runner.run_async(
            user_id=USER, session_id=session.id, new_message=types.UserContent(PROMPT)
        ):
            pass

    await one_run()
    assert adk_otel.instrument(runner, logger_provider=second) is runner
    await one_run()

    models = sorted(
        (s for s in spans.get_finished_spans() if s.name.startswith("generate_content")),
        key=lambda s: s.start_time or 0,
    )
    assert len(models) == 2  # both runs traced on the first tracer provider
    (before,) = details(first_records)
    (after,) = details(second_records)
    assert before.span_id == models[0].context.span_id
    assert after.span_id == models[1].context.span_id
    assert after.attributes[sc.GEN_AI_INPUT_MESSAGES][0]["parts"][0]["content"] == PROMPT


@pytest.mark.parametrize("as_span_event", [False, True], ids=["record", "span_event"])
async def test_the_details_event_names_the_server_of_a_known_model_class(
    monkeypatch: pytest.MonkeyPatch, as_span_event: bool
) -> None:
    for name in ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://gateway.internal:8000")
    provider, exporter = logs()
    agent = LlmAgent(name="clerk", model=ScriptedGemini(script=[reply("hi")]))
    rec = await run(
        agent,
        capture_content="EVENT_ONLY",
        logger_provider=provider,
        details_as_span_event=as_span_event,
    )
    if as_span_event:
        (span,) = rec.kind("model")
        (event,) = span.events
        attributes = event.attributes
    else:
        (record,) = details(exporter)
        attributes = record.attributes
    assert attributes[sc.SERVER_ADDRESS] == "gateway.internal"
    assert attributes[sc.SERVER_PORT] == 8000
