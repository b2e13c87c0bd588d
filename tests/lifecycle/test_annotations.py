"""Callbacks see the span of their layer: an attribute an app sets on the
current span, from an agent-level callback or from a plugin registered after
adk-otel, in a before, after or error hook, lands on adk-otel's span of that
layer, and on no other span, with ``instrument()`` and with
``App(plugins=[AdkOtelPlugin(), ...])``, on every path a layer can take."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.apps import App
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan

import adk_otel
from adk_otel.testing.model import ScriptedModel, Step, call, fail, reply, stream

from .agents import ToolFailed, lookup, unwrap_group
from .harness import APP, Recorder, assert_clean, drive, render

INV = f"invocation {APP}"
AGENT = "invoke_agent clerk"
MODEL = "generate_content scripted-model"
TOOL = "execute_tool lookup"

PLUGIN_HOOKS = {
    "before_run": INV,
    "after_run": INV,
    "on_run_error": INV,
    "on_event": INV,
    "before_agent": AGENT,
    "after_agent": AGENT,
    "on_agent_error": AGENT,
    "before_model": MODEL,
    "after_model": MODEL,
    "on_model_error": MODEL,
    "before_tool": TOOL,
    "after_tool": TOOL,
    "on_tool_error": TOOL,
}
AGENT_CALLBACKS = {
    "before_agent": AGENT,
    "after_agent": AGENT,
    "before_model": MODEL,
    "after_model": MODEL,
    "on_model_error": MODEL,
    "before_tool": TOOL,
    "after_tool": TOOL,
    "on_tool_error": TOOL,
}
RUN_HOOKS = ("before_run", "after_run", "on_run_error", "on_event")


class Annotator(BasePlugin):
    """Writes ``app.plugin.<hook>`` on the current span in every hook."""

    def __init__(self) -> None:
        super().__init__(name="annotator")
        self.seen: set[str] = set()


def _annotating(hook: str) -> Callable[..., Any]:
    async def annotate(self: Annotator, **kwargs: Any) -> None:
        self.seen.add(hook)
        trace.get_current_span().set_attribute(f"app.plugin.{hook}", True)

    return annotate


for _hook in PLUGIN_HOOKS:
    setattr(Annotator, f"{_hook}_callback", _annotating(_hook))


def agent_callbacks(seen: set[str], answers: dict[str, Any]) -> dict[str, Any]:
    """Agent-level callbacks writing ``app.agent.<kind>``; ``answers`` makes
    one of them return a value (a short-circuit or a recovery)."""

    def make(kind: str) -> Callable[..., Any]:
        def callback(*args: Any, **kwargs: Any) -> Any:
            seen.add(kind)
            trace.get_current_span().set_attribute(f"app.agent.{kind}", True)
            return answers.get(kind)

        return callback

    return {f"{kind}_callback": make(kind) for kind in AGENT_CALLBACKS}


def build(
    setup: str, script: list[Step], answers: dict[str, Any]
) -> tuple[Any, Annotator, set[str]]:
    seen: set[str] = set()
    agent = LlmAgent(
        name="clerk",
        model=ScriptedModel(script=script),
        tools=[lookup],
        **agent_callbacks(seen, answers),
    )
    annotator = Annotator()
    if setup == "instrument":
        runner = adk_otel.instrument(InMemoryRunner(agent=agent, app_name=APP, plugins=[annotator]))
    else:
        app = App(name=APP, root_agent=agent, plugins=[adk_otel.AdkOtelPlugin(), annotator])
        runner = InMemoryRunner(app=app)
    return runner, annotator, seen


def holders(recorder: Recorder, key: str) -> list[ReadableSpan]:
    return [s for s in recorder.ended if key in (s.attributes or {})]


def assert_on_layer(
    recorder: Recorder, setup: str, plugin_seen: set[str], agent_seen: set[str]
) -> None:
    tree = render(recorder.ended)
    for hook in plugin_seen:
        found = holders(recorder, f"app.plugin.{hook}")
        if hook in RUN_HOOKS and setup == "app":
            # ADK runs the run's hooks in the caller's own context: no span of
            # adk-otel's is current there without being current for the caller.
            assert not found, f"{hook}: {[s.name for s in found]}\n{tree}"
            continue
        layer = PLUGIN_HOOKS[hook]
        assert found, f"plugin {hook}: the annotation was lost\n{tree}"
        assert {s.name for s in found} == {layer}, (
            f"plugin {hook}: on {[s.name for s in found]}\n{tree}"
        )
        assert all(s.instrumentation_scope.name == "adk_otel" for s in found), tree
    for kind in agent_seen:
        found = holders(recorder, f"app.agent.{kind}")
        assert found, f"agent {kind}: the annotation was lost\n{tree}"
        assert {s.name for s in found} == {AGENT_CALLBACKS[kind]}, (
            f"agent {kind}: on {[s.name for s in found]}\n{tree}"
        )


def same_span(recorder: Recorder, before: str, after: str) -> None:
    """Every span annotated in ``before`` is annotated in ``after`` too (the
    same span, before and after)."""
    for span in holders(recorder, before):
        assert after in span.attributes, f"{span.name}: {before} without {after}"


SETUPS = ["instrument", "app"]


@pytest.mark.parametrize("setup", SETUPS)
async def test_success_every_before_and_after(recorder, caplog, setup):
    runner, annotator, seen = build(setup, [call("lookup", {"sku": "A1"}), reply("3 left")], {})

    result = await drive(runner)

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert {
        "before_agent",
        "after_agent",
        "before_model",
        "after_model",
        "before_tool",
        "after_tool",
    } <= seen
    assert_on_layer(recorder, setup, annotator.seen, seen)
    for who in ("plugin", "agent"):
        for layer in ("agent", "model", "tool"):
            same_span(recorder, f"app.{who}.before_{layer}", f"app.{who}.after_{layer}")
    assert len(holders(recorder, "app.agent.after_model")) == 2
    # ADK releases that write their own tool telemetry to the current span
    # (2.5) write it onto adk-otel's tool span now: none of it is kept.
    (tool,) = recorder.named(TOOL)
    assert not [k for k in tool.attributes if k.startswith("gcp.vertex.agent.")], tool.attributes
    assert tool.attributes["gen_ai.tool.type"] == "function"


@pytest.mark.parametrize("setup", SETUPS)
async def test_tool_error(recorder, caplog, setup):
    runner, annotator, seen = build(setup, [call("lookup", {"sku": "bad"}), reply("no")], {})

    result = await drive(runner)

    assert isinstance(unwrap_group(result.error), ToolFailed)
    assert_clean(recorder, caplog.records)
    assert {"on_tool_error", "on_agent_error"} <= annotator.seen and "on_tool_error" in seen
    assert_on_layer(recorder, setup, annotator.seen, seen)
    (tool,) = holders(recorder, "app.plugin.on_tool_error")
    assert tool.status.status_code is trace.StatusCode.ERROR
    assert tool.attributes["gen_ai.tool.call.id"] != "<not specified>"
    assert not [k for k in tool.attributes if k.startswith("gcp.vertex.agent.")], tool.attributes


@pytest.mark.parametrize("setup", SETUPS)
async def test_model_error(recorder, caplog, setup):
    runner, annotator, seen = build(setup, [fail(RuntimeError("model down"))], {})

    result = await drive(runner)

    assert result.error is not None
    assert_clean(recorder, caplog.records)
    assert "on_model_error" in annotator.seen and "on_model_error" in seen
    assert_on_layer(recorder, setup, annotator.seen, seen)
    same_span(recorder, "app.agent.before_model", "app.agent.on_model_error")


@pytest.mark.parametrize("setup", SETUPS)
async def test_model_error_recovered_by_a_callback(recorder, caplog, setup):
    # The callback's stand-in response, usage and all, is not the model's: the
    # failed call's span keeps its error and counts none of it, nor does the agent.
    recovered = LlmResponse(
        content=types.ModelContent("recovered"),
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=5, candidates_token_count=7, total_token_count=12
        ),
    )
    runner, annotator, seen = build(
        setup, [fail(RuntimeError("model down"))], {"on_model_error": recovered}
    )

    result = await drive(runner)

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert_on_layer(recorder, setup, annotator.seen, seen)
    (model,) = recorder.named(MODEL)
    assert model.status.status_code is trace.StatusCode.ERROR
    assert "app.agent.on_model_error" in model.attributes
    assert not [k for k in model.attributes if k.startswith("gen_ai.usage.")]
    (agent,) = recorder.named(AGENT)
    assert not [k for k in agent.attributes if k.startswith("adk.usage.")]


@pytest.mark.parametrize("setup", SETUPS)
async def test_tool_error_recovered_by_a_callback(recorder, caplog, setup):
    runner, annotator, seen = build(
        setup,
        [call("lookup", {"sku": "bad"}), reply("sorry")],
        {"on_tool_error": {"recovered": True}},
    )

    result = await drive(runner)

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert_on_layer(recorder, setup, annotator.seen, seen)
    (tool,) = recorder.named(TOOL)
    assert tool.status.status_code is trace.StatusCode.ERROR
    assert {"app.agent.on_tool_error", "app.plugin.after_tool"} <= set(tool.attributes)


@pytest.mark.parametrize("setup", SETUPS)
async def test_streamed_chunks(recorder, caplog, setup):
    runner, annotator, seen = build(setup, [stream("in ", "stock")], {})

    result = await drive(runner, run_config=RunConfig(streaming_mode=StreamingMode.SSE))

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert_on_layer(recorder, setup, annotator.seen, seen)
    (model,) = recorder.named(MODEL)
    assert {"app.plugin.after_model", "app.agent.after_model"} <= set(model.attributes)
    assert model.attributes["adk.model.chunks"] == 2
    assert model.status.status_code is trace.StatusCode.OK


@pytest.mark.parametrize("setup", SETUPS)
@pytest.mark.parametrize(
    "kind",
    ["before_model", "before_tool"],
)
async def test_short_circuit(recorder, caplog, setup, kind):
    answer: Any = (
        LlmResponse(content=types.ModelContent("canned"))
        if kind == "before_model"
        else {"stock": 0}
    )
    script = [call("lookup", {"sku": "A1"}), reply("done")]
    runner, annotator, seen = build(setup, script, {kind: answer})

    result = await drive(runner)

    assert result.error is None
    assert_clean(recorder, caplog.records)  # every span ended exactly once
    assert_on_layer(recorder, setup, annotator.seen, seen)
    layer = AGENT_CALLBACKS[kind]
    assert recorder.named(layer), render(recorder.ended)
    for span in recorder.named(layer):
        assert f"app.agent.{kind}" in span.attributes


async def test_a_plugin_registered_before_adk_otel(recorder, caplog):
    """``adk web --extra_plugins`` appends adk-otel after the app's own
    plugins: it moves itself first at the first run's before_run, so from
    then on every plugin's callbacks see the span of their layer."""
    seen: set[str] = set()
    agent = LlmAgent(
        name="clerk",
        model=ScriptedModel(script=[call("lookup", {"sku": "A1"}), reply("3 left")]),
        tools=[lookup],
        **agent_callbacks(seen, {}),
    )
    annotator = Annotator()
    plugin = adk_otel.AdkOtelPlugin()
    runner = InMemoryRunner(app=App(name=APP, root_agent=agent, plugins=[annotator, plugin]))

    result = await drive(runner)

    assert result.error is None
    assert runner.plugin_manager.plugins == [plugin, annotator]
    assert_clean(recorder, caplog.records)
    # before_run of the first run came before adk-otel's: nothing was current.
    assert_on_layer(recorder, "app", annotator.seen - {"before_run"}, seen)
    assert not holders(recorder, "app.plugin.before_run")
