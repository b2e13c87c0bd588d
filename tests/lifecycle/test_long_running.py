"""Long-running tools: the pause looks like success, the resume is a new
``run_async`` with the same invocation id and gets its own invocation span."""

from __future__ import annotations

from typing import Any

from google.adk.agents import LlmAgent
from google.adk.apps import App, ResumabilityConfig
from google.adk.runners import InMemoryRunner
from google.adk.tools import LongRunningFunctionTool
from google.genai import types

import adk_otel
from adk_otel.semconv import ADK_TOOL_LONG_RUNNING, ERROR_TYPE
from adk_otel.testing.model import ScriptedModel, Step, call, fail, reply

from .harness import APP, Result, assert_clean, drive, shape

INV = f"invocation {APP}"
MODEL = "generate_content scripted-model"


def approve(amount: int) -> dict[str, Any] | None:
    """Asks a human to approve a refund; the answer comes back later."""
    return None


def approve_with_ticket(amount: int) -> dict[str, Any]:
    """Asks a human to approve; answers at once with a ticket to wait on."""
    return {"status": "pending", "ticket": "T-1"}


def resumable_runner(*script: Step, tool: Any = approve, resumable: bool = True) -> InMemoryRunner:
    agent = LlmAgent(
        name="clerk",
        model=ScriptedModel(script=list(script)),
        tools=[LongRunningFunctionTool(tool)],
    )
    app = App(
        name=APP,
        root_agent=agent,
        resumability_config=ResumabilityConfig(is_resumable=resumable),
    )
    return adk_otel.instrument(InMemoryRunner(app=app))


def paused_call(result: Result) -> types.FunctionCall:
    """The long-running call the first run stopped on."""
    last = result.events[-1]
    assert last.long_running_tool_ids, "the run did not pause on the long-running call"
    (function_call,) = last.get_function_calls()
    assert function_call.id in last.long_running_tool_ids
    return function_call


def answer(function_call: types.FunctionCall, response: dict[str, Any]) -> types.Content:
    return types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    id=function_call.id, name=function_call.name, response=response
                )
            )
        ],
    )


def spans_of(recorder, trace_id: int) -> list[Any]:
    return [s for s in recorder.spans if s.context.trace_id == trace_id]


async def test_pause_then_resume_with_the_same_invocation_id(recorder, caplog):
    runner = resumable_runner(call("approve", {"amount": 5}), reply("refund approved"))

    first = await drive(runner, "refund me")
    assert first.error is None
    function_call = paused_call(first)
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "UNSET", "paused"),
        (1, "invoke_agent clerk", "OK", "ok"),
        (2, MODEL, "OK", "ok"),
        (2, "execute_tool approve", "OK", "ok"),
    ]
    tool = recorder.one("execute_tool approve")
    assert tool.attributes[ADK_TOOL_LONG_RUNNING] is True
    assert tool.attributes["gen_ai.tool.call.id"] == function_call.id
    paused_run = recorder.one(INV)
    invocation_id = paused_run.attributes["adk.invocation.id"]
    # Stopped to wait for the tool's result: paused on that call, not an error.
    assert paused_run.attributes["adk.interrupt.ids"] == (function_call.id,)

    second = await drive(
        runner,
        session_id=first.session_id,
        new_message=answer(function_call, {"status": "approved"}),
        invocation_id=invocation_id,
    )

    assert second.error is None
    assert any(e.content and e.content.parts[0].text == "refund approved" for e in second.events)
    assert {e.invocation_id for e in second.events} == {invocation_id}
    assert_clean(recorder, caplog.records)
    paused, resumed = sorted(recorder.named(INV), key=lambda s: s.start_time)
    assert paused is paused_run
    assert resumed.attributes["adk.invocation.id"] == invocation_id
    assert resumed.attributes["gen_ai.conversation.id"] == first.session_id
    # Each run is its own complete trace; the resume adds no tool call.
    assert resumed.context.trace_id != paused.context.trace_id
    # ... linked: the resumed run points at the run it resumes.
    (link,) = resumed.links
    assert link.context.span_id == paused.context.span_id
    assert link.context.trace_id == paused.context.trace_id
    assert link.attributes["adk.link"] == "resumes"
    assert [s.name for s in spans_of(recorder, paused.context.trace_id)] == [
        MODEL,
        "execute_tool approve",
        "invoke_agent clerk",
        INV,
    ]
    resumed_spans = spans_of(recorder, resumed.context.trace_id)
    assert sorted((s.name, s.attributes["adk.outcome"]) for s in resumed_spans) == [
        (MODEL, "ok"),
        (INV, "ok"),
        ("invoke_agent clerk", "ok"),
    ]
    for span in resumed_spans:
        if span is not resumed:
            assert span.attributes["adk.invocation.id"] == invocation_id, span.name


