"""Success, failures at each layer, other plugins raising or answering early."""

from __future__ import annotations

import pytest
from google.adk.agents import LlmAgent, SequentialAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from opentelemetry.trace import StatusCode

from adk_otel.semconv import ERROR_TYPE
from adk_otel.testing.model import ScriptedModel, call, fail, reply, stream

from .agents import (
    AgentCrashed,
    AnsweringPlugin,
    CrashingAgent,
    RaisingPlugin,
    ToolFailed,
    clerk,
    runner_for,
)
from .harness import APP, assert_clean, drive, shape

INV = f"invocation {APP}"


def exception_types(span) -> list[str]:
    return [e.attributes["exception.type"] for e in span.events if e.name == "exception"]


async def test_success_with_tool_round_trip(recorder, caplog):
    result = await drive(runner_for(clerk(call("lookup", {"sku": "A1"}), reply("3 left"))))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "OK", "ok"),
        (1, "invoke_agent clerk", "OK", "ok"),
        (2, "generate_content scripted-model", "OK", "ok"),
        (2, "execute_tool lookup", "OK", "ok"),
        (2, "generate_content scripted-model", "OK", "ok"),
    ]
    invocation = recorder.one(INV)
    assert invocation.attributes["adk.app.name"] == APP
    assert invocation.attributes["gen_ai.conversation.id"] == result.session_id
    assert invocation.attributes["adk.invocation.id"] == result.events[0].invocation_id
    tool = recorder.one("execute_tool lookup")
    assert tool.attributes["gen_ai.tool.name"] == "lookup"
    assert tool.attributes["gen_ai.tool.call.id"]
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    agent = recorder.one("invoke_agent clerk")
    assert agent.attributes["gen_ai.agent.name"] == "clerk"
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"


async def test_tool_raises_error_once_per_layer(recorder, caplog):
    result = await drive(runner_for(clerk(call("lookup", {"sku": "bad"}), reply("never"))))

    assert isinstance(result.error, ToolFailed)
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "ERROR", "error"),
        (1, "invoke_agent clerk", "ERROR", "error"),
        (2, "generate_content scripted-model", "OK", "ok"),
        (2, "execute_tool lookup", "ERROR", "error"),
    ]
    for name in (INV, "invoke_agent clerk", "execute_tool lookup"):
        span = recorder.one(name)
        assert span.attributes[ERROR_TYPE].endswith("ToolFailed"), name
        assert exception_types(span) == [span.attributes[ERROR_TYPE]], name
        assert "no such sku: bad" in span.status.description


async def test_tool_error_hook_that_returns_a_value(recorder, caplog):
    """eT answers for the tool, then ADK also fires aT: the first terminal hook wins."""
    runner = runner_for(
        clerk(call("lookup", {"sku": "bad"}), reply("recovered")), AnsweringPlugin("on_tool_error")
    )
    result = await drive(runner)

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "OK", "ok"),
        (1, "invoke_agent clerk", "OK", "ok"),
        (2, "generate_content scripted-model", "OK", "ok"),
        (2, "execute_tool lookup", "ERROR", "error"),
        (2, "generate_content scripted-model", "OK", "ok"),
    ]


async def test_model_raises(recorder, caplog):
    result = await drive(runner_for(clerk(fail(ConnectionError("model down")))))

    assert isinstance(result.error, ConnectionError)
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "ERROR", "error"),
        (1, "invoke_agent clerk", "ERROR", "error"),
        (2, "generate_content scripted-model", "ERROR", "error"),
    ]
    assert recorder.one("generate_content scripted-model").attributes[ERROR_TYPE] == (
        "ConnectionError"
    )


async def test_model_raises_mid_stream(recorder, caplog):
    agent = clerk(stream("The ", "answer ", error=ConnectionError("stream cut")))
    result = await drive(runner_for(agent), run_config=RunConfig(streaming_mode=StreamingMode.SSE))

    assert isinstance(result.error, ConnectionError)
    assert any(e.partial for e in result.events), "the stream never started"
    assert_clean(recorder, caplog.records)
    model = recorder.one("generate_content scripted-model")
    assert model.status.status_code is StatusCode.ERROR
    assert model.attributes["adk.model.chunks"] == 2
    assert recorder.one(INV).status.status_code is StatusCode.ERROR


async def test_streamed_success_is_one_model_span(recorder, caplog):
    agent = clerk(stream("The ", "answer"))
    result = await drive(runner_for(agent), run_config=RunConfig(streaming_mode=StreamingMode.SSE))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    model = recorder.one("generate_content scripted-model")
    assert model.status.status_code is StatusCode.OK
    assert model.attributes["adk.model.chunks"] == 2


