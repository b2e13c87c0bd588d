"""adk-otel with other instrumentations: OTEL_PYTHON_DISABLED_INSTRUMENTATIONS
turns it off, and another active ADK instrumentation (OpenInference's) is
turned off (its spans absent; kept with ADK_OTEL_KEEP_OTHER_INSTRUMENTATIONS)
and named in one warning, with the way to keep just one."""

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


@pytest.mark.parametrize("keep", [False, True])
async def test_another_adk_instrumentation_is_turned_off_and_named_once(
    monkeypatch, caplog, keep
) -> None:
    from openinference.instrumentation.google_adk import GoogleADKInstrumentor

    monkeypatch.setattr(coexistence, "_warned", set())
    if keep:
        monkeypatch.setenv(coexistence.KEEP_OTHERS_ENV, "true")
    caplog.set_level(logging.WARNING, logger="adk_otel")
    other = GoogleADKInstrumentor()
    theirs = InMemorySpanExporter()
    their_provider = TracerProvider()
    their_provider.add_span_processor(SimpleSpanProcessor(theirs))
    # OpenInference's google-adk instrumentation needs google-adk >= 2.10 (with
    # 2.5 it fails halfway, leaving ADK partly patched): with the older ADK it
    # cannot be active, and nothing is said.
    active = ADK_VERSION >= (2, 10)
    if active:
        other.instrument(tracer_provider=their_provider)
        assert other.is_instrumented_by_opentelemetry
    try:
        runner = adk_otel.instrument(clerk_runner(), tracer_provider=TracerProvider())
        await run_once(runner)
        await run_once(runner)
        # The effect, read before the cleanup below could bring it about.
        still_on = other.is_instrumented_by_opentelemetry
        their_spans = theirs.get_finished_spans()
    finally:
        if other.is_instrumented_by_opentelemetry:
            other.uninstrument()
    assert still_on is (active and keep), f"OpenInference's instrumentor still on: {still_on}"
    if active and keep:
        assert len(their_spans) >= 2  # both trace each run (so none below means off)
    else:
        assert their_spans == ()
    warnings = [r.getMessage() for r in caplog.records if "also active" in r.getMessage()]
    if active:
        assert len(warnings) == 1, warnings
        assert (
            "OpenInference" in warnings[0]
            and "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS" in warnings[0]
        )
        assert ("turned it off" in warnings[0]) is not keep
    else:
        assert warnings == []


async def test_another_instrumentation_wrapping_the_answered_tracer_leaves_adk_working(
    monkeypatch,
) -> None:
    """ADK's tracer answered for by one run, then wrapped by OpenInference's
    instrumentor (kept on beside adk-otel), then unwrapped: every later run, traced
    or not, still runs (a second routed tracer over the answered one sent its calls
    back to itself without end: a RecursionError in each later run's workflow)."""
    from openinference.instrumentation.google_adk import GoogleADKInstrumentor

    first = adk_otel.instrument(clerk_runner(), tracer_provider=TracerProvider())
    await run_once(first)  # ADK's tracer answered for
    adk_otel.uninstrument(first)
    monkeypatch.setenv(coexistence.KEEP_OTHERS_ENV, "true")
    other = GoogleADKInstrumentor()
    if ADK_VERSION >= (2, 10):  # it needs google-adk >= 2.10 (see above)
        other.instrument(tracer_provider=TracerProvider())
    try:
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        kept_beside = adk_otel.instrument(clerk_runner(), tracer_provider=provider)
        await run_once(kept_beside)
        adk_otel.uninstrument(kept_beside)
    finally:
        if other.is_instrumented_by_opentelemetry:
            other.uninstrument()
    assert [s.name for s in exporter.get_finished_spans()][-1] == "invocation shop"
    await run_once(clerk_runner())  # no instrumentation: ADK's own path
    traced_again = adk_otel.instrument(clerk_runner(), tracer_provider=provider)
    await run_once(traced_again)
    adk_otel.uninstrument(traced_again)