async def test_resume_that_fails_leaves_the_paused_run_paused(recorder, caplog):
    boom = RuntimeError("model down on resume")
    runner = resumable_runner(call("approve", {"amount": 5}), fail(boom))

    first = await drive(runner, "refund me")
    function_call = paused_call(first)
    second = await drive(
        runner,
        session_id=first.session_id,
        new_message=answer(function_call, {"status": "approved"}),
        invocation_id=first.events[0].invocation_id,
    )

    assert second.error is boom
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "UNSET", "paused"),
        (1, "invoke_agent clerk", "OK", "ok"),
        (2, MODEL, "OK", "ok"),
        (2, "execute_tool approve", "OK", "ok"),
        (0, INV, "ERROR", "error"),
        (1, "invoke_agent clerk", "ERROR", "error"),
        (2, MODEL, "ERROR", "error"),
    ]
    paused, resumed = sorted(recorder.named(INV), key=lambda s: s.start_time)
    assert paused.attributes["adk.invocation.id"] == resumed.attributes["adk.invocation.id"]
    assert resumed.attributes[ERROR_TYPE] == "RuntimeError"


async def test_answer_in_a_non_resumable_app(recorder, caplog):
    """Without resumability the answer is a plain new message: ADK still finds
    the invocation from the function response and reuses its id."""
    runner = resumable_runner(call("approve", {"amount": 5}), reply("ok"), resumable=False)

    first = await drive(runner, "refund me")
    function_call = paused_call(first)
    second = await drive(
        runner,
        session_id=first.session_id,
        new_message=answer(function_call, {"status": "approved"}),
    )

    assert second.error is None
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "UNSET", "paused"),
        (1, "invoke_agent clerk", "OK", "ok"),
        (2, MODEL, "OK", "ok"),
        (2, "execute_tool approve", "OK", "ok"),
        (0, INV, "OK", "ok"),
        (1, "invoke_agent clerk", "OK", "ok"),
        (2, MODEL, "OK", "ok"),
    ]
    first_run, second_run = sorted(recorder.named(INV), key=lambda s: s.start_time)
    assert second_run.attributes["adk.invocation.id"] == second.events[0].invocation_id
    assert first_run.attributes["adk.invocation.id"] == second_run.attributes["adk.invocation.id"]


async def test_long_running_tool_with_an_interim_answer(recorder, caplog):
    """A long-running tool that answers at once does not pause the run."""
    runner = resumable_runner(
        call("approve_with_ticket", {"amount": 5}),
        reply("waiting on T-1"),
        tool=approve_with_ticket,
    )

    result = await drive(runner, "refund me")

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "UNSET", "paused"),
        (1, "invoke_agent clerk", "OK", "ok"),
        (2, MODEL, "OK", "ok"),
        (2, "execute_tool approve_with_ticket", "OK", "ok"),
        (2, MODEL, "OK", "ok"),
    ]
    assert recorder.one("execute_tool approve_with_ticket").attributes[ADK_TOOL_LONG_RUNNING]
