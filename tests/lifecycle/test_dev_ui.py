"""Under ADK's dev server (its per-event span exporter on the provider), model
and tool spans carry the id of the event they produced, learnt when the event
arrives; every lifecycle claim still holds, whatever path ends the run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib.metadata import version

import pytest
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.cli.api_server import ApiServerSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

import adk_otel
from adk_otel.integrations.devui import EVENT_ID, INVOCATION_ID, LLM_REQUEST, LLM_RESPONSE
from adk_otel.pipeline import provider as pipeline
from adk_otel.testing.model import call, calls, fail, reply, stream

from .agents import RaisingPlugin, ToolFailed, clerk
from .harness import APP, DISPATCH, assert_clean, drive, shape

INV = f"invocation {APP}"
ADK_2_13 = tuple(int(p) for p in version("google-adk").split(".")[:2]) >= (2, 13)


@pytest.fixture
def dev_trace(global_provider) -> Iterator[tuple[TracerProvider, dict]]:
    """A provider as ``adk web`` sets one up: ADK's per-event exporter on it."""
    pipeline.suppress_adk_spans(global_provider)  # ADK's spans: off, as by default
    by_event: dict = {}
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ApiServerSpanExporter(by_event)))
    provider.add_span_processor(DISPATCH)
    yield provider, by_event
    provider.shutdown()


def runner(agent, provider, *plugins):
    from google.adk.runners import InMemoryRunner

    return adk_otel.instrument(
        InMemoryRunner(agent=agent, app_name=APP, plugins=list(plugins)),
        tracer_provider=provider,
    )


def event_ids(result, kind: str) -> list[str]:
    wanted = "function_response" if kind == "tool" else "other"
    found = []
    for event in result.events:
        responses = event.get_function_responses()
        if (wanted == "function_response") == bool(responses):
            found.append(event.id)
    return found


async def test_each_model_and_tool_span_carries_its_events_id(recorder, caplog, dev_trace):
    provider, by_event = dev_trace
    result = await drive(runner(clerk(call("lookup", {"sku": "A1"}), reply("3 left")), provider))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "OK", "ok"),
        (1, "invoke_agent clerk", "OK", "ok"),
        (2, "generate_content scripted-model", "OK", "ok"),
        (2, "execute_tool lookup", "OK", "ok"),
        (2, "generate_content scripted-model", "OK", "ok"),
    ]
    models = recorder.named("generate_content scripted-model")
    assert [s.attributes[EVENT_ID] for s in models] == event_ids(result, "model")
    assert {s.attributes[INVOCATION_ID] for s in models} == {result.events[0].invocation_id}
    tool = recorder.one("execute_tool lookup")
    assert [tool.attributes[EVENT_ID]] == event_ids(result, "tool")
    # ADK 2.5's exporter keys tool spans only (and its own `call_llm`); 2.13's model spans too.
    keyed = {e.id for e in result.events} if ADK_2_13 else set(event_ids(result, "tool"))
    assert set(by_event) == keyed


async def test_parallel_tool_calls_share_their_response_event(recorder, caplog, dev_trace):
    provider, _ = dev_trace
    both = calls(("lookup", {"sku": "A1"}), ("lookup", {"sku": "B2"}))
    result = await drive(runner(clerk(both, reply("done")), provider))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    (response_event,) = event_ids(result, "tool")
    tools = recorder.named("execute_tool lookup")
    assert [s.attributes[EVENT_ID] for s in tools] == [response_event] * 2
    assert {s.attributes["adk.outcome"] for s in tools} == {"ok"}


async def test_streamed_model_span_carries_the_final_events_id(recorder, caplog, dev_trace):
    provider, _ = dev_trace
    result = await drive(
        runner(clerk(stream("The ", "answer")), provider),
        run_config=RunConfig(streaming_mode=StreamingMode.SSE),
    )

    assert result.error is None
    assert_clean(recorder, caplog.records)
    final = [e.id for e in result.events if not e.partial]
    assert recorder.one("generate_content scripted-model").attributes[EVENT_ID] == final[-1]


async def test_failures_end_at_once_with_their_error(recorder, caplog, dev_trace):
    provider, _ = dev_trace
    result = await drive(runner(clerk(call("lookup", {"sku": "bad"}), reply("never")), provider))

    assert isinstance(result.error, ToolFailed)
    assert_clean(recorder, caplog.records)
    assert recorder.one("execute_tool lookup").attributes["adk.outcome"] == "error"
    model = recorder.one("generate_content scripted-model")
    assert model.attributes["adk.outcome"] == "ok" and model.attributes[EVENT_ID]

    recorder.ended.clear()
    result = await drive(runner(clerk(fail(ConnectionError("down"))), provider))
    assert isinstance(result.error, ConnectionError)
    assert recorder.one("generate_content scripted-model").attributes["adk.outcome"] == "error"


async def test_a_plugin_failing_on_the_event_leaves_the_hooks_outcome(recorder, caplog, dev_trace):
    """A plugin listed ahead of adk-otel raises on the event: adk-otel moves
    itself first at the run's start (see docs/annotations.md), so it still
    sees the event; the model span keeps the success its hooks reported, with
    its event id, and ends once although the run fails."""
    from google.adk.runners import InMemoryRunner

    provider, _ = dev_trace
    plugins = [RaisingPlugin("on_event"), adk_otel.AdkOtelPlugin(tracer_provider=provider)]
    result = await drive(InMemoryRunner(agent=clerk(reply("ok")), app_name=APP, plugins=plugins))

    assert isinstance(result.error, RuntimeError)
    assert_clean(recorder, caplog.records)
    model = recorder.one("generate_content scripted-model")
    assert model.attributes["adk.outcome"] == "ok"
    assert model.attributes[EVENT_ID]  # the event ADK made (the failed run yields none)


async def test_without_the_dev_server_nothing_of_its_own_is_written(recorder, caplog):
    from .agents import runner_for

    await drive(runner_for(clerk(call("lookup", {"sku": "A1"}), reply("ok"))))

    assert_clean(recorder, caplog.records)
    assert not [s for s in recorder.spans if EVENT_ID in s.attributes]
    assert not [s for s in recorder.spans if INVOCATION_ID in s.attributes]


async def test_request_and_response_for_older_servers_only_with_content_on(
    recorder, caplog, dev_trace
):
    """ADK 2.5's dev UI reads a call's request and response from span
    attributes: written under the dev server when content capture on spans is
    on, never otherwise."""
    from google.adk.runners import InMemoryRunner

    provider, _ = dev_trace
    agent = clerk(call("lookup", {"sku": "A1"}), reply("3 left"))
    await drive(runner(agent, provider))
    assert not [s for s in recorder.spans if LLM_REQUEST in s.attributes]

    recorder.ended.clear()
    runner_with_content = adk_otel.instrument(
        InMemoryRunner(agent=clerk(call("lookup", {"sku": "A1"}), reply("3 left")), app_name=APP),
        tracer_provider=provider,
        capture_content=True,
    )
    await drive(runner_with_content, "hi there")
    assert_clean(recorder, caplog.records)
    first, second = recorder.named("generate_content scripted-model")
    request = json.loads(first.attributes[LLM_REQUEST])
    assert request["model"] == "scripted-model"
    assert request["contents"][0]["parts"][0]["text"] == "hi there"
    assert json.loads(first.attributes[LLM_RESPONSE])["content"]["parts"][0]["function_call"]
    assert json.loads(second.attributes[LLM_RESPONSE])["content"]["parts"][0]["text"] == "3 left"
