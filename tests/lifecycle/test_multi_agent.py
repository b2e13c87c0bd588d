"""Sequential, Loop and Parallel agents, transfer, and ending an invocation early."""

from __future__ import annotations

from google.adk.agents import LlmAgent, LoopAgent, ParallelAgent, SequentialAgent

from adk_otel.testing.model import ScriptedModel, call, reply

from .agents import (
    AgentCrashed,
    CrashingAgent,
    ToolFailed,
    clerk,
    runner_for,
    stop_here,
    unwrap_group,
)
from .harness import APP, assert_clean, drive, shape

INV = f"invocation {APP}"
MODEL = "generate_content scripted-model"


async def test_sequential_children_nest_under_parent(recorder, caplog):
    root = SequentialAgent(
        name="pipeline",
        sub_agents=[clerk(reply("a"), name="first"), clerk(reply("b"), name="second")],
    )
    result = await drive(runner_for(root))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "OK", "ok"),
        (1, "invoke_agent pipeline", "OK", "ok"),
        (2, "invoke_agent first", "OK", "ok"),
        (3, MODEL, "OK", "ok"),
        (2, "invoke_agent second", "OK", "ok"),
        (3, MODEL, "OK", "ok"),
    ]
    assert recorder.one("invoke_agent second").attributes["adk.agent.parent"] == "pipeline"


async def test_loop_iterations_are_separate_spans(recorder, caplog):
    root = LoopAgent(name="loop", max_iterations=3, sub_agents=[clerk(reply("again"), name="step")])
    result = await drive(runner_for(root))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "OK", "ok"),
        (1, "invoke_agent loop", "OK", "ok"),
        *[
            row
            for _ in range(3)
            for row in [(2, "invoke_agent step", "OK", "ok"), (3, MODEL, "OK", "ok")]
        ],
    ]
    steps = recorder.named("invoke_agent step")
    assert len({s.context.span_id for s in steps}) == 3


async def test_parallel_branches_each_get_a_span(recorder, caplog):
    root = ParallelAgent(
        name="fanout",
        sub_agents=[
            clerk(call("lookup", {"sku": "A1"}), reply("a"), name="left"),
            clerk(reply("b"), name="right"),
        ],
    )
    result = await drive(runner_for(root))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    fanout = recorder.one("invoke_agent fanout")
    for branch in ("left", "right"):
        span = recorder.one(f"invoke_agent {branch}")
        assert recorder.parent_of(span) is fanout
        assert span.attributes["adk.outcome"] == "ok"
    tool = recorder.one("execute_tool lookup")
    assert recorder.parent_of(tool) is recorder.one("invoke_agent left")
    assert {row[3] for row in shape(recorder)} == {"ok"}


async def test_parallel_branch_fails(recorder, caplog):
    """The failing branch is ERROR; its sibling gets no hook from ADK and ends
    as incomplete (or cancelled, when it saw the cancellation) under its parent."""
    root = ParallelAgent(
        name="fanout",
        sub_agents=[
            CrashingAgent(name="broken"),
            clerk(call("lookup", {"sku": "A1"}), reply("a"), name="healthy"),
        ],
    )
    result = await drive(runner_for(root))

    assert isinstance(unwrap_group(result.error), AgentCrashed)
    assert_clean(recorder, caplog.records)
    assert recorder.one(INV).attributes["adk.outcome"] == "error"
    assert recorder.one("invoke_agent fanout").attributes["adk.outcome"] == "error"
    assert recorder.one("invoke_agent broken").attributes["adk.outcome"] == "error"
    sibling = recorder.one("invoke_agent healthy")
    assert sibling.attributes["adk.outcome"] in ("incomplete", "cancelled", "ok")
    assert sibling.status.status_code.name != "ERROR"
    assert recorder.parent_of(sibling) is recorder.one("invoke_agent fanout")


