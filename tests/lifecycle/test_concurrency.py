"""Many invocations at once on one instrumented runner: one trace each, and no
span ever attached to another invocation's trace."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.llm_request import LlmRequest
from opentelemetry.sdk.trace import ReadableSpan

from adk_otel.semconv import ADK_INVOCATION_ID, GEN_AI_CONVERSATION_ID
from adk_otel.testing.model import ScriptedModel, Step, call, reply

from .agents import ToolFailed, runner_for
from .harness import APP, assert_clean, drive

INV = f"invocation {APP}"
MODEL = "generate_content scripted-model"
RUNS = 100


def failing(i: int) -> bool:
    return i % 7 == 3


class AllInFlight:
    """Holds every tool call until all of them have started."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.started = 0
        self.all_started = asyncio.Event()

    async def lookup(self, sku: str) -> dict[str, Any]:
        """Stock level for a SKU."""
        self.started += 1
        if self.started == self.expected:
            self.all_started.set()
        await self.all_started.wait()
        if sku.startswith("bad"):
            raise ToolFailed(f"no such sku: {sku}")
        return {"sku": sku, "stock": 3}


def sku_from_request(request: LlmRequest) -> Step:
    """Call the tool with the SKU the user asked about, then answer."""
    turns = sum(1 for c in request.contents if c.role == "model")
    if turns:
        return reply("done")
    user_text = next(c.parts[0].text for c in request.contents if c.role == "user")
    return call("lookup", {"sku": user_text})


def by_trace(spans: list[ReadableSpan]) -> dict[int, list[ReadableSpan]]:
    traces: dict[int, list[ReadableSpan]] = defaultdict(list)
    for span in spans:
        traces[span.context.trace_id].append(span)
    return traces


async def test_hundred_concurrent_invocations(recorder, caplog):
    gate = AllInFlight(RUNS)
    agent = LlmAgent(
        name="clerk", model=ScriptedModel(choose=sku_from_request), tools=[gate.lookup]
    )
    runner = runner_for(agent)
    skus = [f"bad-{i}" if failing(i) else f"A{i}" for i in range(RUNS)]

    async with asyncio.timeout(60):  # a guard against a deadlock, not synchronisation
        results = await asyncio.gather(*(drive(runner, sku) for sku in skus))

    assert gate.all_started.is_set() and gate.started == RUNS
    for sku, result in zip(skus, results, strict=True):
        if sku.startswith("bad"):
            assert isinstance(result.error, ToolFailed), sku
        else:
            assert result.error is None, sku
    assert_clean(recorder, caplog.records)

    result_by_session = {r.session_id: (sku, r) for sku, r in zip(skus, results, strict=True)}
    traces = by_trace(recorder.spans)
    assert len(traces) == RUNS
    seen_sessions = set()
    for spans in traces.values():
        (invocation,) = [s for s in spans if s.name == INV]
        assert invocation.parent is None
        session_id = invocation.attributes[GEN_AI_CONVERSATION_ID]
        invocation_id = invocation.attributes[ADK_INVOCATION_ID]
        sku, result = result_by_session[session_id]
        seen_sessions.add(session_id)
        assert {e.invocation_id for e in result.events} == {invocation_id}
        # Every span of the trace belongs to this invocation and session.
        for span in spans:
            assert span.attributes[ADK_INVOCATION_ID] == invocation_id, span.name
            if GEN_AI_CONVERSATION_ID in span.attributes:
                assert span.attributes[GEN_AI_CONVERSATION_ID] == session_id, span.name
        names = sorted(s.name for s in spans)
        outcomes = {s.name: s.attributes["adk.outcome"] for s in spans if s.name != MODEL}
        tool = next(s for s in spans if s.name == "execute_tool lookup")
        (function_call,) = result.events[0].get_function_calls()
        assert tool.attributes["gen_ai.tool.call.id"] == function_call.id
        assert function_call.args == {"sku": sku}
        agent_span = next(s for s in spans if s.name == "invoke_agent clerk")
        assert tool.parent.span_id == agent_span.context.span_id
        assert agent_span.parent.span_id == invocation.context.span_id
        if sku.startswith("bad"):
            assert len(spans) == 4, sku
            assert names == sorted([INV, "invoke_agent clerk", MODEL, "execute_tool lookup"])
            assert set(outcomes.values()) == {"error"}, outcomes
        else:
            assert len(spans) == 5, sku
            assert names == sorted([INV, "invoke_agent clerk", MODEL, "execute_tool lookup", MODEL])
            assert set(outcomes.values()) == {"ok"}, outcomes
    assert seen_sessions == set(result_by_session)
    assert sum(failing(i) for i in range(RUNS)) == 14
