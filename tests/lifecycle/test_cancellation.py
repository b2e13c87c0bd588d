"""Cancellation, early close and abandoned generators: every span still ends."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncGenerator
from typing import Any

import pytest
from google.adk.agents import BaseAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.apps import App
from google.adk.events import Event
from google.adk.runners import InMemoryRunner
from google.genai import types

import adk_otel
from adk_otel.semconv import ADK_CLOSE_REASON
from adk_otel.testing.model import Step, call, reply

from .agents import clerk, runner_for
from .harness import APP, USER, assert_clean, drive, new_session, shape

INV = f"invocation {APP}"


def gated_tool(started: asyncio.Event, gate: asyncio.Event):
    async def slow_lookup(sku: str) -> dict[str, Any]:
        """Waits for the test to let it finish."""
        started.set()
        await gate.wait()
        return {"sku": sku}

    return slow_lookup


async def consume(runner, session_id: str, sink: list[Any]) -> None:
    async for event in runner.run_async(
        user_id=USER, session_id=session_id, new_message=types.UserContent("go")
    ):
        sink.append(event)


async def cancel_when(started: asyncio.Event, runner) -> list[Any]:
    events: list[Any] = []
    task = asyncio.create_task(consume(runner, await new_session(runner), events))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return events


async def test_cancelled_during_tool(recorder, caplog):
    started, gate = asyncio.Event(), asyncio.Event()
    agent = clerk(
        call("slow_lookup", {"sku": "A1"}), reply("done"), tools=[gated_tool(started, gate)]
    )

    await cancel_when(started, runner_for(agent))

    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "UNSET", "cancelled"),
        (1, "invoke_agent clerk", "UNSET", "cancelled"),
        (2, "generate_content scripted-model", "OK", "ok"),
        (2, "execute_tool slow_lookup", "UNSET", "cancelled"),
    ]


async def test_cancelled_during_model_call(recorder, caplog):
    started, gate = asyncio.Event(), asyncio.Event()
    agent = clerk(Step(parts=(types.Part(text="late"),), started=started, gate=gate))

    await cancel_when(started, runner_for(agent))

    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "UNSET", "cancelled"),
        (1, "invoke_agent clerk", "UNSET", "cancelled"),
        (2, "generate_content scripted-model", "UNSET", "cancelled"),
    ]


async def test_cancelled_with_plugin_only(recorder, caplog):
    """An App (as under `adk run`): no runner wrapper, the task's end closes the run."""
    started, gate = asyncio.Event(), asyncio.Event()
    agent = clerk(Step(parts=(types.Part(text="late"),), started=started, gate=gate))
    app = adk_otel.instrument(App(name=APP, root_agent=agent))

    await cancel_when(started, InMemoryRunner(app=app))
    await recorder.settle(lambda r: r.ended_named(INV))

    assert_clean(recorder, caplog.records)
    assert shape(recorder)[0] == (0, INV, "UNSET", "cancelled")
    assert {row[3] for row in shape(recorder)} == {"cancelled"}


async def test_consumer_closes_early(recorder, caplog):
    runner = runner_for(clerk(call("lookup", {"sku": "A1"}), reply("done")))
    session_id = await new_session(runner)
    events = []
    async with contextlib.aclosing(
        runner.run_async(user_id=USER, session_id=session_id, new_message=types.UserContent("go"))
    ) as stream:
        async for event in stream:
            events.append(event)
            break

    assert len(events) == 1
    assert_clean(recorder, caplog.records)
    rows = shape(recorder)
    assert rows[0] == (0, INV, "UNSET", "incomplete")
    assert rows[1] == (1, "invoke_agent clerk", "UNSET", "incomplete")
    assert recorder.one(INV).attributes["adk.close_reason"] == "consumer_closed"


async def test_consumer_breaks_and_drops_the_generator(recorder, caplog):
    """No aclose(): asyncio finalises the dropped generator on a later loop turn."""
    runner = runner_for(clerk(call("lookup", {"sku": "A1"}), reply("done")))
    session_id = await new_session(runner)
    async for _ in runner.run_async(
        user_id=USER, session_id=session_id, new_message=types.UserContent("go")
    ):
        break

    await recorder.settle(lambda r: r.ended_named(INV))

    assert_clean(recorder, caplog.records)
    assert shape(recorder)[0] == (0, INV, "UNSET", "incomplete")


def test_sync_run_caller_stops_early(recorder, caplog):
    """Runner.run() keeps running in ADK's own thread after the caller stops."""
    runner = runner_for(clerk(call("lookup", {"sku": "A1"}), reply("done")))
    session_id = asyncio.run(new_session(runner))
    for _ in runner.run(user_id=USER, session_id=session_id, new_message=types.UserContent("go")):
        break

    recorder.wait_for(lambda r: r.ended_named(INV))

    assert_clean(recorder, caplog.records)
    rows = shape(recorder)
    assert rows[0][0:2] == (0, INV)
    # ADK finishes or cancels the rest in its thread, depending on how far it
    # got: either way nothing is an error and everything ended.
    assert {row[3] for row in rows} <= {"ok", "cancelled", "incomplete"}, rows


def test_sync_run_to_the_end(recorder, caplog):
    runner = runner_for(clerk(call("lookup", {"sku": "A1"}), reply("done")))
    session_id = asyncio.run(new_session(runner))
    events = list(
        runner.run(user_id=USER, session_id=session_id, new_message=types.UserContent("go"))
    )

    recorder.wait_for(lambda r: r.ended_named(INV))

    assert events
    assert_clean(recorder, caplog.records)
    assert [row[3] for row in shape(recorder)] == ["ok"] * 5