async def test_tool_failure_inside_sequential_is_error_on_each_layer(recorder, caplog):
    root = SequentialAgent(
        name="pipeline", sub_agents=[clerk(call("lookup", {"sku": "bad"}), reply("x"))]
    )
    result = await drive(runner_for(root))

    assert isinstance(result.error, ToolFailed)
    assert_clean(recorder, caplog.records)
    assert [row for row in shape(recorder) if row[2] == "ERROR"] == [
        (0, INV, "ERROR", "error"),
        (1, "invoke_agent pipeline", "ERROR", "error"),
        (2, "invoke_agent clerk", "ERROR", "error"),
        (3, "execute_tool lookup", "ERROR", "error"),
    ]


async def test_transfer_to_agent(recorder, caplog):
    billing = LlmAgent(
        name="billing",
        description="Handles invoices.",
        model=ScriptedModel(script=[reply("your invoice")]),
    )
    router = LlmAgent(
        name="router",
        model=ScriptedModel(script=[call("transfer_to_agent", {"agent_name": "billing"})]),
        sub_agents=[billing],
    )
    result = await drive(runner_for(router))

    assert result.error is None
    assert result.events[-1].content.parts[0].text == "your invoice"
    assert_clean(recorder, caplog.records)
    transfer = recorder.one("execute_tool transfer_to_agent")
    assert transfer.attributes["adk.outcome"] == "ok"
    target = recorder.one("invoke_agent billing")
    assert target.attributes["adk.outcome"] == "ok"
    assert target.attributes["gen_ai.agent.description"] == "Handles invoices."
    source = recorder.one("invoke_agent router")
    # ADK never gives the transfer source an after_agent: adk-otel ends it
    # OK when the target starts, naming the target.
    assert source.attributes["adk.outcome"] == "ok"
    assert source.attributes["adk.close_reason"] == "transferred"
    assert source.attributes["adk.transfer.target"] == "billing"
    assert source.end_time <= target.start_time
    assert recorder.one(INV).attributes["adk.outcome"] == "ok"


async def test_tool_ends_the_invocation(recorder, caplog):
    """ADK stops after the tool and gives the agent no after_agent."""
    agent = clerk(call("stop_here"), reply("never"), tools=[stop_here])
    result = await drive(runner_for(agent))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "OK", "ok"),
        (1, "invoke_agent clerk", "UNSET", "incomplete"),
        (2, MODEL, "OK", "ok"),
        (2, "execute_tool stop_here", "OK", "ok"),
    ]


async def test_loop_iterations_and_parallel_branches_are_on_the_agent_spans(recorder, caplog):
    """Every agent span a LoopAgent runs carries its pass (from 1), every span
    under a ParallelAgent its branch; spans below them inherit both."""

    def talker(name: str, turns: int = 1) -> LlmAgent:
        script = [reply(f"{name} {i}") for i in range(turns)]
        return LlmAgent(name=name, model=ScriptedModel(script=script), instruction="Talk.")

    loop = LoopAgent(
        name="loop", max_iterations=2, sub_agents=[talker("draft", 2), talker("review", 2)]
    )
    fan = ParallelAgent(
        name="fan",
        sub_agents=[talker("north"), SequentialAgent(name="south", sub_agents=[talker("deep")])],
    )
    root = SequentialAgent(name="root", sub_agents=[loop, fan])
    result = await drive(runner_for(root))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    for name in ("draft", "review"):
        passes = sorted(
            s.attributes["adk.loop.iteration"] for s in recorder.named(f"invoke_agent {name}")
        )
        assert passes == [1, 2], name
    assert "adk.loop.iteration" not in recorder.one("invoke_agent loop").attributes
    branches = {
        name: recorder.one(f"invoke_agent {name}").attributes.get("adk.parallel.branch")
        for name in ("north", "south", "deep", "fan")
    }
    assert branches == {"north": "north", "south": "south", "deep": "south", "fan": None}
