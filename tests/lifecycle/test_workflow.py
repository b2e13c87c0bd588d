"""A ``Workflow`` graph as the root node: the plugin's layers inside it.

Function nodes get no plugin hooks at all: their spans come from ADK's node
tracing (test_nodes.py covers every node kind). Agent nodes get the agent
hooks. Tool nodes get the tool hooks on ADK 2.13, where the node's span is the
tool call's, but none on 2.5, whose tool node calls the tool directly: there
the node's span stands for it.
"""

from __future__ import annotations

import asyncio
from importlib.metadata import version
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.adk.tools import FunctionTool
from google.adk.workflow import JoinNode, RetryConfig, Workflow

import adk_otel
from adk_otel.semconv import ERROR_TYPE
from adk_otel.testing.model import ScriptedModel, Step, call, fail, reply

from .agents import AgentCrashed, CrashingAgent, ToolFailed, lookup
from .harness import APP, assert_clean, drive, shape

INV = f"invocation {APP}"
ADK_VERSION = tuple(int(part) for part in version("google-adk").split(".")[:2])
MODEL = "generate_content scripted-model"
TOOL_NODE_HOOKS = ADK_VERSION >= (2, 13)
"""ADK 2.13's tool node runs the tool between the plugin tool hooks; 2.5's does not."""


class NodeFailed(RuntimeError):
    pass


def prepare() -> dict[str, Any]:
    """Function node: builds the tool node's arguments."""
    return {"sku": "A1"}


def prepare_bad() -> dict[str, Any]:
    return {"sku": "bad"}


def broken_prepare() -> dict[str, Any]:
    raise NodeFailed("prepare broke")


def writer(*script: Step, **options: Any) -> LlmAgent:
    return LlmAgent(
        name="writer",
        model=ScriptedModel(script=list(script) or [reply("written")]),
        instruction="Write it up.",
        **options,
    )


def flow_runner(*nodes: Any) -> InMemoryRunner:
    workflow = Workflow(name="flow", edges=[("START", *nodes)])
    return adk_otel.instrument(InMemoryRunner(node=workflow, app_name=APP))


TOOL = "execute_tool lookup" if TOOL_NODE_HOOKS else "invoke_node lookup"


def tool_row(depth: int, status: str, outcome: str) -> list[tuple[int, str, str, str]]:
    return [(depth, TOOL, status, outcome)]


def node_row(name: str, status: str = "OK", outcome: str = "ok") -> tuple[int, str, str, str]:
    return (1, f"invoke_node {name}", status, outcome)


def one_trace(recorder) -> None:
    traces = {s.context.trace_id for s in recorder.spans}
    assert len(traces) == 1, f"spans spread over {len(traces)} traces"


async def test_function_tool_and_agent_nodes_succeed(recorder, caplog):
    result = await drive(flow_runner(prepare, FunctionTool(lookup), writer()))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "OK", "ok"),
        node_row("prepare"),
        *tool_row(1, "OK", "ok"),
        (1, "invoke_agent writer", "OK", "ok"),
        (2, MODEL, "OK", "ok"),
    ]
    one_trace(recorder)
    invocation = recorder.one(INV)
    assert invocation.attributes["adk.invocation.id"] == result.events[0].invocation_id
    assert invocation.attributes["gen_ai.conversation.id"] == result.session_id
    # The root workflow is the run itself: no span of its own.
    assert not [s for s in recorder.spans if s.name.endswith(" flow")]
    tool = recorder.one(TOOL)
    assert recorder.parent_of(tool) is invocation
    assert tool.attributes["adk.invocation.id"] == invocation.attributes["adk.invocation.id"]


async def test_function_node_raises(recorder, caplog):
    result = await drive(flow_runner(broken_prepare, FunctionTool(lookup), writer()))

    assert isinstance(result.error, NodeFailed)
    assert_clean(recorder, caplog.records)
    # Nothing after the failed node ran.
    assert shape(recorder) == [
        (0, INV, "ERROR", "error"),
        node_row("broken_prepare", "ERROR", "error"),
    ]
    invocation = recorder.one(INV)
    assert invocation.attributes[ERROR_TYPE].endswith("NodeFailed")
    assert "prepare broke" in invocation.status.description


