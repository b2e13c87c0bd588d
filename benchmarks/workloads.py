"""The agent workloads every benchmark runs: real ADK agents on the scripted model.

* ``single``: one ``LlmAgent``, one model call.
* ``tool``: one ``LlmAgent`` that calls a function tool, then answers (two
  model calls and a tool round trip).
* ``sequential``: a ``SequentialAgent`` of three ``LlmAgent``\\ s, one model
  call each.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from google.adk.agents import BaseAgent, LlmAgent, ParallelAgent, SequentialAgent
from google.adk.runners import InMemoryRunner
from google.genai import types

from adk_otel.testing.model import ScriptedModel, call, reply

APP = "bench"
USER = "bench-user"
MESSAGE = types.Content(role="user", parts=[types.Part(text="hello")])


def lookup(sku: str) -> dict[str, Any]:
    """Stock level of one SKU."""
    return {"sku": sku, "in_stock": 3}


def single() -> BaseAgent:
    return LlmAgent(name="solo", model=ScriptedModel(script=[reply("hi")]))


def tool() -> BaseAgent:
    model = ScriptedModel(script=[call("lookup", {"sku": "A1"}), reply("3 in stock")])
    return LlmAgent(name="clerk", model=model, tools=[lookup])


def sequential() -> BaseAgent:
    model = ScriptedModel(script=[reply("done")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return SequentialAgent(
            name="pipeline",
            sub_agents=[LlmAgent(name=f"step{i}", model=model) for i in range(3)],
        )


def parallel() -> BaseAgent:
    """A Parallel agent of two branches, each a Sequential of two (load tests)."""
    model = ScriptedModel(script=[reply("done")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        branches = [
            SequentialAgent(
                name=f"branch{b}",
                sub_agents=[LlmAgent(name=f"b{b}s{i}", model=model) for i in range(2)],
            )
            for b in range(2)
        ]
        return ParallelAgent(name="fanout", sub_agents=branches)


WORKLOADS: dict[str, Callable[[], BaseAgent]] = {
    "single": single,
    "tool": tool,
    "sequential": sequential,
}

ADK_OTEL_SPANS = {"single": 3, "tool": 5, "sequential": 8}
"""Spans adk-otel records per invocation of each workload."""


def runner_for(workload: str) -> InMemoryRunner:
    return InMemoryRunner(agent=WORKLOADS[workload](), app_name=APP)


async def new_session(runner: InMemoryRunner) -> str:
    session = await runner.session_service.create_session(app_name=APP, user_id=USER)
    return session.id


async def invoke(runner: InMemoryRunner, session_id: str) -> int:
    """One invocation, consumed to the end; returns the number of events."""
    events = 0
    async for _ in runner.run_async(user_id=USER, session_id=session_id, new_message=MESSAGE):
        events += 1
    return events


async def delete_sessions(runner: InMemoryRunner, session_ids: list[str]) -> None:
    for session_id in session_ids:
        await runner.session_service.delete_session(
            app_name=APP, user_id=USER, session_id=session_id
        )


async def invoke_on_new_session(runner: InMemoryRunner) -> int:
    """One invocation on a session made for it and deleted afterwards (so a
    long run keeps no sessions); returns the number of events."""
    session_id = await new_session(runner)
    events = await invoke(runner, session_id)
    await runner.session_service.delete_session(app_name=APP, user_id=USER, session_id=session_id)
    return events
