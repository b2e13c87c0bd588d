"""The runner wrapper closes ADK's generator however it ends, and adk-otel
keeps nothing of a run once it is over: the event loop, the invocation
context and the session are collectable, after a clean end, an early close
and a cancellation alike."""

from __future__ import annotations

import asyncio
import gc
import weakref
from typing import Any

import pytest
from google.adk.plugins.base_plugin import BasePlugin
from google.genai import types

import adk_otel
from adk_otel.testing.model import Step, call, reply

from .agents import clerk, runner_for
from .harness import USER, assert_clean, new_session


class Thrown(Exception):
    """Thrown into the wrapper by the consumer (``athrow``)."""


class RunWitness(BasePlugin):
    """Records ADK's after_run and weak references to what a run holds."""

    def __init__(self) -> None:
        super().__init__(name="witness")
        self.after_run = 0
        self.refs: list[weakref.ref[Any]] = []

    async def before_run_callback(self, *, invocation_context: Any) -> None:
        self.refs.append(weakref.ref(invocation_context))
        self.refs.append(weakref.ref(invocation_context.session))

    async def after_run_callback(self, *, invocation_context: Any) -> None:
        self.after_run += 1


async def test_exception_thrown_into_the_wrapper_closes_adks_generator(recorder, caplog):
    witness = RunWitness()
    runner = runner_for(clerk(call("lookup", {"sku": "A1"}), reply("done")), witness)
    events = runner.run_async(
        user_id=USER, session_id=await new_session(runner), new_message=types.UserContent("go")
    )
    await anext(events)

    with pytest.raises(Thrown):
        await events.athrow(Thrown("consumer gave up"))

    # Closed at once, in the run's own context: ADK ran its cleanup (after_run
    # runs in its `finally`) before athrow returned, not at garbage collection.
    assert witness.after_run == 1
    assert_clean(recorder, caplog.records)


def _run_in_own_loop(how: str, plugin: adk_otel.AdkOtelPlugin | None) -> list[weakref.ref[Any]]:
    """One run on a new event loop, ended ``how``; weak references to the
    loop, the invocation context and the session."""
    witness = RunWitness()
    started, gate = asyncio.Event(), asyncio.Event()
    agent = clerk(Step(parts=(types.Part(text="late"),), started=started, gate=gate))
    if plugin is None:
        runner = runner_for(agent, witness)  # instrument(): adk-otel on the runner
    else:
        from google.adk.apps import App
        from google.adk.runners import InMemoryRunner

        runner = InMemoryRunner(app=App(name="shop", root_agent=agent, plugins=[plugin, witness]))

    async def scenario() -> None:
        session_id = await new_session(runner)
        events = runner.run_async(
            user_id=USER, session_id=session_id, new_message=types.UserContent("go")
        )
        if how == "early_close":
            gate.set()
            async for _ in events:
                break
            await events.aclose()
        elif how == "cancelled":

            async def consume() -> None:
                async for _ in events:
                    pass

            task = asyncio.create_task(consume())
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        else:
            gate.set()
            async for _ in events:
                pass
        await runner.close()

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(scenario())
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()
    refs = [weakref.ref(loop), *witness.refs]
    assert len(refs) == 3
    return refs


@pytest.mark.parametrize("how", ["completed", "early_close", "cancelled"])
@pytest.mark.parametrize("setup", ["instrument", "app"])
def test_nothing_of_a_finished_run_is_kept(recorder, caplog, how, setup):
    # The plugin outlives the run, as a plugin of a long-lived app does.
    plugin = adk_otel.AdkOtelPlugin() if setup == "app" else None

    refs = _run_in_own_loop(how, plugin)
    gc.collect()

    alive = [ref() for ref in refs if ref() is not None]
    assert not alive, f"kept after the run: {[type(o).__name__ for o in alive]}"
    if plugin is not None:
        assert plugin.open_spans == 0
    assert_clean(recorder, caplog.records)
