"""ADK's aclosing check, run against the instrumented runner.

ADK's own tests (``test_async_generators_wrapped_in_aclosing``) hook the
first iteration of every async generator (``sys.set_asyncgen_hooks``) and
assert that a ``contextlib.aclosing`` refers to it, directly or through one
object (``gc.get_referrers``): ADK keeps its spans and context in
contextvars, and a generator left suspended for the garbage collector is
closed in some other context. :func:`aclosing_check` is that inspection. The
runner wrapper (``lifecycle/runner.py``) iterates ADK's generator, so it
holds it in ``aclosing`` too, closed in the run's own context; the scenarios
below run under the check and end every way a consumer can end a run:
completed, ``aclose()`` after the first event, a ``break`` out of
``async for``, and the consumer's task cancelled. Each keeps the lifecycle
invariants (``assert_clean``: every span ended once, nothing left current,
no "Failed to detach context") and its outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import gc
import inspect
import sys
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents.live_request_queue import LiveRequestQueue
from google.adk.agents.run_config import RunConfig
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner
from google.genai import types
from opentelemetry import trace

import adk_otel
from adk_otel.semconv import ADK_CLOSE_REASON
from adk_otel.testing.model import Step, call, reply

from .agents import clerk, runner_for
from .harness import APP, USER, assert_clean, new_session, shape

INV = f"invocation {APP}"
MODEL = "generate_content scripted-model"
ADK_OTEL = Path(adk_otel.__file__).parent
RUN_STATE: contextvars.ContextVar[str] = contextvars.ContextVar("run_state")


class ContextWitness(BasePlugin):
    """A plugin after adk-otel's keeping state in a context variable, as
    instrumentation does: set in ``before_run``, reset with its token in
    ``after_run``. ADK runs ``after_run`` in its generator's ``finally`` when
    the consumer closes early, so the reset works, and the run's span is the
    current one there, only if the close runs in the run's own context."""

    def __init__(self) -> None:
        super().__init__(name="context_witness")
        self.token: contextvars.Token[str] | None = None
        self.reset: str = "not run"
        self.current: str | None = None

    async def before_run_callback(self, *, invocation_context: Any) -> None:
        self.token = RUN_STATE.set(invocation_context.invocation_id)

    async def after_run_callback(self, *, invocation_context: Any) -> None:
        self.current = getattr(trace.get_current_span(), "name", None)
        assert self.token is not None
        try:
            RUN_STATE.reset(self.token)
        except ValueError as error:  # "created in a different Context"
            self.reset = str(error)
        else:
            self.reset = "ok"


@dataclass(frozen=True)
class Unheld:
    """An async generator first iterated with no ``aclosing`` holding it."""

    generator: str
    iterated_at: str
    """``file:line`` of the frame that iterated it first."""


@contextlib.contextmanager
def aclosing_check(source: Path = ADK_OTEL) -> Iterator[list[Unheld]]:
    """ADK's check, limited to the async generators that code under ``source``
    iterates first: the list yielded fills with those no ``aclosing`` holds.
    A generator first iterated by ``asynccontextmanager`` is exempt, as in
    ADK's check. The hooks already installed (the event loop's) still run."""
    unheld: list[Unheld] = []
    previous_firstiter, previous_finalizer = sys.get_asyncgen_hooks()

    def firstiter(generator: AsyncGenerator[Any, Any]) -> None:
        frame = inspect.currentframe()
        caller = frame.f_back if frame is not None else None
        if (
            caller is not None
            and Path(caller.f_code.co_filename).is_relative_to(source)
            and not _in_async_context_manager(caller)
            and not _held_by_aclosing(generator)
        ):
            unheld.append(
                Unheld(generator.__qualname__, f"{caller.f_code.co_filename}:{caller.f_lineno}")
            )
        if previous_firstiter is not None:
            previous_firstiter(generator)

    sys.set_asyncgen_hooks(firstiter, previous_finalizer)
    try:
        yield unheld
    finally:
        sys.set_asyncgen_hooks(previous_firstiter, previous_finalizer)


def _held_by_aclosing(generator: object) -> bool:
    return any(
        isinstance(referrer, contextlib.aclosing) or isinstance(indirect, contextlib.aclosing)
        for referrer in gc.get_referrers(generator)
        for indirect in gc.get_referrers(referrer)
    )


def _in_async_context_manager(frame: Any) -> bool:
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__aenter__" and "contextlib" in code.co_filename:
            return True
        frame = frame.f_back
    return False


