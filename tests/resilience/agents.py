"""Agents and helpers shared by the resilience tests (real ADK, scripted model)."""

from __future__ import annotations

import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from google.adk.agents import BaseAgent, LlmAgent, ParallelAgent, SequentialAgent
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry.sdk.trace import ReadableSpan

from adk_otel.testing.model import ScriptedModel, call, reply

APP = "resilience"
USER = "user"
MESSAGE = types.Content(role="user", parts=[types.Part(text="hello")])


def lookup(sku: str) -> dict[str, Any]:
    """Stock level of one SKU."""
    return {"sku": sku, "in_stock": 3}


def sequential() -> BaseAgent:
    """Three agents in a row: 8 spans per invocation."""
    model = ScriptedModel(script=[reply("done")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return SequentialAgent(
            name="pipeline", sub_agents=[LlmAgent(name=f"step{i}", model=model) for i in range(3)]
        )


def tool_round_trip() -> BaseAgent:
    """One agent calling a function tool, then answering: 5 spans per invocation."""
    model = ScriptedModel(script=[call("lookup", {"sku": "A1"}), reply("3 in stock")])
    return LlmAgent(name="clerk", model=model, tools=[lookup])


def fan_out() -> BaseAgent:
    """A parallel fan-out of two branches (one with a tool round trip), then a
    summary agent."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        clerk = LlmAgent(
            name="clerk",
            model=ScriptedModel(script=[call("lookup", {"sku": "A1"}), reply("3 in stock")]),
            tools=[lookup],
        )
        writer = SequentialAgent(
            name="writer",
            sub_agents=[
                LlmAgent(name=f"draft{i}", model=ScriptedModel(script=[reply("text")]))
                for i in range(2)
            ],
        )
        both = ParallelAgent(name="both", sub_agents=[clerk, writer])
        summary = LlmAgent(name="summary", model=ScriptedModel(script=[reply("all done")]))
        return SequentialAgent(name="root", sub_agents=[both, summary])


FAN_OUT_SPANS = Counter(
    {
        f"invocation {APP}": 1,
        "invoke_agent root": 1,
        "invoke_agent both": 1,
        "invoke_agent clerk": 1,
        "execute_tool lookup": 1,
        "invoke_agent writer": 1,
        "invoke_agent draft0": 1,
        "invoke_agent draft1": 1,
        "invoke_agent summary": 1,
        "generate_content scripted-model": 5,
    }
)
"""Span names (with counts) of one ``fan_out`` invocation."""


def runner(agent: BaseAgent) -> InMemoryRunner:
    return InMemoryRunner(agent=agent, app_name=APP)


async def invoke(runner: InMemoryRunner) -> int:
    """One invocation on a fresh session, consumed to the end; the session is
    deleted afterwards. Returns the number of events."""
    session = await runner.session_service.create_session(app_name=APP, user_id=USER)
    events = 0
    async for _ in runner.run_async(user_id=USER, session_id=session.id, new_message=MESSAGE):
        events += 1
    await runner.session_service.delete_session(app_name=APP, user_id=USER, session_id=session.id)
    return events


def forget_requests(agent: BaseAgent) -> None:
    """Empty every scripted model's request history under ``agent`` (it keeps
    each request, which a long run would otherwise accumulate)."""
    model = getattr(agent, "model", None)
    if isinstance(model, ScriptedModel):
        model.requests.clear()
    for sub in agent.sub_agents:
        forget_requests(sub)


def traces(spans: Iterable[ReadableSpan]) -> dict[int, list[ReadableSpan]]:
    by_trace: dict[int, list[ReadableSpan]] = defaultdict(list)
    for span in spans:
        by_trace[span.context.trace_id].append(span)
    return by_trace


def trace_problems(spans: Sequence[ReadableSpan], expected: Counter[str]) -> list[str]:
    """What is wrong with one trace: not exactly one invocation span at its
    root, a parent outside the trace, or other span names than expected."""
    problems = []
    ids = {span.context.span_id for span in spans}
    roots = [span for span in spans if span.parent is None]
    if len(roots) != 1 or not roots[0].name.startswith("invocation "):
        problems.append(f"roots: {[span.name for span in roots]}")
    for span in spans:
        if span.parent is not None and span.parent.span_id not in ids:
            problems.append(f"{span.name}: parent outside the trace")
    names = Counter(span.name for span in spans)
    if names != expected:
        problems.append(f"spans: {dict(names - expected)} extra, {dict(expected - names)} missing")
    return problems
