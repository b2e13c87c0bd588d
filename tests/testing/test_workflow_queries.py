"""The query API on a real workflow run captured by ``TraceCapture``: nodes,
attempts, loop passes and parallel branches can be selected."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.agents import LlmAgent, LoopAgent, ParallelAgent, SequentialAgent
from google.adk.runners import InMemoryRunner
from google.adk.workflow import FunctionNode, RetryConfig, Workflow
from google.genai import types

from adk_otel.testing import ScriptedModel, TraceCapture, reply
from adk_otel.traces.query import SpecError


async def run(capture: TraceCapture, root: Any) -> None:
    if isinstance(root, Workflow):
        runner = capture.instrument(InMemoryRunner(node=root, app_name="shop"))
    else:
        runner = capture.instrument(InMemoryRunner(agent=root, app_name="shop"))
    session = await runner.session_service.create_session(app_name="shop", user_id="u")
    async for _ in runner.run_async(
        user_id="u", session_id=session.id, new_message=types.UserContent("hi")
    ):
        pass


async def test_nodes_and_attempts() -> None:
    tries = {"n": 0}

    def flaky(node_input: Any) -> Any:
        tries["n"] += 1
        if tries["n"] == 1:
            raise RuntimeError("first attempt")
        return node_input

    def prepare() -> str:
        return "ready"

    retry = RetryConfig(max_attempts=2, initial_delay=0, max_delay=0, jitter=0)
    flow = Workflow(
        name="flow", edges=[("START", prepare, FunctionNode(func=flaky, retry_config=retry))]
    )
    capture = TraceCapture()
    await run(capture, flow)
    q = capture.query()

    assert [s.name for s in q.node()] == [
        "invoke_node prepare",
        "invoke_node flaky",
        "invoke_node flaky",
    ]
    assert q.node("flaky").attempt(1).one().status_code == "ERROR"
    assert q.node("flaky").attempt(2).one().status_code == "OK"
    assert q.node("prepare").under(q.invocation("shop")).one().attributes["adk.node.kind"] == (
        "function"
    )
    q.node("flaky").attempt(3).none()
    with pytest.raises(SpecError, match="attempt must be a whole number from 1"):
        q.attempt(0)


async def test_loop_passes_and_parallel_branches() -> None:
    def talker(name: str, turns: int = 1) -> LlmAgent:
        return LlmAgent(
            name=name, model=ScriptedModel(script=[reply(f"{name} {i}") for i in range(turns)])
        )

    root = SequentialAgent(
        name="root",
        sub_agents=[
            LoopAgent(name="loop", max_iterations=2, sub_agents=[talker("draft", 2)]),
            ParallelAgent(name="fan", sub_agents=[talker("north"), talker("south")]),
        ],
    )
    capture = TraceCapture()
    await run(capture, root)
    q = capture.query()

    assert q.agent("draft").iteration(2).one().attributes["adk.loop.iteration"] == 2
    assert len(q.agent("draft")) == 2
    assert q.branch("north").agent().one().name == "invoke_agent north"
    q.branch("east").none()