async def test_the_check_finds_a_generator_iterated_without_aclosing():
    """The inspection can fail: here it watches this file's own iterations."""

    async def numbers() -> AsyncGenerator[int, None]:
        yield 1

    with aclosing_check(Path(__file__).parent) as unheld:
        held = numbers()
        async with contextlib.aclosing(held):
            assert [n async for n in held] == [1]
        loose = numbers()
        assert [n async for n in loose] == [1]

    assert [u.generator for u in unheld] == [loose.__qualname__]
    assert unheld[0].iterated_at.startswith(__file__)


async def run_ended(how: str, runner: Runner, started: asyncio.Event) -> list[Any]:
    """One run, consumed as ADK's own scenario does (in ``aclosing``), ended ``how``."""
    session_id = await new_session(runner)
    events: list[Any] = []

    async def consume() -> None:
        async with contextlib.aclosing(
            runner.run_async(
                user_id=USER, session_id=session_id, new_message=types.UserContent("go")
            )
        ) as stream:
            async for event in stream:
                events.append(event)
                if how == "break":
                    break
                if how == "aclose":
                    await stream.aclose()
                    return

    if how == "cancelled":
        task = asyncio.create_task(consume())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    else:
        await consume()
    return events


async def test_a_completed_run_passes_adks_check(recorder, caplog):
    runner = runner_for(clerk(call("lookup", {"sku": "A1"}), reply("done")))

    with aclosing_check() as unheld:
        events = await run_ended("completed", runner, asyncio.Event())

    assert unheld == []
    assert events
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "OK", "ok"),
        (1, "invoke_agent clerk", "OK", "ok"),
        (2, MODEL, "OK", "ok"),
        (2, "execute_tool lookup", "OK", "ok"),
        (2, MODEL, "OK", "ok"),
    ]


@pytest.mark.parametrize("how", ["aclose", "break"])
async def test_an_early_close_passes_adks_check_and_ends_the_run_incomplete(recorder, caplog, how):
    witness = ContextWitness()
    runner = runner_for(clerk(call("lookup", {"sku": "A1"}), reply("done")), witness)

    with aclosing_check() as unheld:
        events = await run_ended(how, runner, asyncio.Event())

    assert unheld == []
    assert len(events) == 1
    # ADK's close ran in the run's context: its cleanup saw the run's state.
    assert (witness.reset, witness.current) == ("ok", INV)
    # Ended when the consumer closed, before the consumer's block was left.
    assert recorder.ended_named(INV)
    assert_clean(recorder, caplog.records)
    rows = shape(recorder)
    assert rows[:2] == [
        (0, INV, "UNSET", "incomplete"),
        (1, "invoke_agent clerk", "UNSET", "incomplete"),
    ]
    assert {row[3] for row in rows} <= {"ok", "incomplete"}, rows
    assert recorder.one(INV).attributes[ADK_CLOSE_REASON] == "consumer_closed"


async def test_a_cancelled_consumer_passes_adks_check_and_ends_the_run_cancelled(recorder, caplog):
    started, gate = asyncio.Event(), asyncio.Event()
    runner = runner_for(clerk(Step(parts=(types.Part(text="late"),), started=started, gate=gate)))

    with aclosing_check() as unheld:
        events = await run_ended("cancelled", runner, started)

    assert unheld == []
    assert events == []
    assert_clean(recorder, caplog.records)
    assert shape(recorder) == [
        (0, INV, "UNSET", "cancelled"),
        (1, "invoke_agent clerk", "UNSET", "cancelled"),
        (2, MODEL, "UNSET", "cancelled"),
    ]


async def test_a_live_run_closed_early_passes_adks_check(recorder, caplog):
    """``run_live`` goes through the same wrapper."""
    runner = runner_for(clerk(reply("hi there"), name="voice"))
    queue = LiveRequestQueue()
    queue.send_content(types.UserContent("hello"))

    with aclosing_check() as unheld:
        async with contextlib.aclosing(
            runner.run_live(
                user_id=USER,
                session_id=await new_session(runner),
                live_request_queue=queue,
                run_config=RunConfig(response_modalities=["TEXT"]),
            )
        ) as stream:
            async for event in stream:
                if event.content and any(part.text for part in event.content.parts or []):
                    break

    assert unheld == []
    assert_clean(recorder, caplog.records)
    assert shape(recorder)[:2] == [
        (0, INV, "UNSET", "incomplete"),
        (1, "invoke_agent voice", "UNSET", "incomplete"),
    ]
    assert recorder.one(INV).attributes[ADK_CLOSE_REASON] == "consumer_closed"
