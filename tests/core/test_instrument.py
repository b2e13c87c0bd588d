"""instrument() / uninstrument() / AdkOtelPlugin as a user meets them."""

from __future__ import annotations

import asyncio
import logging

import pytest
from google.adk.agents import LlmAgent, SequentialAgent
from google.adk.apps import App
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import adk_otel
from adk_otel import AdkOtelPlugin
from adk_otel.testing.model import ScriptedModel, call, reply


def lookup(sku: str) -> dict:
    """Stock for a SKU."""
    return {"sku": sku, "stock": 1}


def make_agent() -> LlmAgent:
    return LlmAgent(
        name="clerk",
        model=ScriptedModel(script=[call("lookup", {"sku": "A1"}), reply("ok")]),
        tools=[lookup],
    )


def memory_provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


async def run_once(runner: InMemoryRunner) -> list:
    session = await runner.session_service.create_session(app_name=runner.app_name, user_id="u")
    return [
        event
        async for event in runner.run_async(
            user_id="u", session_id=session.id, new_message=types.UserContent("hi")
        )
    ]


@pytest.mark.parametrize("target", [object(), "runner", 42, None])
def test_rejects_what_it_cannot_instrument(target):
    with pytest.raises(
        TypeError, match=r"takes a google\.adk Runner .* or a google\.adk\.apps\.App"
    ):
        adk_otel.instrument(target)


def test_agent_gets_a_hint():
    with pytest.raises(
        TypeError, match=r"Wrap the agent first: App\(name=\.\.\., root_agent=clerk\)"
    ):
        adk_otel.instrument(make_agent())


async def test_runner_is_returned_instrumented_and_twice_is_harmless():
    provider, exporter = memory_provider()
    runner = InMemoryRunner(agent=make_agent(), app_name="shop")

    assert adk_otel.instrument(runner, tracer_provider=provider) is runner
    assert adk_otel.instrument(runner) is runner
    plugins = [p for p in runner.plugin_manager.plugins if isinstance(p, AdkOtelPlugin)]
    assert len(plugins) == 1
    assert runner.plugin_manager.plugins[0] is plugins[0], "adk-otel must run first"

    await run_once(runner)
    names = [s.name for s in exporter.get_finished_spans()]
    assert names.count("invocation shop") == 1
    assert names.count("invoke_agent clerk") == 1


async def test_uninstrument_restores_the_runner():
    provider, exporter = memory_provider()
    runner = InMemoryRunner(agent=make_agent(), app_name="shop")
    original = runner.run_async
    adk_otel.instrument(runner, tracer_provider=provider)
    adk_otel.uninstrument(runner)

    assert runner.run_async == original
    assert not any(isinstance(p, AdkOtelPlugin) for p in runner.plugin_manager.plugins)
    await run_once(runner)
    assert exporter.get_finished_spans() == ()


async def test_uninstrument_mid_run_ends_the_open_spans():
    provider, exporter = memory_provider()
    gate, started = asyncio.Event(), asyncio.Event()
    agent = LlmAgent(
        name="clerk", model=ScriptedModel(script=[reply("ok", gate=gate, started=started)])
    )
    runner = adk_otel.instrument(
        InMemoryRunner(agent=agent, app_name="shop"), tracer_provider=provider
    )
    running = asyncio.create_task(run_once(runner))
    await started.wait()  # the model call is in flight: invocation, agent, model open

    adk_otel.uninstrument(runner)
    ended = {span.name: span for span in exporter.get_finished_spans()}
    assert set(ended) == {
        "invocation shop",
        "invoke_agent clerk",
        "generate_content scripted-model",
    }
    assert {span.attributes["adk.outcome"] for span in ended.values()} == {"incomplete"}
    assert {span.attributes["adk.close_reason"] for span in ended.values()} <= {
        "plugin_closed",
        "parent_ended",
    }

    gate.set()
    await running  # the run itself finishes normally, untraced from here on
    assert len(exporter.get_finished_spans()) == 3
    assert trace.get_current_span() is trace.INVALID_SPAN


