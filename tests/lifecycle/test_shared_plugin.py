"""One plugin shared by several Runners (an ``App`` served through more than
one Runner, as ADK's evaluation does per eval case): a Runner closing ends only
what that Runner started; another Runner's run in flight goes on to its own
end, and the last close still ends whatever is left."""

from __future__ import annotations

import asyncio

from google.adk.apps import App
from google.adk.runners import InMemoryRunner, Runner
from google.genai import types

import adk_otel
from adk_otel.semconv import ADK_CLOSE_REASON, ADK_OUTCOME
from adk_otel.testing.model import Step, call, reply

from .agents import clerk
from .harness import USER, assert_clean, drive, new_session


def _runners(app: App, count: int) -> list[Runner]:
    return [InMemoryRunner(app=app) for _ in range(count)]


async def held_run(runner: Runner) -> None:
    """A run whose consumer takes one event and then closes the generator
    (in its own task, so ADK's context is restored where it was set)."""
    events = runner.run_async(
        user_id=USER, session_id=await new_session(runner), new_message=types.UserContent("x")
    )
    try:
        await anext(events)
    finally:
        await events.aclose()


async def test_one_runner_closing_leaves_another_runners_run_alone(recorder, caplog):
    started, gate = asyncio.Event(), asyncio.Event()
    held = Step(parts=(types.Part(text="late"),), started=started, gate=gate)

    def choose(request):  # the run of "slow" is held at its model call
        text = request.contents[0].parts[0].text if request.contents else ""
        return held if text == "slow" else reply("quick")

    agent = clerk()
    agent.model.choose = choose
    app = App(name="shop", root_agent=agent, plugins=[adk_otel.AdkOtelPlugin()])
    first, second = _runners(app, 2)

    slow = asyncio.create_task(drive(second, "slow"))
    await started.wait()
    assert (await drive(first, "fast")).error is None
    await first.close()  # the shared plugin's close(), by the first Runner

    gate.set()
    assert (await slow).error is None
    await second.close()

    invocations = recorder.named("invocation shop")
    assert len(invocations) == 2
    for span in recorder.spans:
        assert span.attributes.get(ADK_OUTCOME) == "ok", (span.name, span.attributes)
    assert_clean(recorder, caplog.records)


async def test_the_closing_runners_own_abandoned_run_is_ended(recorder, caplog):
    """A run of the closing Runner left open (its generator never closed) is
    ended at that Runner's close; the other Runner's run is not."""
    started, gate = asyncio.Event(), asyncio.Event()
    held = Step(parts=(types.Part(text="late"),), started=started, gate=gate)
    agent = clerk(held)
    app = App(name="shop", root_agent=agent, plugins=[adk_otel.AdkOtelPlugin()])
    first, second = _runners(app, 2)

    other = asyncio.create_task(drive(second, "other"))
    await started.wait()
    started.clear()
    abandoned = asyncio.create_task(held_run(first))
    await started.wait()
    await first.close()  # its own run is still waiting at the model

    ended = {s.attributes.get(ADK_CLOSE_REASON) for s in recorder.named("invocation shop")}
    assert ended == {"plugin_closed"}  # the first Runner's run only
    gate.set()
    await abandoned
    assert (await other).error is None
    await second.close()
    outcomes = sorted(str(s.attributes.get(ADK_OUTCOME)) for s in recorder.named("invocation shop"))
    assert outcomes == ["incomplete", "ok"]
    assert_clean(recorder, caplog.records)


async def test_a_close_no_runner_names_leaves_open_runners_runs_alone(recorder, caplog):
    """With two Runners mid-run, a Runner that never ran closes, then the
    plugin is closed directly: neither run is ended by it; each goes on to
    its own end."""
    started, gate = asyncio.Event(), asyncio.Event()
    seen: list[str] = []

    def choose(request):
        seen.append(request.contents[0].parts[0].text)
        if len(seen) == 2:
            started.set()
        return Step(parts=(types.Part(text="late"),), gate=gate)

    agent = clerk()
    agent.model.choose = choose
    plugin = adk_otel.AdkOtelPlugin()
    app = App(name="shop", root_agent=agent, plugins=[plugin])
    first, second, idle = _runners(app, 3)
    runs = [asyncio.create_task(drive(r, t)) for r, t in ((first, "a"), (second, "b"))]
    await started.wait()
    await idle.close()
    await plugin.close()
    assert not recorder.ended
    gate.set()
    assert [(await run).error for run in runs] == [None, None]
    await first.close()
    await second.close()
    outcomes = [s.attributes.get(ADK_OUTCOME) for s in recorder.named("invocation shop")]
    assert outcomes == ["ok", "ok"]
    assert_clean(recorder, caplog.records)


