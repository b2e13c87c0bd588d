"""``instrument(..., traces_file=PATH)``: the spans also go to a file of OTLP
JSON lines, whatever provider they are made on, added once however often
``instrument()`` is called."""

from __future__ import annotations

import asyncio

from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import adk_otel
from adk_otel.testing import ScriptedModel, reply
from adk_otel.traces.io.files import read_records


async def _run(runner: InMemoryRunner) -> None:
    session = await runner.session_service.create_session(app_name="shop", user_id="u")
    message = types.Content(role="user", parts=[types.Part(text="hi")])
    async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
        pass


def test_traces_file_gets_every_span_once(tmp_path):
    path = tmp_path / "runs.jsonl"
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    agent = LlmAgent(name="clerk", model=ScriptedModel(script=[reply("ok"), reply("ok")]))
    runner = InMemoryRunner(agent=agent, app_name="shop")
    adk_otel.instrument(runner, tracer_provider=provider, traces_file=path)
    adk_otel.instrument(runner, traces_file=str(path))  # again: no second exporter
    try:
        asyncio.run(_run(runner))
        asyncio.run(_run(runner))
        assert provider.force_flush()
        records = read_records([str(path)])
        assert len(memory.get_finished_spans()) == 6
        assert sorted(r.span_id for r in records) == sorted(
            format(span.context.span_id, "016x") for span in memory.get_finished_spans()
        )
        assert sum(r.name == "invocation shop" for r in records) == 2
    finally:
        adk_otel.uninstrument(runner)
        provider.shutdown()