async def test_agent_body_raises_inside_sequential(recorder, caplog):
    root = SequentialAgent(name="root", sub_agents=[clerk(reply("hi")), CrashingAgent(name="boom")])
    result = await drive(runner_for(root))

    assert isinstance(result.error, AgentCrashed)
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "ERROR", "error"),
        (1, "invoke_agent root", "ERROR", "error"),
        (2, "invoke_agent clerk", "OK", "ok"),
        (3, "generate_content scripted-model", "OK", "ok"),
        (2, "invoke_agent boom", "ERROR", "error"),
    ]
    for name in (INV, "invoke_agent root", "invoke_agent boom"):
        assert len(exception_types(recorder.one(name))) == 1, name


@pytest.mark.parametrize("hook", ["before_run", "before_agent"])
async def test_another_plugin_raises(recorder, caplog, hook):
    result = await drive(runner_for(clerk(reply("hi")), RaisingPlugin(hook)))

    assert isinstance(result.error, RuntimeError)
    assert f"plugin failed in {hook}" in str(result.error)
    assert_clean(recorder, caplog.records)
    expected = [(0, INV, "ERROR", "error")]
    if hook == "before_agent":
        expected.append((1, "invoke_agent clerk", "ERROR", "error"))
    assert shape(recorder) == expected


async def test_plugin_raising_in_on_event_ends_running_agent(recorder, caplog):
    """ADK gives the running agent neither aA nor eA; the run's end closes it."""
    result = await drive(runner_for(clerk(reply("hi")), RaisingPlugin("on_event")))

    assert isinstance(result.error, RuntimeError)
    assert_clean(recorder, caplog.records)
    assert recorder.one(INV).status.status_code is StatusCode.ERROR
    assert shape(recorder) == [
        (0, INV, "ERROR", "error"),
        (1, "invoke_agent clerk", "UNSET", "incomplete"),
        (2, "generate_content scripted-model", "OK", "ok"),
    ]


async def test_plugin_added_after_others_sees_failure_before_its_before_run(recorder, caplog):
    """Not first in line (as with `adk web --extra_plugins`): the failed run still shows."""
    from google.adk.runners import InMemoryRunner

    from adk_otel import AdkOtelPlugin

    runner = InMemoryRunner(
        agent=clerk(reply("hi")),
        app_name=APP,
        plugins=[RaisingPlugin("before_run"), AdkOtelPlugin()],
    )
    result = await drive(runner)

    assert isinstance(result.error, RuntimeError)
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [(0, INV, "ERROR", "error")]


async def test_before_agent_short_circuit(recorder, caplog):
    result = await drive(runner_for(clerk(reply("never")), AnsweringPlugin("before_agent")))

    assert result.error is None
    assert result.events[-1].content.parts[0].text == "canned"
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "OK", "ok"),
        (1, "invoke_agent clerk", "UNSET", "incomplete"),
    ]


async def test_before_model_short_circuit(recorder, caplog):
    result = await drive(runner_for(clerk(reply("never")), AnsweringPlugin("before_model")))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "OK", "ok"),
        (1, "invoke_agent clerk", "OK", "ok"),
        (2, "generate_content scripted-model", "UNSET", "incomplete"),
    ]


async def test_before_run_early_exit(recorder, caplog):
    result = await drive(runner_for(clerk(reply("never")), AnsweringPlugin("before_run")))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    if [e.content.parts[0].text for e in result.events] == ["canned"]:
        assert shape(recorder) == [(0, INV, "OK", "ok")]
    else:  # google-adk 2.5 ignores a before_run answer for a root LlmAgent
        assert shape(recorder)[0] == (0, INV, "OK", "ok")
        assert {row[3] for row in shape(recorder)} == {"ok"}


async def test_agent_callback_short_circuit_in_agent_itself(recorder, caplog):
    """An agent's own before_agent_callback answering (not a plugin)."""
    from google.genai import types

    agent = LlmAgent(
        name="gate",
        model=ScriptedModel(script=[reply("never")]),
        before_agent_callback=lambda callback_context: types.ModelContent("closed"),
    )
    result = await drive(runner_for(agent))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert [row[1] for row in shape(recorder)] == [INV, "invoke_agent gate"]


async def test_each_model_span_ends_at_its_response_event_not_at_the_agents_end(recorder, caplog):
    """A long turn holds no model span open: each ends when ADK emits its
    response, before the tool call it asked for ends (ADK 2.5 builds that
    event anew, with another ``EventActions`` than the model call's)."""
    script = [call("lookup", {"sku": f"A{i}"}) for i in range(3)] + [reply("done")]
    result = await drive(runner_for(clerk(*script)))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    order = [s.name for s in recorder.spans]
    model, tool = "generate_content scripted-model", "execute_tool lookup"
    assert order == [model, tool] * 3 + [model, "invoke_agent clerk", INV], order
