"""Run by test_abandoned.py in a fresh process: a run is left in flight (its
event loop stops and is never resumed, as when an application exits mid-run),
then the process exits normally. adk-otel's pipeline comes from ``OTEL_*``."""

from __future__ import annotations

import asyncio

from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.genai import types

import adk_otel
from adk_otel.testing.model import ScriptedModel, call, reply

started = asyncio.Event()


async def slow_lookup(sku: str) -> dict:
    """Stock for a SKU; never answers."""
    started.set()
    await asyncio.Event().wait()
    return {}


agent = LlmAgent(
    name="clerk",
    model=ScriptedModel(script=[call("slow_lookup", {"sku": "A1"}), reply("ok")]),
    tools=[slow_lookup],
)
runner = adk_otel.instrument(InMemoryRunner(agent=agent, app_name="shop"))


async def run() -> None:
    session = await runner.session_service.create_session(app_name="shop", user_id="u")
    async for _ in runner.run_async(
        user_id="u", session_id=session.id, new_message=types.UserContent("go")
    ):
        pass


loop = asyncio.new_event_loop()
task = loop.create_task(run())
loop.run_until_complete(started.wait())
# The loop stops here with the run in flight; the process then exits.
print("LEFT IN FLIGHT" if not task.done() else "FINISHED", flush=True)