async def test_agent_node_model_fails(recorder, caplog):
    boom = RuntimeError("model unavailable")
    result = await drive(flow_runner(prepare, FunctionTool(lookup), writer(fail(boom))))

    assert result.error is boom
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "ERROR", "error"),
        node_row("prepare"),
        *tool_row(1, "OK", "ok"),
        (1, "invoke_agent writer", "ERROR", "error"),
        (2, MODEL, "ERROR", "error"),
    ]
    one_trace(recorder)
    for name in (INV, "invoke_agent writer", MODEL):
        assert recorder.one(name).attributes[ERROR_TYPE] == "RuntimeError", name


async def test_agent_node_body_raises(recorder, caplog):
    result = await drive(flow_runner(prepare, FunctionTool(lookup), CrashingAgent(name="writer")))

    assert isinstance(result.error, AgentCrashed)
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "ERROR", "error"),
        node_row("prepare"),
        *tool_row(1, "OK", "ok"),
        (1, "invoke_agent writer", "ERROR", "error"),
    ]
    one_trace(recorder)
    assert recorder.one("invoke_agent writer").attributes[ERROR_TYPE].endswith("AgentCrashed")
    assert recorder.one(INV).attributes[ERROR_TYPE].endswith("AgentCrashed")


async def test_tool_node_raises(recorder, caplog):
    """ADK 2.5's tool node fires no tool hooks: there its node span shows it."""
    result = await drive(flow_runner(prepare_bad, FunctionTool(lookup), writer()))

    assert isinstance(result.error, ToolFailed)
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "ERROR", "error"),
        node_row("prepare_bad"),
        *tool_row(1, "ERROR", "error"),
    ]
    one_trace(recorder)
    for name in (INV, TOOL):
        assert recorder.one(name).attributes[ERROR_TYPE].endswith("ToolFailed"), name


async def test_agent_node_retried_after_a_failure(recorder, caplog):
    """RetryConfig: eA for the failed attempt, then a new bA: two agent spans."""
    answers = iter([fail(RuntimeError("flaky")), reply("written")])
    model = ScriptedModel(choose=lambda request: next(answers))
    agent = LlmAgent(
        name="writer",
        model=model,
        instruction="Write it up.",
        retry_config=RetryConfig(max_attempts=2, initial_delay=0, max_delay=0, jitter=0),
    )

    result = await drive(flow_runner(prepare, agent))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "OK", "ok"),
        node_row("prepare"),
        (1, "invoke_agent writer", "ERROR", "error"),
        (2, MODEL, "ERROR", "error"),
        (1, "invoke_agent writer", "OK", "ok"),
        (2, MODEL, "OK", "ok"),
    ]
    one_trace(recorder)


async def test_agent_node_with_its_own_tool(recorder, caplog):
    """A tool the agent node calls hangs under that agent, not under the run."""
    agent = writer(call("lookup", {"sku": "A1"}), reply("3 left"), tools=[lookup])

    result = await drive(flow_runner(prepare, agent))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "OK", "ok"),
        node_row("prepare"),
        (1, "invoke_agent writer", "OK", "ok"),
        (2, MODEL, "OK", "ok"),
        (2, "execute_tool lookup", "OK", "ok"),
        (2, MODEL, "OK", "ok"),
    ]


