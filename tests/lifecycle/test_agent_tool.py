"""``AgentTool``: a whole nested run (new invocation id and session) inside a
tool call, from a Runner ADK builds itself, out of reach of our runner
wrapper. It must hang under the calling ``execute_tool`` span, in one trace."""

from __future__ import annotations

from google.adk.agents import LlmAgent
from google.adk.tools.agent_tool import AgentTool

from adk_otel.semconv import ERROR_TYPE
from adk_otel.testing.model import ScriptedModel, Step, call, calls, fail, reply

from .agents import ToolFailed, clerk, lookup, runner_for
from .harness import APP, assert_clean, drive, shape

INV = f"invocation {APP}"
MODEL = "generate_content scripted-model"


def helper(*script: Step) -> LlmAgent:
    return LlmAgent(
        name="helper",
        description="Answers stock questions.",
        model=ScriptedModel(script=list(script)),
        tools=[lookup],
    )


def boss(*script: Step, tool: AgentTool) -> LlmAgent:
    return clerk(*script, name="boss", tools=[tool])


async def test_nested_run_is_a_child_of_the_tool_span(recorder, caplog):
    inner = helper(call("lookup", {"sku": "A1"}), reply("3 left"))
    outer = boss(call("helper", {"request": "stock of A1?"}), reply("done"), tool=AgentTool(inner))

    result = await drive(runner_for(outer))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "OK", "ok"),
        (1, "invoke_agent boss", "OK", "ok"),
        (2, MODEL, "OK", "ok"),
        (2, "execute_tool helper", "OK", "ok"),
        (3, INV, "OK", "ok"),
        (4, "invoke_agent helper", "OK", "ok"),
        (5, MODEL, "OK", "ok"),
        (5, "execute_tool lookup", "OK", "ok"),
        (5, MODEL, "OK", "ok"),
        (2, MODEL, "OK", "ok"),
    ]
    outer_run, nested_run = sorted(recorder.named(INV), key=lambda s: s.start_time)
    agent_tool = recorder.one("execute_tool helper")
    assert recorder.parent_of(nested_run) is agent_tool
    assert recorder.parent_of(recorder.one("invoke_agent helper")) is nested_run
    assert {s.context.trace_id for s in recorder.spans} == {outer_run.context.trace_id}
    # A new invocation and a new session for the nested run.
    outer_id = outer_run.attributes["adk.invocation.id"]
    nested_id = nested_run.attributes["adk.invocation.id"]
    assert outer_id == result.events[0].invocation_id
    assert nested_id != outer_id
    assert outer_run.attributes["gen_ai.conversation.id"] == result.session_id
    assert nested_run.attributes["gen_ai.conversation.id"] != result.session_id
    for name in ("invoke_agent helper", "execute_tool lookup"):
        assert recorder.one(name).attributes["adk.invocation.id"] == nested_id, name
    for name in ("invoke_agent boss", "execute_tool helper"):
        assert recorder.one(name).attributes["adk.invocation.id"] == outer_id, name


async def test_two_agent_tool_calls_at_once(recorder, caplog):
    """ADK runs both calls concurrently: each nested run under its own tool span."""
    inner = helper(reply("answer"))
    both = calls(("helper", {"request": "one"}), ("helper", {"request": "two"}))
    outer = boss(both, reply("done"), tool=AgentTool(inner))

    result = await drive(runner_for(outer))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    tool_spans = recorder.named("execute_tool helper")
    nested_runs = [s for s in recorder.named(INV) if recorder.parent_of(s) is not None]
    assert len(tool_spans) == 2 and len(nested_runs) == 2
    assert {recorder.parent_of(run).context.span_id for run in nested_runs} == {
        tool.context.span_id for tool in tool_spans
    }
    for run in nested_runs:
        agents = [s for s in recorder.named("invoke_agent helper") if recorder.parent_of(s) is run]
        assert len(agents) == 1
        assert [recorder.parent_of(s) for s in recorder.named(MODEL)].count(agents[0]) == 1
    assert len({s.context.trace_id for s in recorder.spans}) == 1
    assert len(recorder.spans) == 1 + 1 + 2 + 2 * 4


async def test_nested_agent_fails(recorder, caplog):
    boom = RuntimeError("nested model down")
    outer = boss(
        call("helper", {"request": "q"}), reply("never"), tool=AgentTool(helper(fail(boom)))
    )

    result = await drive(runner_for(outer))

    assert result.error is boom
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "ERROR", "error"),
        (1, "invoke_agent boss", "ERROR", "error"),
        (2, MODEL, "OK", "ok"),
        (2, "execute_tool helper", "ERROR", "error"),
        (3, INV, "ERROR", "error"),
        (4, "invoke_agent helper", "ERROR", "error"),
        (5, MODEL, "ERROR", "error"),
    ]
    for span in recorder.spans:
        if span.status.status_code.name == "ERROR":
            assert span.attributes[ERROR_TYPE] == "RuntimeError", span.name
    nested_run = next(s for s in recorder.named(INV) if recorder.parent_of(s) is not None)
    assert recorder.parent_of(nested_run) is recorder.one("execute_tool helper")


async def test_nested_tool_fails(recorder, caplog):
    """The failure starts two layers down: one ERROR per layer, in both runs."""
    inner = helper(call("lookup", {"sku": "bad"}), reply("never"))
    outer = boss(call("helper", {"request": "q"}), reply("never"), tool=AgentTool(inner))

    result = await drive(runner_for(outer))

    assert isinstance(result.error, ToolFailed)
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "ERROR", "error"),
        (1, "invoke_agent boss", "ERROR", "error"),
        (2, MODEL, "OK", "ok"),
        (2, "execute_tool helper", "ERROR", "error"),
        (3, INV, "ERROR", "error"),
        (4, "invoke_agent helper", "ERROR", "error"),
        (5, MODEL, "OK", "ok"),
        (5, "execute_tool lookup", "ERROR", "error"),
    ]
    for span in recorder.spans:
        if span.status.status_code.name == "ERROR":
            assert span.attributes[ERROR_TYPE].endswith("ToolFailed"), span.name
