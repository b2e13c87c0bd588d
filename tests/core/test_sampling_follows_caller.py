"""As docs/across-services.md says: with the default sampler a served run keeps its
caller's sampling decision (a ``traceparent`` with flags ``00`` records
nothing), and ``OTEL_TRACES_SAMPLER=always_on`` records it regardless."""

from __future__ import annotations

import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry import context, propagate
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import adk_otel
from adk_otel.pipeline.provider import build_tracer_provider
from adk_otel.testing.model import ScriptedModel, reply

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


async def _served_run(flags: str) -> list[str]:
    """One run inside the context a request with this ``traceparent`` carries."""
    exporter = InMemorySpanExporter()
    provider = build_tracer_provider(exporter)  # the sampler from OTEL_TRACES_SAMPLER, as built
    agent = LlmAgent(name="clerk", model=ScriptedModel(script=[reply("ok")]))
    runner = adk_otel.instrument(
        InMemoryRunner(agent=agent, app_name="shop"), tracer_provider=provider
    )
    session = await runner.session_service.create_session(app_name="shop", user_id="u")
    incoming = propagate.extract({"traceparent": f"00-{TRACE_ID}-00f067aa0ba902b7-{flags}"})
    token = context.attach(incoming)
    try:
        async for _ in runner.run_async(
            user_id="u", session_id=session.id, new_message=types.UserContent("hi")
        ):
            pass
    finally:
        context.detach(token)
    provider.force_flush(10_000)
    provider.shutdown()
    spans = exporter.get_finished_spans()
    assert all(f"{s.context.trace_id:032x}" == TRACE_ID for s in spans)
    return [s.name for s in spans]


@pytest.mark.parametrize(
    ("sampler", "flags", "recorded"),
    [
        (None, "01", True),
        (None, "00", False),  # the caller did not sample: this side records nothing
        ("parentbased_always_on", "00", False),
        ("always_on", "00", True),  # the documented way to record served runs regardless
    ],
)
async def test_served_run_follows_the_callers_flags_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch, sampler: str | None, flags: str, recorded: bool
) -> None:
    monkeypatch.delenv("OTEL_TRACES_SAMPLER", raising=False)
    if sampler is not None:
        monkeypatch.setenv("OTEL_TRACES_SAMPLER", sampler)
    names = await _served_run(flags)
    assert ("invocation shop" in names) is recorded, names
    assert bool(names) is recorded
