"""Runs in a fresh process: Vertex AI Agent Engine's ``AdkApp`` with its own
telemetry on (``GOOGLE_CLOUD_AGENT_ENGINE_ENABLE_TELEMETRY=true``), serving an
instrumented App; two queries, then the process ends as a server's would.

    python engine_telemetry_probe.py SETUP APP [without-genai-instrumentation]

SETUP says how adk-otel (and any provider) was set up before ``set_up()``:
``instrument`` (``instrument(App)``, which resolves its provider at once),
``plugin`` (``App(plugins=[AdkOtelPlugin()])``, resolved at the first run),
``provider_first`` (the application's SDK provider set before ADK's import,
then ``instrument(App)``), ``env`` (``OTEL_PYTHON_TRACER_PROVIDER=adk_otel``,
set by the parent, then ``instrument(App)``); ``plugin_enable_tracing``, as
``plugin`` with ``AdkApp(enable_tracing=True)`` for the environment variable.
APP: ``clerk`` (a plain agent: ADK's telemetry module is loaded by the Runner
``set_up()`` builds, after it set its provider) or ``flow`` (a ``Workflow``, whose
import loads it). ``without-genai-instrumentation``: as if
opentelemetry-instrumentation-google-genai were not installed (``set_up()`` turns
it on when it is).

AdkApp exports over OTLP/HTTP with an authorized session to Google's telemetry
endpoint: here the endpoint is the test's receiver (TELEMETRY_RECEIVER) and the
credentials are anonymous. Nothing else is replaced.
"""

from __future__ import annotations

import asyncio
import os
import sys
import warnings

warnings.filterwarnings("ignore")

SETUP, APP = sys.argv[1:3]
if "without-genai-instrumentation" in sys.argv[3:]:
    sys.modules["opentelemetry.instrumentation.google_genai"] = None  # type: ignore[assignment]

if SETUP == "provider_first":
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    trace.set_tracer_provider(TracerProvider())

import google.auth  # noqa: E402
from google.auth.credentials import AnonymousCredentials  # noqa: E402

google.auth.default = lambda *args, **kwargs: (AnonymousCredentials(), "test-project")

import vertexai  # noqa: E402
from vertexai.agent_engines import AdkApp  # noqa: E402
from vertexai.agent_engines.templates import adk as adk_template  # noqa: E402

adk_template._DEFAULT_TELEMETRY_ENDPOINT = os.environ["TELEMETRY_RECEIVER"] + "/v1/traces"
adk_template._DEFAULT_TELEMETRY_LOGS_ENDPOINT = os.environ["TELEMETRY_RECEIVER"] + "/v1/logs"
vertexai.init(project="test-project", location="us-central1", credentials=AnonymousCredentials())

from travel_agents import clerk_app, flow_app  # noqa: E402

import adk_otel  # noqa: E402

build = clerk_app if APP == "clerk" else flow_app
# Whether ADK's telemetry module (and so the tracer ADK holds) was loaded when
# adk-otel was set up: a plain agent's imports leave it to set_up()'s Runner.
TELEMETRY = "google.adk.telemetry.tracing"
if SETUP.startswith("plugin"):
    loaded = TELEMETRY in sys.modules
    app = build(plugins=[adk_otel.AdkOtelPlugin()])
else:
    built = build()
    loaded = TELEMETRY in sys.modules
    app = adk_otel.instrument(built)
print("ADK telemetry loaded before adk-otel:", loaded)
# plugin_enable_tracing: AdkApp's own switch instead of the environment variable.
adk_app = (
    AdkApp(app=app, enable_tracing=True) if SETUP.endswith("enable_tracing") else AdkApp(app=app)
)
adk_app.set_up()


async def main() -> None:
    for _ in range(2):
        async for _ in adk_app.async_stream_query(user_id="u", message="hi"):
            pass


asyncio.run(main())
from opentelemetry import trace  # noqa: E402

trace.get_tracer_provider().force_flush()  # type: ignore[attr-defined]
print("done")