async def test_app_target_and_runner_built_from_it():
    provider, exporter = memory_provider()
    app = adk_otel.instrument(App(name="shop", root_agent=make_agent()), tracer_provider=provider)

    assert isinstance(app.plugins[0], AdkOtelPlugin)
    await run_once(InMemoryRunner(app=app))
    assert "invocation shop" in [s.name for s in exporter.get_finished_spans()]


async def test_reinstrument_with_a_new_provider_moves_spans():
    first, first_spans = memory_provider()
    second, second_spans = memory_provider()
    runner = adk_otel.instrument(
        InMemoryRunner(agent=make_agent(), app_name="shop"), tracer_provider=first
    )
    adk_otel.instrument(runner, tracer_provider=second)

    await run_once(runner)
    assert first_spans.get_finished_spans() == ()
    assert len(second_spans.get_finished_spans()) == 5


class ExplodingTracer(trace.Tracer):
    def start_span(self, *args, **kwargs):
        raise RuntimeError("tracer exploded")

    def start_as_current_span(self, *args, **kwargs):
        raise RuntimeError("tracer exploded")


class ExplodingProvider(trace.TracerProvider):
    def get_tracer(self, *args, **kwargs):
        return ExplodingTracer()


async def test_broken_telemetry_never_breaks_the_agent(caplog):
    caplog.set_level(logging.WARNING, logger="adk_otel")
    runner = adk_otel.instrument(
        InMemoryRunner(agent=make_agent(), app_name="shop"), tracer_provider=ExplodingProvider()
    )

    events = await run_once(runner)
    events += await run_once(runner)

    assert events[-1].content.parts[0].text == "ok"
    warnings = [r for r in caplog.records if r.name.startswith("adk_otel")]
    assert warnings, "the failure must be reported"
    # once per hook, not once per call
    assert len(warnings) == len({r.getMessage() for r in warnings})


async def test_plugin_close_ends_what_is_open():
    provider, exporter = memory_provider()
    started, gate = asyncio.Event(), asyncio.Event()
    from adk_otel.testing.model import Step

    agent = LlmAgent(
        name="clerk",
        model=ScriptedModel(
            script=[Step(parts=(types.Part(text="x"),), started=started, gate=gate)]
        ),
    )
    runner = InMemoryRunner(
        agent=agent, app_name="shop", plugins=[AdkOtelPlugin(tracer_provider=provider)]
    )
    task = asyncio.ensure_future(run_once(runner))
    await started.wait()
    # Its close witness is first now (a plugin shared by Runners; sharing.py).
    [witness, plugin] = runner.plugin_manager.plugins
    assert witness.name == "adk_otel_close_witness"
    assert plugin.open_spans == 3

    await plugin.close()

    assert plugin.open_spans == 0
    outcomes = {s.name: s.attributes["adk.outcome"] for s in exporter.get_finished_spans()}
    assert outcomes == {
        "invocation shop": "incomplete",
        "invoke_agent clerk": "incomplete",
        "generate_content scripted-model": "incomplete",
    }
    gate.set()
    await task
    assert len(exporter.get_finished_spans()) == 3, "late hooks must not end spans twice"


