"""Runs in a fresh process: one OpenTelemetry set-up, made the way its tool
documents, *before* ADK is imported (the usual order: a telemetry module at
the top of ``main``), then one app run once, with adk-otel or with ADK alone.
Prints the spans the set-up's own tracer provider handled, as JSON lines.

    python child.py SETUP APP MODE

SETUP: see SETUPS below; APP: classic | workflow; MODE: adk_otel | adk_alone |
mixed (an instrumented Runner, then one left un-instrumented, in one process).
The receiver's address is OTLP_RECEIVER (an OTLP/HTTP endpoint) where a tool
insists on exporting somewhere.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

SETUP, APP, MODE = sys.argv[1:4]
RECEIVER = os.environ.get("OTLP_RECEIVER", "http://127.0.0.1:9")
SEEN = InMemorySpanExporter()
"""What the set-up's own provider handles, beside its own exporter."""


def sdk_provider_first() -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(SEEN))
    trace.set_tracer_provider(provider)


def zero_code() -> None:
    # opentelemetry-instrument built and installed the provider before this
    # script ran (and loaded every instrumentor installed, OpenInference's too).
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider), provider
    provider.add_span_processor(SimpleSpanProcessor(SEEN))


def phoenix(*, auto_instrument: bool) -> None:
    from phoenix.otel import register

    provider = register(
        endpoint=f"{RECEIVER}/v1/traces",
        protocol="http/protobuf",
        batch=False,
        auto_instrument=auto_instrument,
        verbose=False,
    )
    provider.add_span_processor(SimpleSpanProcessor(SEEN))


def langfuse() -> None:
    from langfuse import Langfuse

    Langfuse(public_key="pk-test", secret_key="sk-test", host=RECEIVER)
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider), provider
    provider.add_span_processor(SimpleSpanProcessor(SEEN))


def logfire() -> None:
    import logfire as lf

    lf.configure(
        send_to_logfire=False,
        console=False,
        additional_span_processors=[SimpleSpanProcessor(SEEN)],
    )


def openinference() -> None:
    # OpenInference's ADK instrumentor on, as Phoenix users often have it.
    sdk_provider_first()
    from openinference.instrumentation.google_adk import GoogleADKInstrumentor

    GoogleADKInstrumentor().instrument(tracer_provider=trace.get_tracer_provider())


def google_cloud() -> None:
    # Google Cloud's trace exporter on an SDK provider (Cloud Run, GKE): its
    # own client, anonymous, never flushed here (no network).
    from google.auth.credentials import AnonymousCredentials
    from google.cloud.trace_v2 import TraceServiceClient
    from opentelemetry.exporter.cloud_trace import CloudTraceSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    sdk_provider_first()
    client = TraceServiceClient(credentials=AnonymousCredentials())
    exporter = CloudTraceSpanExporter(project_id="test-project", client=client)
    trace.get_tracer_provider().add_span_processor(  # type: ignore[attr-defined]
        BatchSpanProcessor(exporter, schedule_delay_millis=3_600_000)
    )


SETUPS = {
    "provider_first": sdk_provider_first,
    "zero_code": zero_code,
    "phoenix": lambda: phoenix(auto_instrument=False),
    "phoenix_auto_instrument": lambda: phoenix(auto_instrument=True),
    "langfuse": langfuse,
    "logfire": logfire,
    "openinference": openinference,
    "google_cloud": google_cloud,
    "tracer_provider_env": sdk_provider_first,  # with OTEL_PYTHON_TRACER_PROVIDER=adk_otel
}

SETUPS[SETUP]()

# Only now the application: ADK binds its tracer at this import.
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.genai import types  # noqa: E402

from tests.setups.apps import build  # noqa: E402


async def run(*, instrumented: bool) -> None:
    app = build(APP)
    runner = InMemoryRunner(app=app)
    if instrumented:
        import adk_otel

        adk_otel.instrument(runner)
    session = await runner.session_service.create_session(app_name=app.name, user_id="u")
    async for _ in runner.run_async(
        user_id="u", session_id=session.id, new_message=types.UserContent("hi")
    ):
        pass
    await runner.close()


async def main() -> None:
    await run(instrumented=MODE != "adk_alone")
    if MODE == "mixed":
        await run(instrumented=False)


def as_json(span: ReadableSpan) -> str:
    return json.dumps(
        {
            "name": span.name,
            "scope": span.instrumentation_scope.name if span.instrumentation_scope else "",
            "trace_id": f"{span.context.trace_id:032x}",
            "span_id": f"{span.context.span_id:016x}",
            "parent_id": f"{span.parent.span_id:016x}" if span.parent else None,
            "status": span.status.status_code.name,
            "attributes": {k: _plain(v) for k, v in (span.attributes or {}).items()},
            "events": [event.name for event in span.events],
        }
    )


def _plain(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


asyncio.run(main())
sys.stdout.write("".join(as_json(span) + "\n" for span in SEEN.get_finished_spans()))
sys.stdout.flush()
# The set-up's own exporters (Cloud Trace, OTLP to a host that is not there)
# are never flushed: nothing here may reach the network.
os._exit(0)
