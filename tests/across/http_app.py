"""A user's own FastAPI service that runs an ADK agent per request, traced
with ``adk_otel.instrument()`` plus the one line that continues a caller's
``traceparent``: ``FastAPIInstrumentor.instrument_app(app)``
(opentelemetry-instrumentation-fastapi). Prints ``PORT n`` once listening.
"""

from __future__ import annotations

import warnings

warnings.filterwarnings("ignore")

from fastapi import FastAPI  # noqa: E402
from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.genai import types  # noqa: E402
from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor  # noqa: E402

import adk_otel  # noqa: E402
from adk_otel.cli.demo_remote import loopback_socket, serve_on  # noqa: E402
from adk_otel.testing.model import ScriptedModel, reply  # noqa: E402

agent = LlmAgent(name="clerk", model=ScriptedModel(script=[reply("ok")]))
runner = adk_otel.instrument(InMemoryRunner(agent=agent, app_name="shop"))
app = FastAPI()
FastAPIInstrumentor.instrument_app(app)  # the one line: continue the caller's trace


@app.post("/chat")
async def chat(body: dict) -> dict:
    session = await runner.session_service.create_session(app_name="shop", user_id="u")
    texts = []
    async for event in runner.run_async(
        user_id="u", session_id=session.id, new_message=types.UserContent(body["message"])
    ):
        texts += [p.text for p in (event.content.parts if event.content else []) if p.text]
    return {"texts": texts}


def main() -> None:
    serve_on(app, loopback_socket())


if __name__ == "__main__":
    main()
