"""``instrument()`` with no provider, in a fresh process as an application
starts: the pipeline comes from the standard ``OTEL_*`` variables (service
name, resource attributes, headers, protocol), or an SDK provider the
application installed first is used and never replaced."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from adk_otel.testing.receiver import OtlpReceiver

APP = textwrap.dedent(
    """
    import asyncio, sys
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner
    from google.genai import types
    import adk_otel
    from adk_otel.testing import ScriptedModel, reply

    if sys.argv[1] == "own-provider":
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        exporter = InMemorySpanExporter()
        mine = TracerProvider()
        mine.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(mine)

    async def main():
        agent = LlmAgent(name="clerk", model=ScriptedModel(script=[reply("ok")]))
        runner = adk_otel.instrument(InMemoryRunner(agent=agent, app_name="shop"))
        session = await runner.session_service.create_session(app_name="shop", user_id="u")
        message = types.Content(role="user", parts=[types.Part(text="hi")])
        async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
            pass

    asyncio.run(main())
    if sys.argv[1] == "own-provider":
        from opentelemetry import trace
        assert trace.get_tracer_provider() is mine, "the application's provider was replaced"
        print(sorted(span.name for span in exporter.get_finished_spans()))
    """
)


def run_app(mode: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ADK_OTEL_"))}
    return subprocess.run(
        [sys.executable, "-W", "ignore", "-c", APP, mode],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_pipeline_from_the_environment(protocol):
    with OtlpReceiver() as receiver:
        endpoint = receiver.http_endpoint.removesuffix("/v1/traces")
        if protocol == "grpc":
            endpoint = receiver.grpc_endpoint
        done = run_app(
            "env",
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
                "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
                "OTEL_EXPORTER_OTLP_HEADERS": "x-tenant=acme,authorization=Bearer%20t0ken",
                "OTEL_SERVICE_NAME": "shop-service",
                "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=ci,team=checkout",
            },
        )
        assert done.returncode == 0, done.stderr[-3000:]
        # Flushed at exit: the process has ended, so everything has arrived.
        spans = receiver.spans()
        headers = receiver.headers

    assert sorted(span.name for span in spans) == [
        "generate_content scripted-model",
        "invocation shop",
        "invoke_agent clerk",
    ]
    [resource] = {
        tuple(sorted((a.key, a.value.string_value) for a in rs.resource.attributes))
        for rs in receiver.resource_spans()
    }
    resource_attributes = dict(resource)
    assert resource_attributes["service.name"] == "shop-service"
    assert resource_attributes["deployment.environment"] == "ci"
    assert resource_attributes["team"] == "checkout"
    assert all(h.get("x-tenant") == "acme" for h in headers), headers
    assert all(h.get("authorization") == "Bearer t0ken" for h in headers), headers
    assert "WARNING" not in done.stderr, done.stderr[-3000:]


def test_an_installed_provider_is_used_and_never_replaced():
    with OtlpReceiver() as receiver:
        done = run_app("own-provider", {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.http_endpoint})
        assert done.returncode == 0, done.stderr[-3000:]
        exported_over_otlp = receiver.attempts

    assert done.stdout.strip().splitlines()[-1] == str(
        ["generate_content scripted-model", "invocation shop", "invoke_agent clerk"]
    )
    assert exported_over_otlp == 0  # adk-otel built no pipeline of its own
