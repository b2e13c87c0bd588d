"""Which tracer ADK's node tracing gets decides whether workflow nodes have
spans: adk-otel's provider, a provider adk-otel routes, the standard
``OTEL_PYTHON_TRACER_PROVIDER=adk_otel``, or, when ADK took the SDK's tracer
first, that tracer answered for in place. Each case in a fresh process:
which tracer ADK holds is fixed by what the process did first."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

APP = textwrap.dedent(
    """
    import asyncio, sys
    mode = sys.argv[1]
    if mode == "adk-first":
        import google.adk.telemetry.node_tracing  # ADK's tracer: a proxy, resolved later
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    exporter = InMemorySpanExporter()
    if mode == "env":
        provider = trace.get_tracer_provider()  # built by the API from the variable
        print(type(provider).__name__)
    else:
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    import adk_otel
    from google.adk.runners import InMemoryRunner
    from google.adk.workflow import Workflow
    from google.genai import types

    def prepare() -> str:
        return "ready"

    async def main():
        flow = Workflow(name="flow", edges=[("START", prepare)])
        runner = InMemoryRunner(node=flow, app_name="shop", plugins=[adk_otel.AdkOtelPlugin()])
        session = await runner.session_service.create_session(app_name="shop", user_id="u")
        for _ in range(2):
            async for _ in runner.run_async(
                user_id="u", session_id=session.id, new_message=types.UserContent("hi")
            ):
                pass

    asyncio.run(main())
    print(sorted(span.name for span in exporter.get_finished_spans()))
    """
)


def run_app(mode: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ADK_OTEL_"))}
    return subprocess.run(
        [sys.executable, "-W", "ignore", "-c", APP, mode],
        env={**clean, "OTEL_TRACES_EXPORTER": "none", **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


NODES = "['invocation shop', 'invocation shop', 'invoke_node prepare', 'invoke_node prepare']"


def test_the_standard_provider_variable_builds_adk_otels_provider():
    done = run_app("env", OTEL_PYTHON_TRACER_PROVIDER="adk_otel")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["AdkOtelTracerProvider", NODES]
    assert "get no spans" not in done.stderr


def test_an_applications_provider_is_routed_while_adk_has_not_taken_its_tracer():
    done = run_app("adk-first")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [NODES]
    assert "get no spans" not in done.stderr


def test_a_tracer_adk_took_first_is_answered_for():
    """ADK imported after the application's provider holds that provider's own
    tracer: adk-otel answers for that object (pipeline/held_tracer.py)."""
    done = run_app("provider-first")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [NODES]
    assert "not in adk-otel's tree" not in done.stderr and "cannot be answered" not in done.stderr


def test_a_tracer_that_cannot_change_its_class_is_left_alone() -> None:
    """An object whose class cannot change (a built-in type's instance) is not
    answered for, and nothing of the attempt stays behind."""
    from adk_otel.pipeline import held_tracer

    unchangeable = object()
    with pytest.raises(TypeError):
        held_tracer._answer(unchangeable)
    assert held_tracer.answered(unchangeable) is None
    assert id(unchangeable) not in held_tracer._ROUTED