async def test_fan_out_to_two_agent_nodes(recorder, caplog):
    """Both branches' model calls are in flight at once; each stays under its
    agent. The join node is a node span, as a function node is."""
    started = {"north": asyncio.Event(), "south": asyncio.Event()}
    both_started = asyncio.Event()

    async def open_gate_when_both_started() -> None:
        for event in started.values():
            await event.wait()
        both_started.set()

    def branch(name: str) -> LlmAgent:
        step = reply(f"{name} done", started=started[name], gate=both_started)
        return LlmAgent(name=name, model=ScriptedModel(script=[step]), instruction="Report.")

    gate_opener = asyncio.create_task(open_gate_when_both_started())
    async with asyncio.timeout(30):  # a guard against a deadlock, not synchronisation
        result = await drive(
            flow_runner(prepare, (branch("north"), branch("south")), JoinNode(name="merge"))
        )
    await gate_opener

    assert result.error is None
    assert_clean(recorder, caplog.records)
    rows = shape(recorder)
    assert rows[0] == (0, INV, "OK", "ok")
    assert sorted(rows[1:]) == [
        (1, "invoke_agent north", "OK", "ok"),
        (1, "invoke_agent south", "OK", "ok"),
        node_row("merge"),
        node_row("prepare"),
        (2, MODEL, "OK", "ok"),
        (2, MODEL, "OK", "ok"),
    ]
    for name in ("north", "south"):
        agent_span = recorder.one(f"invoke_agent {name}")
        assert recorder.parent_of(agent_span) is recorder.one(INV)
        (model_span,) = [s for s in recorder.named(MODEL) if recorder.parent_of(s) is agent_span]
        assert model_span.attributes["gen_ai.agent.name"] == name
    one_trace(recorder)


# -- what the invocation span says the run was ----------------------------------------


def assert_workflow_run(invocation: Any, name: str) -> None:
    assert invocation.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert invocation.attributes["gen_ai.workflow.name"] == name
    # The workflow is no agent: the agents it runs are its invoke_agent children.
    assert "gen_ai.agent.name" not in invocation.attributes
    assert invocation.attributes["openinference.span.kind"] == "CHAIN"


async def test_a_workflow_root_is_an_invoke_workflow_run(recorder, caplog):
    result = await drive(flow_runner(prepare, writer()))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert_workflow_run(recorder.one(INV), "flow")
    agent = recorder.one("invoke_agent writer")
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert recorder.parent_of(agent) is recorder.one(INV)


async def test_an_app_with_a_workflow_root_is_an_invoke_workflow_run(recorder, caplog):
    """instrument(App) before the Runner is built: the App names the root."""
    from google.adk.apps import App

    app = adk_otel.instrument(
        App(name=APP, root_agent=Workflow(name="flow", edges=[("START", prepare, writer())]))
    )
    result = await drive(InMemoryRunner(app=app))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert_workflow_run(recorder.one(INV), "flow")


async def test_agent_roots_are_no_workflow_runs(recorder, caplog):
    """ADK's workflow *agents* (Sequential, Parallel, Loop) are agents: the
    conventions ask ADK to report them as invoke_agent, never invoke_workflow."""
    from google.adk.agents import LoopAgent, ParallelAgent, SequentialAgent

    roots = [
        writer(),
        SequentialAgent(name="steps", sub_agents=[writer()]),
        ParallelAgent(name="fan", sub_agents=[writer()]),
        LoopAgent(name="loop", max_iterations=1, sub_agents=[writer()]),
    ]
    for root in roots:
        runner = adk_otel.instrument(InMemoryRunner(agent=root, app_name=APP))
        result = await drive(runner)
        assert result.error is None

    assert_clean(recorder, caplog.records)
    invocations = recorder.named(INV)
    assert [s.attributes["gen_ai.agent.name"] for s in invocations] == [r.name for r in roots]
    for span in invocations:
        assert "gen_ai.operation.name" not in span.attributes
        assert "gen_ai.workflow.name" not in span.attributes
        assert span.attributes["openinference.span.kind"] == "CHAIN"
    for root in roots[1:]:
        agent = recorder.one(f"invoke_agent {root.name}")
        assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
        assert agent.attributes["adk.agent.type"] == type(root).__name__
    writers = recorder.named("invoke_agent writer")
    assert len(writers) == 4
    assert {s.attributes["gen_ai.operation.name"] for s in writers} == {"invoke_agent"}