@pytest.mark.timeout(360)  # slow: 10-40 s on a loaded 2-core machine
def test_public_names_survive_importing_every_submodule():
    """Importing a submodule binds it on the package; no submodule may shadow
    a public name (``adk_otel.instrument`` must stay the function)."""
    import pkgutil
    import subprocess
    import sys

    # Every module but ``python -m adk_otel.cli``'s, which runs the command.
    walked = pkgutil.walk_packages(adk_otel.__path__, "adk_otel.")
    modules = [m.name for m in walked if not m.name.endswith(".__main__")]
    assert "adk_otel.instrumentation" in modules
    clashes = {name.rsplit(".", 1)[1] for name in modules} & set(adk_otel.__all__)
    assert clashes == set()
    imports = [f"importlib.import_module({m!r})" for m in modules]
    check = "assert callable(adk_otel.instrument) and callable(adk_otel.uninstrument)"
    script = "; ".join([*imports, "import adk_otel", check])
    done = subprocess.run(
        [sys.executable, "-c", f"import importlib; {script}"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


class StockDown(RuntimeError):
    pass


async def test_instrument_again_mid_run_keeps_the_provider_and_the_open_spans() -> None:
    """Calling instrument() again while a run is in flight (with no options, or
    with other ones) keeps what was not changed: spans stay on the provider
    given first, and the in-flight tool still ends ERROR through its own hook."""
    provider, exporter = memory_provider()
    started, gate = asyncio.Event(), asyncio.Event()

    async def slow_lookup(sku: str) -> dict:
        """Stock for a SKU, slowly."""
        started.set()
        await gate.wait()
        raise StockDown(sku)

    agent = LlmAgent(
        name="clerk",
        model=ScriptedModel(script=[call("slow_lookup", {"sku": "A1"}), reply("ok")]),
        tools=[slow_lookup],
    )
    runner = adk_otel.instrument(
        InMemoryRunner(agent=agent, app_name="shop"), tracer_provider=provider
    )
    session = await runner.session_service.create_session(app_name="shop", user_id="u")

    async def run() -> None:
        async for _ in runner.run_async(
            user_id="u", session_id=session.id, new_message=types.UserContent("go")
        ):
            pass

    task = asyncio.create_task(run())
    await started.wait()
    adk_otel.instrument(runner)
    adk_otel.instrument(runner, capture_content=True)
    gate.set()
    with pytest.raises(StockDown):
        await task

    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert spans["execute_tool slow_lookup"].attributes["adk.outcome"] == "error"
    assert spans["invocation shop"].attributes["adk.outcome"] == "error"
    plugin = adk_otel.plugin_of(runner)
    assert plugin is not None and plugin.open_spans == 0
    # Later runs still go to the provider given first, now with content captured.
    exporter.clear()
    gate.clear()
    started.clear()
    agent.model = ScriptedModel(script=[reply("ok")])
    await run()
    names = [s.name for s in exporter.get_finished_spans()]
    assert "invocation shop" in names
    invocation = next(s for s in exporter.get_finished_spans() if s.name == "invocation shop")
    assert "gen_ai.input.messages" in invocation.attributes


async def test_a_plugin_joining_mid_run_traces_the_agents_that_start_after_it() -> None:
    """A plugin added while a run is in flight missed its before_run: the
    agents that start after it still get spans, each paired with its own
    after_agent (by invocation id and agent name), with their model calls
    under them, ended OK once, nothing left open."""
    provider, exporter = memory_provider()
    plugin = AdkOtelPlugin(tracer_provider=provider)
    runner: InMemoryRunner | None = None

    def join(callback_context: object) -> None:
        assert runner is not None
        runner.plugin_manager.plugins.insert(0, plugin)  # as the first agent ends

    first = LlmAgent(
        name="first",
        model=ScriptedModel(script=[reply("one")]),
        after_agent_callback=join,
    )
    second = LlmAgent(name="second", model=ScriptedModel(script=[reply("two")]))
    runner = InMemoryRunner(
        agent=SequentialAgent(name="pair", sub_agents=[first, second]), app_name="shop"
    )
    await run_once(runner)

    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["generate_content scripted-model", "invoke_agent second"]
    model, agent = spans
    assert model.parent is not None and model.parent.span_id == agent.context.span_id
    assert agent.attributes["adk.outcome"] == "ok"
    assert agent.status.status_code is trace.StatusCode.OK
    assert plugin.open_spans == 0
    assert trace.get_current_span() is trace.INVALID_SPAN
