"""``run_live``: ADK gives no ``after_run`` when the consumer stops or the
task is cancelled, so the instrumented runner's wrapper ends the run.

ADK 2.13 also calls ``before_model`` once per user content sent to the live
connection, with no ``after_model`` ever: adk-otel records it as an
``adk.live.model_request`` event on the agent span, not as a span that could
never end honestly. ADK 2.5 makes no such call.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from importlib.metadata import version
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.live_request_queue import LiveRequestQueue
from google.adk.agents.run_config import RunConfig
from google.adk.events import Event
from google.adk.runners import InMemoryRunner
from google.genai import types

from adk_otel.pipeline import provider as pipeline
from adk_otel.semconv import ADK_CLOSE_REASON, ERROR_TYPE
from adk_otel.semconv import LIVE_MODEL_REQUEST_EVENT as LIVE_EVENT
from adk_otel.testing.model import ScriptedModel, Step, call, fail, reply

from .agents import lookup, runner_for
from .harness import APP, USER, assert_clean, new_session, shape

INV = f"invocation {APP}"
MODEL = "generate_content scripted-model"
ADK_VERSION = tuple(int(part) for part in version("google-adk").split(".")[:2])
SCREENS_CONTENT = ADK_VERSION >= (2, 13)
"""Measured: 2.13 fires before_model per live user content; 2.5 does not."""


def screening(depth: int, status: str, outcome: str) -> list[tuple[int, str, str, str]]:
    """Live model requests are events on the agent span, never spans."""
    return []


def live_requests(recorder) -> list[str]:
    agent = recorder.one("invoke_agent voice")
    return [e.attributes["gen_ai.request.model"] for e in agent.events if e.name == LIVE_EVENT]


def voice(*script: Step) -> InMemoryRunner:
    agent = LlmAgent(name="voice", model=ScriptedModel(script=list(script)), tools=[lookup])
    return runner_for(agent)


async def start_live(
    runner: InMemoryRunner,
) -> tuple[AsyncGenerator[Event, None], LiveRequestQueue]:
    queue = LiveRequestQueue()
    queue.send_content(types.UserContent("hello"))
    stream = runner.run_live(
        user_id=USER,
        session_id=await new_session(runner),
        live_request_queue=queue,
        run_config=RunConfig(response_modalities=["TEXT"]),
    )
    return stream, queue


def has_text(event: Event) -> bool:
    return bool(event.content and any(p.text for p in event.content.parts or []))


def has_function_response(event: Event) -> bool:
    return bool(event.get_function_responses())


async def read_until(
    stream: AsyncGenerator[Event, None], done: Callable[[Event], bool]
) -> list[Any]:
    events = []
    async for event in stream:
        events.append(event)
        if done(event):
            break
    return events


async def test_consumer_acloses_after_the_reply(recorder, caplog):
    stream, _ = await start_live(voice(reply("hi there")))

    events = await read_until(stream, has_text)
    await stream.aclose()

    assert events[-1].content.parts[0].text == "hi there"
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "UNSET", "incomplete"),
        (1, "invoke_agent voice", "UNSET", "incomplete"),
        *screening(2, "UNSET", "incomplete"),
    ]
    assert live_requests(recorder) == (["scripted-model"] if SCREENS_CONTENT else [])
    invocation = recorder.one(INV)
    assert invocation.attributes[ADK_CLOSE_REASON] == "consumer_closed"
    assert invocation.attributes["adk.invocation.id"] == events[0].invocation_id


async def test_consumer_breaks_and_drops_the_generator(recorder, caplog):
    """No aclose(): asyncio finalises the dropped generator on a later loop turn."""
    runner = voice(reply("hi there"))
    queue = LiveRequestQueue()
    queue.send_content(types.UserContent("hello"))
    async for event in runner.run_live(
        user_id=USER,
        session_id=await new_session(runner),
        live_request_queue=queue,
        run_config=RunConfig(response_modalities=["TEXT"]),
    ):
        if has_text(event):
            break

    await recorder.settle(lambda r: r.ended_named(INV))

    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "UNSET", "incomplete"),
        (1, "invoke_agent voice", "UNSET", "incomplete"),
        *screening(2, "UNSET", "incomplete"),
    ]


async def test_task_cancelled_while_waiting_for_input(recorder, caplog):
    stream, _ = await start_live(voice(reply("hi there")))
    replied = asyncio.Event()

    async def consume() -> None:
        async for event in stream:
            if has_text(event):
                replied.set()

    task = asyncio.create_task(consume())
    await replied.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "UNSET", "cancelled"),
        (1, "invoke_agent voice", "UNSET", "cancelled"),
        *screening(2, "UNSET", "cancelled"),
    ]


async def test_tool_call_then_consumer_closes(recorder, caplog):
    stream, _ = await start_live(voice(call("lookup", {"sku": "A1"})))

    events = await read_until(stream, has_function_response)
    await stream.aclose()

    assert events[-1].get_function_responses()[0].response == {"sku": "A1", "stock": 3}
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "UNSET", "incomplete"),
        (1, "invoke_agent voice", "UNSET", "incomplete"),
        *screening(2, "UNSET", "incomplete"),
        (2, "execute_tool lookup", "OK", "ok"),
    ]
    tool = recorder.one("execute_tool lookup")
    assert recorder.parent_of(tool) is recorder.one("invoke_agent voice")


async def test_live_model_fails(recorder, caplog):
    boom = RuntimeError("live connection broke")
    stream, _ = await start_live(voice(fail(boom)))

    with pytest.raises(RuntimeError, match="live connection broke"):
        await read_until(stream, has_text)

    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "ERROR", "error"),
        (1, "invoke_agent voice", "ERROR", "error"),
        *screening(2, "UNSET", "incomplete"),
    ]
    for name in (INV, "invoke_agent voice"):
        assert recorder.one(name).attributes[ERROR_TYPE] == "RuntimeError", name


async def test_request_queue_closed_ends_the_run(recorder, caplog):
    """Measured on 2.13: a client close ends the live run normally, with aA and aR.
    ADK 2.5's live loop never ends on a closed queue (it re-polls receive()): there
    the consumer stops reading, and every span ends ``incomplete``."""
    stream, queue = await start_live(voice(reply("hi there")))
    events = []
    async for event in stream:
        events.append(event)
        if has_text(event):
            queue.close()
            if not SCREENS_CONTENT:
                break
    if not SCREENS_CONTENT:
        await stream.aclose()

    assert events[-1].content.parts[0].text == "hi there"
    assert_clean(recorder, caplog.records)
    if not SCREENS_CONTENT:
        assert shape(recorder) == [
            (0, INV, "UNSET", "incomplete"),
            (1, "invoke_agent voice", "UNSET", "incomplete"),
        ]
        assert recorder.one(INV).attributes[ADK_CLOSE_REASON] == "consumer_closed"
        return
    assert shape(recorder) == [
        (0, INV, "OK", "ok"),
        (1, "invoke_agent voice", "OK", "ok"),
    ]
    assert live_requests(recorder) == ["scripted-model"]


async def test_a_workflow_root_in_live_mode_traces_its_agent_nodes_model_calls(
    recorder, caplog, global_provider
):
    """ADK runs a Workflow root's agent nodes as ordinary model calls under
    run_live: each is a model span with its usage, as outside live mode."""
    from google.adk.workflow import Workflow

    def prepare() -> str:
        return "ready"

    if not SCREENS_CONTENT:
        # ADK 2.5 runs a live Workflow root without run hooks: no plugin claims the
        # run, so, as for a Runner no plugin traces, ADK's own spans of it are kept
        # beside adk-otel's agent span (a mixed tree: a known limit on 2.5) unless
        # ADK's scope is switched off on the provider, as `adk web` has it. Switched
        # off here, so the test reads the same in any order of tests (an earlier
        # one may have left it off for the process).
        pipeline.suppress_adk_spans(global_provider)
    agent = LlmAgent(name="voice", model=ScriptedModel(script=[reply("hi there")]))
    runner = runner_for(Workflow(name="flow", edges=[("START", prepare, agent)]))
    stream, queue = await start_live(runner)

    events = await read_until(stream, has_text)
    queue.close()
    await stream.aclose()

    assert events[-1].content.parts[0].text == "hi there"
    assert_clean(recorder, caplog.records)
    model = recorder.one(MODEL)
    assert model.attributes["adk.outcome"] == "ok"
    assert model.attributes["gen_ai.usage.output_tokens"] > 0
    assert recorder.parent_of(model) is recorder.one("invoke_agent voice")
    assert live_requests(recorder) == []
    if SCREENS_CONTENT:
        assert recorder.one(INV).attributes["adk.model_call.count"] == 1
    else:
        # ADK 2.5 runs a live Workflow root without run hooks: no invocation
        # span; the agent span, ended as the consumer closed, is the top.
        assert recorder.one("invoke_agent voice").attributes[ADK_CLOSE_REASON] == (
            "consumer_closed"
        )
