"""Runs in a fresh process: load a pickled App (or Agent Engine ``AdkApp``),
run it twice, and print what the plugin that arrived reports.

``python travel_probe.py PATH LOADER KIND``: PATH holds the pickle, LOADER is
``pickle`` or ``cloudpickle``, KIND is ``app`` (an ADK App: two runs through
a Runner built here) or ``adkapp`` (``AdkApp.set_up()``, then one
``async_stream_query`` and one ``stream_query``, as Agent Engine's server does).
Nothing of adk-otel is imported before the pickle is loaded, and no provider
is set: adk-otel builds its pipeline from ``OTEL_*`` (the test's OTLP
receiver) on first use; or, with ``TELEMETRY_RECEIVER`` set, AdkApp's own
telemetry is on (``GOOGLE_CLOUD_AGENT_ENGINE_ENABLE_TELEMETRY=true``) and
exports to that receiver in place of Google's endpoint, with anonymous
credentials. Prints one JSON line.
"""

import asyncio
import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")

if os.environ.get("TELEMETRY_RECEIVER"):
    import google.auth
    from google.auth.credentials import AnonymousCredentials
    from vertexai.agent_engines.templates import adk as adk_template

    google.auth.default = lambda *args, **kwargs: (AnonymousCredentials(), "test-project")
    receiving = os.environ["TELEMETRY_RECEIVER"]
    adk_template._DEFAULT_TELEMETRY_ENDPOINT = f"{receiving}/v1/traces"
    adk_template._DEFAULT_TELEMETRY_LOGS_ENDPOINT = f"{receiving}/v1/logs"
    os.environ["GOOGLE_CLOUD_AGENT_ENGINE_ENABLE_TELEMETRY"] = "true"

path, loader, kind = sys.argv[1:4]
before = sorted(name for name in sys.modules if name.split(".")[0] == "adk_otel")
if os.environ.get("TELEMETRY_RECEIVER"):
    import vertexai

    vertexai.init(
        project="test-project", location="us-central1", credentials=AnonymousCredentials()
    )
load = __import__(loader).load
with open(path, "rb") as file:
    loaded = load(file)

from google.adk.runners import InMemoryRunner  # noqa: E402
from google.genai import types  # noqa: E402

import adk_otel  # noqa: E402  (already imported by the pickle)


async def two_runs(app):
    runner = InMemoryRunner(app=app)
    for text in ("first", "second"):
        session = await runner.session_service.create_session(app_name=app.name, user_id="u")
        async for _ in runner.run_async(
            user_id="u", session_id=session.id, new_message=types.UserContent(text)
        ):
            pass
    await runner.close()


async def one_async_query(adk_app):
    return [e async for e in adk_app.async_stream_query(message="first", user_id="u")]


if kind == "app":
    app = loaded
    asyncio.run(two_runs(app))
else:
    loaded.set_up()
    app = loaded._tmpl_attrs["app"]
    answers = [
        asyncio.run(one_async_query(loaded)),
        list(loaded.stream_query(message="second", user_id="u")),
    ]
    assert all(answer for answer in answers), answers

plugin = adk_otel.plugin_of(app)
print(
    json.dumps(
        {
            "imported_before_load": before,
            "plugin": type(plugin).__name__,
            "internal_errors": plugin.internal_errors,
            "open_spans": plugin.open_spans,
        }
    )
)
