"""adk-otel with other instrumentations: OTEL_PYTHON_DISABLED_INSTRUMENTATIONS
turns it off, and another active ADK instrumentation (OpenInference's) is
named in one warning, with the way to keep just one."""

from __future__ import annotations

import logging
from importlib.metadata import version

import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import adk_otel
from adk_otel.integrations import coexistence
from adk_otel.testing.model import ScriptedModel, reply

ADK_VERSION = tuple(int(part) for part in version("google-adk").split(".")[:2])


def clerk_runner() -> InMemoryRunner:
    agent = LlmAgent(name="clerk", model=ScriptedModel(script=[reply("ok")]))
    return InMemoryRunner(agent=agent, app_name="shop")


async def run_once(runner: InMemoryRunner) -> None:
    session = await runner.session_service.create_session(app_name="shop", user_id="u")
    async for _ in runner.run_async(
        user_id="u", session_id=session.id, new_message=types.UserContent("hi")
    ):
        pass


@pytest.mark.parametrize("listed", ["httpx, adk_otel", "*", "httpx, *"])
async def test_disabled_instrumentations_switch_adk_otel_off(monkeypatch, listed) -> None:
    # "*" switches every instrumentation off, as opentelemetry-instrument reads it.
    monkeypatch.setenv("OTEL_PYTHON_DISABLED_INSTRUMENTATIONS", listed)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    runner = adk_otel.instrument(clerk_runner(), tracer_provider=provider)
    assert adk_otel.plugin_of(runner) is None
    await run_once(runner)
    assert exporter.get_finished_spans() == ()


async def test_another_adk_instrumentation_is_named_once(monkeypatch, caplog) -> None:
    from openinference.instrumentation.google_adk import GoogleADKInstrumentor

    monkeypatch.setattr(coexistence, "_warned", set())
    caplog.set_level(logging.WARNING, logger="adk_otel")
    other = GoogleADKInstrumentor()
    # OpenInference's google-adk instrumentation needs google-adk >= 2.10 (with
    # 2.5 it fails halfway, leaving ADK partly patched): with the older ADK it
    # cannot be active, and nothing is said.
    if ADK_VERSION >= (2, 10):
        other.instrument(tracer_provider=TracerProvider())
    try:
        runner = adk_otel.instrument(clerk_runner(), tracer_provider=TracerProvider())
        await run_once(runner)
        await run_once(runner)
    finally:
        if other.is_instrumented_by_opentelemetry:
            other.uninstrument()
    warnings = [r.getMessage() for r in caplog.records if "also active" in r.getMessage()]
    if ADK_VERSION >= (2, 10):
        assert len(warnings) == 1, warnings
        assert (
            "OpenInference" in warnings[0]
            and "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS" in warnings[0]
        )
    else:
        assert warnings == []