async def test_the_last_runner_closing_ends_what_is_left(recorder, caplog):
    """The only Runner closing with its own run still in flight (its
    generator never closed): the run is ended, as a Runner's close always did."""
    started, gate = asyncio.Event(), asyncio.Event()
    plugin = adk_otel.AdkOtelPlugin()
    app = App(
        name="shop",
        root_agent=clerk(Step(parts=(types.Part(text="late"),), started=started, gate=gate)),
        plugins=[plugin],
    )
    [runner] = _runners(app, 1)
    run = asyncio.create_task(held_run(runner))
    await started.wait()
    await runner.close()
    [span] = recorder.named("invocation shop")
    assert span.attributes.get(ADK_CLOSE_REASON) == "plugin_closed"
    gate.set()
    await run
    assert_clean(recorder, caplog.records)


def test_the_witness_sits_in_front_of_the_plugin_and_adds_no_span(recorder):
    plugin = adk_otel.AdkOtelPlugin()
    app = App(name="shop", root_agent=clerk(reply("ok")), plugins=[plugin])
    [runner] = _runners(app, 1)

    async def twice() -> None:
        for _ in range(2):
            assert (await drive(runner, "x")).error is None

    asyncio.run(twice())
    names = [p.name for p in runner.plugin_manager.plugins]
    assert names == ["adk_otel_close_witness", "adk_otel"]
    assert sorted(s.name for s in recorder.spans) == sorted(
        ["invocation shop", "invoke_agent clerk", "generate_content scripted-model"] * 2
    )


async def test_concurrent_runners_over_one_app_each_trace_whole(recorder, caplog):
    """Several Runners over one App, each closed as its run finishes (ADK's
    evaluation does this per case), the others mid-run: every trace is whole."""
    held, waiting, gate = 5, asyncio.Event(), asyncio.Event()
    seen: list[str] = []
    late = Step(
        parts=(types.Part(function_call=types.FunctionCall(name="lookup", args={"sku": "A1"})),),
        gate=gate,
    )

    def choose(request):
        turns = sum(1 for c in request.contents or [] if c.role == "model")
        if turns:
            return reply("done")
        text = request.contents[0].parts[0].text
        if text == "q0":
            return call("lookup", {"sku": "A1"})
        seen.append(text)
        if len(seen) == held:
            waiting.set()
        return late

    agent = clerk()
    agent.model.choose = choose
    app = App(name="shop", root_agent=agent, plugins=[adk_otel.AdkOtelPlugin()])
    runners = _runners(app, held + 1)

    async def one(index: int, runner: Runner) -> None:
        async with runner:
            assert (await drive(runner, f"q{index}")).error is None

    others = [asyncio.create_task(one(i, r)) for i, r in enumerate(runners) if i]
    await waiting.wait()  # five runs held at their first model call
    await one(0, runners[0])  # runs and closes its Runner meanwhile
    gate.set()
    await asyncio.gather(*others)
    assert len(recorder.named("invocation shop")) == held + 1
    assert {s.attributes.get(ADK_OUTCOME) for s in recorder.spans} == {"ok"}
    assert_clean(recorder, caplog.records)


async def test_uninstrument_takes_the_witness_out_too(recorder):
    runner = adk_otel.instrument(InMemoryRunner(agent=clerk(reply("ok")), app_name="shop"))
    assert (await drive(runner, "x")).error is None
    assert [p.name for p in runner.plugin_manager.plugins] == [
        "adk_otel_close_witness",
        "adk_otel",
    ]
    adk_otel.uninstrument(runner)
    assert runner.plugin_manager.plugins == []


async def test_only_the_last_runner_to_close_flushes_and_reports(recorder, caplog):
    """ADK's eval closes a Runner per case while others run on: each close
    waiting on the exporter (and reporting spans of runs still going as not
    exported) would be wrong; the process goes on, and the last close flushes."""
    app = App(name="shop", root_agent=clerk(), plugins=[adk_otel.AdkOtelPlugin()])
    first, second = _runners(app, 2)
    assert (await drive(first, "a")).error is None
    assert (await drive(second, "b")).error is None
    caplog.set_level("INFO", logger="adk_otel.pipeline")

    def reports() -> list[str]:
        return [r.getMessage() for r in caplog.records if "shutdown:" in r.getMessage()]

    await first.close()
    assert reports() == []
    await second.close()
    assert len(reports()) == 1
    assert_clean(recorder, caplog.records)