HAS_ABORT_SIGNAL = "abort_signal" in inspect.signature(InMemoryRunner.run_async).parameters


async def test_abort_signal_is_an_outcome_not_an_error(recorder, caplog):
    started, gate = asyncio.Event(), asyncio.Event()
    abort = asyncio.Event()
    agent = clerk(
        call("slow_lookup", {"sku": "A1"}), reply("done"), tools=[gated_tool(started, gate)]
    )
    runner = runner_for(agent)
    session_id = await new_session(runner)

    async def run() -> None:
        async for _ in runner.run_async(
            user_id=USER,
            session_id=session_id,
            new_message=types.UserContent("go"),
            abort_signal=abort,
        ):
            pass

    if not HAS_ABORT_SIGNAL:
        # Older ADK (2.5) has no abort_signal: the call fails as ADK fails it,
        # through the instrumented runner unchanged, with nothing opened.
        with pytest.raises(TypeError, match="abort_signal"):
            await run()
        assert_clean(recorder, caplog.records)
        assert shape(recorder) == []
        return

    task = asyncio.create_task(run())
    await started.wait()
    abort.set()
    await task

    assert_clean(recorder, caplog.records)
    rows = shape(recorder)
    assert rows[0] == (0, INV, "UNSET", "cancelled")
    assert "ERROR" not in {row[2] for row in rows}


async def test_a_task_that_once_swallowed_a_cancellation_records_later_runs_ok(recorder, caplog):
    """A worker loop that caught CancelledError without ``uncancel()`` keeps
    ``cancelling() > 0`` for good; its later successful runs are still OK."""
    task = asyncio.current_task()
    assert task is not None
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.Event().wait()  # the cancellation lands here and is swallowed
    assert task.cancelling() == 1

    try:
        result = await drive(runner_for(clerk(call("lookup", {"sku": "A1"}), reply("ok"))))
    finally:
        task.uncancel()

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert {(row[2], row[3]) for row in shape(recorder)} == {("OK", "ok")}


async def test_consumer_closes_early_with_plugin_only(recorder, caplog):
    """An App with no runner wrapper: ADK treats an early close as a clean
    completion and fires after_run, but from its `finally` with the
    GeneratorExit in flight, which adk-otel reads: the run is ``incomplete``
    (``consumer_closed``), as with the wrapper; nothing is left open."""
    app = adk_otel.instrument(
        App(name=APP, root_agent=clerk(call("lookup", {"sku": "A1"}), reply("done")))
    )
    runner = InMemoryRunner(app=app)
    session_id = await new_session(runner)
    async with contextlib.aclosing(
        runner.run_async(user_id=USER, session_id=session_id, new_message=types.UserContent("go"))
    ) as stream:
        async for _ in stream:
            break
    await recorder.settle(lambda r: r.ended_named(INV))

    assert_clean(recorder, caplog.records)
    rows = shape(recorder)
    assert rows[0] == (0, INV, "UNSET", "incomplete")
    assert recorder.one(INV).attributes[ADK_CLOSE_REASON] == "consumer_closed"
    assert (1, "invoke_agent clerk", "UNSET", "incomplete") in rows
    assert adk_otel.plugin_of(app).open_spans == 0


class ClosingAgent(BaseAgent):
    """Agent code that raises GeneratorExit itself (not a consumer closing)."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        raise GeneratorExit
        yield  # pragma: no cover - makes this an async generator


async def test_generator_exit_raised_inside_the_run_is_not_a_success(recorder, caplog):
    runner = runner_for(ClosingAgent(name="closer"))
    session_id = await new_session(runner)
    with contextlib.suppress(GeneratorExit, RuntimeError):
        async for _ in runner.run_async(
            user_id=USER, session_id=session_id, new_message=types.UserContent("go")
        ):
            pass
    await recorder.settle(lambda r: r.ended_named(INV))

    assert_clean(recorder, caplog.records)
    invocation = recorder.one(INV)
    assert invocation.attributes["adk.outcome"] == "incomplete"
    assert "OK" not in {row[2] for row in shape(recorder)}


class AwaitsACancelledFuture(BaseAgent):
    """Agent code awaiting a future that something else cancelled: the
    CancelledError comes from inside the run, the task itself is not cancelling."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        future = asyncio.get_running_loop().create_future()
        future.cancel()
        await future
        yield Event(author=self.name, invocation_id=ctx.invocation_id)


async def test_a_foreign_cancellation_inside_an_agent_is_an_outcome_on_every_layer(
    recorder, caplog
):
    """ADK 2.13 runs after_agent while that CancelledError is in flight; the
    agent spans must not say OK under a cancelled invocation."""
    from google.adk.agents import SequentialAgent

    pipeline = SequentialAgent(name="pipeline", sub_agents=[AwaitsACancelledFuture(name="waiter")])
    runner = runner_for(pipeline)
    session_id = await new_session(runner)
    with pytest.raises(asyncio.CancelledError):
        async for _ in runner.run_async(
            user_id=USER, session_id=session_id, new_message=types.UserContent("go")
        ):
            pass

    assert_clean(recorder, caplog.records)
    assert {(row[2], row[3]) for row in shape(recorder)} == {("UNSET", "cancelled")}
