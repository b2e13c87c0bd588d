"""What reading an agent's model costs adk-otel, by how the agent names it.

The other benchmarks give their agents a model object (the scripted model).
Most applications name it by string (``LlmAgent(model="gemini-2.5-flash")``),
and ADK resolves a string through its model registry on every read of
``canonical_model``: a new model object each time on ADK 2.5, a keyed cache
look-up on 2.13. adk-otel reads an agent's model for every agent span and
model call (the provider, the endpoint). This times, on the real callback
context and request of one real run, ADK's read (``canonical_model``),
adk-otel's read (kept per agent object) and the two attribute builders that
use it, for an agent naming a registered scripted model by string and for
one holding the same model as an object. µs per call, best of ``--repeats``.

Usage: ``python benchmarks/model_reads.py [--repeats 7] [--calls 2000] [--json PATH]``
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import timeit
from pathlib import Path
from typing import Any

from report import emit  # this directory: the benchmark scripts run from it

MODEL = "bench-registered-model"


def _registered_model_class() -> Any:
    from google.adk.models.registry import LLMRegistry

    from adk_otel.testing.model import ScriptedModel

    class RegisteredModel(ScriptedModel):
        """The scripted model, built by ADK's registry from its name."""

        @classmethod
        def supported_models(cls) -> list[str]:
            return [r"bench-registered-.*"]

    LLMRegistry.register(RegisteredModel)
    return RegisteredModel


def _seen_in_one_run(agent: Any) -> tuple[Any, Any]:
    """The callback context and request of the agent's model call in one real run."""
    from google.adk.plugins.base_plugin import BasePlugin
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    seen: list[tuple[Any, Any]] = []

    class Keep(BasePlugin):
        async def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> None:
            seen.append((callback_context, llm_request))

    async def go() -> None:
        runner = InMemoryRunner(agent=agent, app_name="bench", plugins=[Keep(name="keep")])
        session = await runner.session_service.create_session(app_name="bench", user_id="u")
        async for _ in runner.run_async(
            user_id="u", session_id=session.id, new_message=types.UserContent("hello")
        ):
            pass

    asyncio.run(go())
    return seen[0]


def _reads(model: Any) -> dict[str, Any]:
    """The reads to time, on the objects of one real run of an agent holding ``model``."""
    from google.adk.agents import LlmAgent

    from adk_otel.reading import attributes as attrs

    callback_context, llm_request = _seen_in_one_run(LlmAgent(name="clerk", model=model))
    agent = callback_context._invocation_context.agent  # the run's own agent object
    return {
        "ADK's canonical_model": lambda: agent.canonical_model,
        "adk-otel's read": lambda: attrs._agent_model(agent),
        "agent span attributes": lambda: attrs.agent(agent, callback_context, None),
        "model call attributes": lambda: attrs.model_request(callback_context, llm_request),
    }


def measure(repeats: int, calls: int) -> dict[str, dict[str, float]]:
    model_class = _registered_model_class()
    table: dict[str, dict[str, float]] = {}
    for naming, model in (("by string", MODEL), ("by object", model_class(model=MODEL))):
        table[naming] = {
            what: min(timeit.repeat(read, number=calls, repeat=repeats)) / calls * 1e6
            for what, read in _reads(model).items()
        }
    return table


def markdown(table: dict[str, dict[str, float]]) -> str:
    columns = list(next(iter(table.values())))
    lines = [
        "| model named | " + " | ".join(f"{c}, µs" for c in columns) + " |",
        "|---" * (len(columns) + 1) + "|",
    ]
    for naming, row in table.items():
        lines.append(f"| {naming} | " + " | ".join(f"{row[c]:.2f}" for c in columns) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed repeats (best kept)")
    parser.add_argument("--calls", type=int, default=2000, help="calls per repeat")
    parser.add_argument("--json", type=Path, help="also write the results here")
    options = parser.parse_args()
    table = measure(options.repeats, options.calls)
    return emit(markdown(table), table, options.json)


if __name__ == "__main__":
    sys.exit(main())
