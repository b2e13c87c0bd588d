"""Copies and pickles of a plugin and of an instrumented App (docs/deploy.md).

Agent Engine deep-copies an App and cloudpickles it; multiprocessing, Ray and
Celery pickle what they hand to another process. A copy, made before, during
or after runs, is a new plugin with the same options: it shares no ledger, run
or span with the original, rebuilds what belongs to one process (the ledger
and its lock, the tracer, weak references) on first use, and traces as the
original did, in this process or a fresh one.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import os
import pickle
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cloudpickle
import pytest
from checkout import python_path
from google.adk.apps import App
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import adk_otel
import adk_otel.a2a
from adk_otel import AdkOtelPlugin, settings
from adk_otel.integrations import a2a
from adk_otel.lifecycle import options, sharing, travel
from adk_otel.pipeline import shutdown
from adk_otel.semconv import ADK_OUTCOME, ADK_SCOPE, INSTRUMENTATION_SCOPE
from adk_otel.testing.model import ScriptedModel, Step, call
from adk_otel.testing.receiver import OtlpReceiver

from .harness import USER, Recorder, assert_clean, drive
from .travel_agents import CLERK_SPANS, FLOW_SPANS, clerk_app, flow_app

TESTS = Path(__file__).parents[1]
PROBE = Path(__file__).with_name("travel_probe.py")


def redact(key: str, value: Any) -> Any:
    """A redactor of the app's own: module level, so plain pickle takes it."""
    return value


def classify(error: Any, layer: Any) -> str | None:
    return None


OPTIONS: dict[str, Any] = {
    "capture_content": True,
    "content_max_length": 64,
    "redact": redact,
    "error_classifier": classify,
    "user_id": "hash",
    "result_failures": False,
}


def pickled(thing: Any) -> Any:
    return pickle.loads(pickle.dumps(thing))


def cloudpickled(thing: Any) -> Any:
    return cloudpickle.loads(cloudpickle.dumps(thing))


COPIERS: dict[str, Callable[[Any], Any]] = {
    "deepcopy": copy.deepcopy,
    "pickle": pickled,
    "cloudpickle": cloudpickled,
}


def set_up(kind: str, build: Callable[..., App] = clerk_app, **given: Any) -> App:
    """The two documented set-ups: the plugin in the App's plugins, or ``instrument(App)``."""
    if kind == "plugin":
        return build(plugins=[AdkOtelPlugin(**given)])
    return adk_otel.instrument(build(), **given)


def plugin_in(app: App) -> AdkOtelPlugin:
    plugin = adk_otel.plugin_of(app)
    assert plugin is not None
    return plugin


async def runs(app: App, count: int = 1) -> InMemoryRunner:
    runner = InMemoryRunner(app=app)
    for _ in range(count):
        result = await drive(runner)
        assert result.error is None, result.error
    return runner


def per_trace(recorder: Recorder) -> list[Counter[str]]:
    traces: dict[int, Counter[str]] = {}
    for span in recorder.spans:
        traces.setdefault(span.context.trace_id, Counter())[span.name] += 1
    return list(traces.values())


def fresh(original: AdkOtelPlugin, copied: AdkOtelPlugin) -> None:
    """``copied`` is a new plugin: same name and options, nothing of the original's own."""
    assert type(copied) is AdkOtelPlugin and copied is not original
    assert copied.name == original.name
    assert copied.open_spans == 0 and copied.internal_errors == 0
    ledger = copied._ledger_instance
    assert ledger is None or ledger is not original._ledger_instance
    assert copied._runs is not original._runs and not copied._runs.by_context
    assert copied._sharing is not original._sharing


@pytest.mark.parametrize("copier", COPIERS)
@pytest.mark.parametrize("kind", ["plugin", "instrument"])
@pytest.mark.parametrize("ran", [False, True], ids=["before-runs", "after-runs"])
async def test_a_copied_app_is_new_and_traces_as_the_original(recorder, caplog, copier, kind, ran):
    app = set_up(kind, **OPTIONS)
    original = plugin_in(app)
    if ran:
        await (await runs(app)).close()
        recorder.ended.clear()

    copied_app = COPIERS[copier](app)

    plugin = plugin_in(copied_app)
    fresh(original, plugin)
    assert [type(p) for p in copied_app.plugins or []] == [AdkOtelPlugin]
    assert options.given(plugin._options) == options.given(original._options) == OPTIONS
    runner = await runs(copied_app, 2)
    await runner.close()
    assert per_trace(recorder) == [Counter(CLERK_SPANS)] * 2
    # The options travelled: content captured, the user id hashed.
    [invocation, *_] = (s for s in recorder.spans if s.name == "invocation shop")
    assert "gen_ai.input.messages" in (invocation.attributes or {})
    assert (invocation.attributes or {}).get("user.id") not in (None, USER)
    assert original.open_spans == 0 and plugin.internal_errors == 0
    assert_clean(recorder, caplog.records)


@pytest.mark.parametrize("copier", [copy.copy, *COPIERS.values()])
def test_a_plugin_copy_carries_its_name_options_and_noted_roots(copier):
    plugin = AdkOtelPlugin("tracing", **OPTIONS)
    plugin.note_root("shop", flow_app().root_agent)
    copied = copier(plugin)
    fresh(plugin, copied)
    assert copied.name == "tracing"
    assert options.given(copied._options) == OPTIONS
    assert copied._runs.workflows == {"shop": "flow"} == plugin._runs.workflows
    assert copied._runs.kinds == plugin._runs.kinds


async def test_a_copy_made_mid_run_shares_nothing_with_the_running_plugin(recorder, caplog):
    started, gate = asyncio.Event(), asyncio.Event()
    held = Step(parts=(types.Part(text="late"),), started=started, gate=gate)
    app = adk_otel.instrument(clerk_app())
    app.root_agent.model = ScriptedModel(script=[call("lookup", {"sku": "A1"}), held])
    original = plugin_in(app)
    runner = InMemoryRunner(app=app)
    running = asyncio.create_task(drive(runner))
    await started.wait()  # the second model call is open
    open_before = original.open_spans
    assert open_before >= 3

    # (The App itself holds the test's gate, an asyncio.Event: no pickle takes it.)
    copies = [copy.copy(original), copy.deepcopy(original), pickled(original)]
    copies.append(cloudpickled(original))

    for copied in copies:
        fresh(original, copied)
    assert original.open_spans == open_before
    gate.set()
    result = await running
    assert result.error is None
    await runner.close()
    assert per_trace(recorder) == [Counter(CLERK_SPANS)]
    # A copy runs on its own.
    await (await runs(clerk_app(plugins=[copies[1]]))).close()
    assert len(per_trace(recorder)) == 2
    assert_clean(recorder, caplog.records)


async def test_providers_stay_in_a_deep_copy_and_are_dropped_from_a_pickle(
    recorder, caplog, monkeypatch
):
    monkeypatch.setattr(travel, "_told", set())
    # The process's count of SDK batch-queue drops (earlier tests cause some) is
    # reported at every flush of a provider adk-otel did not build: start at none.
    monkeypatch.setattr(shutdown.SDK_DROPS, "dropped", 0)
    caplog.set_level(logging.WARNING, logger="adk_otel")
    exporter = InMemorySpanExporter()
    own = TracerProvider()
    own.add_span_processor(SimpleSpanProcessor(exporter))
    app = adk_otel.instrument(clerk_app(), tracer_provider=own)
    await (await runs(app)).close()
    assert len(exporter.get_finished_spans()) == 5 and not recorder.spans

    # Same process: the copy keeps the provider it was given.
    copied = copy.deepcopy(app)
    assert plugin_in(copied)._options[settings.TRACER_PROVIDER] is own
    assert not caplog.records
    await (await runs(copied)).close()
    assert len(exporter.get_finished_spans()) == 10 and not recorder.spans

    # Another process: the provider stays behind, said once where it is pickled
    # and once where it is unpickled; spans go to the global provider there.
    data = pickle.dumps(app)
    arrived = [pickle.loads(data), cloudpickled(app)]
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 2, warned
    assert "pickled without its tracer_provider" in warned[0]
    assert "unpickled without the tracer_provider" in warned[1]
    for unpickled in arrived:
        assert plugin_in(unpickled)._options[settings.TRACER_PROVIDER] is None
    await (await runs(arrived[0])).close()
    assert per_trace(recorder) == [Counter(CLERK_SPANS)]
    assert len(exporter.get_finished_spans()) == 10
    caplog.clear()
    assert_clean(recorder, caplog.records)


async def test_the_close_witness_pickles_and_its_copy_names_no_runner(recorder, caplog):
    app = adk_otel.instrument(clerk_app())
    runner = await runs(app)
    listed = runner.plugin_manager.plugins
    assert [type(p) for p in listed] == [sharing.CloseWitness, AdkOtelPlugin]

    for copied in (copy.deepcopy(listed), pickled(listed), cloudpickled(listed)):
        witness, plugin = copied
        assert type(witness) is sharing.CloseWitness and witness.name == listed[0].name
        assert witness.witness_for is None
        assert not witness.watches(listed[0].witness_for, runner.plugin_manager)
        await witness.close()  # names no Runner: nothing to do
        fresh(listed[1], plugin)
    await runner.close()
    recorder.ended.clear()

    # An App built on a copied list (its witness in front) traces as before.
    moved = App(name="shop", root_agent=clerk_app().root_agent, plugins=pickled(listed))
    again = await runs(moved, 2)
    await again.close()
    assert per_trace(recorder) == [Counter(CLERK_SPANS)] * 2
    assert_clean(recorder, caplog.records)


def run_probe(
    path: Path, loader: str, kind: str, endpoint: str, *, telemetry: bool = False
) -> dict[str, Any]:
    """``telemetry``: AdkApp's own telemetry on, exporting to ``endpoint`` too."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ADK_OTEL_"))}
    clean.pop("GOOGLE_CLOUD_AGENT_ENGINE_ENABLE_TELEMETRY", None)
    env = {
        **clean,
        "PYTHONPATH": python_path(TESTS),
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_SERVICE_NAME": "travelled",
    }
    if telemetry:
        env["TELEMETRY_RECEIVER"] = endpoint
    done = subprocess.run(
        [sys.executable, str(PROBE), str(path), loader, kind],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=path.parent,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Failed to detach context" not in done.stderr, done.stderr[-3000:]
    assert "adk-otel:" not in done.stderr, done.stderr[-3000:]  # no warning, no failure
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["imported_before_load"] == []
    assert report["plugin"] == "AdkOtelPlugin"
    assert report["internal_errors"] == 0 and report["open_spans"] == 0
    return report


def received_traces(receiver: OtlpReceiver) -> list[Counter[str]]:
    """adk-otel's spans by trace, checked: each ended ``ok``, parented in its trace."""
    spans = [
        (scope_spans.scope.name, span)
        for rs in receiver.resource_spans()
        for scope_spans in rs.scope_spans
        for span in scope_spans.spans
    ]
    assert not [span.name for scope, span in spans if scope == ADK_SCOPE]
    ours = [span for scope, span in spans if scope == INSTRUMENTATION_SCOPE]
    ids = {span.span_id for span in ours}
    traces: dict[bytes, Counter[str]] = {}
    for span in ours:
        outcome = {a.key: a.value.string_value for a in span.attributes}.get(ADK_OUTCOME)
        assert outcome == "ok", span
        assert not span.parent_span_id or span.parent_span_id in ids, span
        traces.setdefault(span.trace_id, Counter())[span.name] += 1
    return list(traces.values())


@pytest.mark.timeout(300)  # a fresh process: beyond tests/lifecycle's 20 s
@pytest.mark.parametrize(
    ("loader", "kind", "ran"),
    [("pickle", "instrument", False), ("cloudpickle", "plugin", True)],
    ids=["pickle-instrument-before-runs", "cloudpickle-plugin-after-runs"],
)
async def test_a_fresh_process_unpickles_the_app_and_traces_two_runs(
    recorder, caplog, tmp_path, loader, kind, ran
):
    app = set_up(kind, flow_app)
    if ran:
        await (await runs(app)).close()
        assert per_trace(recorder) == [Counter(FLOW_SPANS)]
        assert_clean(recorder, caplog.records)
    path = tmp_path / "app.pkl"
    path.write_bytes({"pickle": pickle, "cloudpickle": cloudpickle}[loader].dumps(app))

    with OtlpReceiver() as receiver:
        run_probe(path, loader, "app", receiver.http_endpoint.removesuffix("/v1/traces"))
        # The probe closed its Runner, which flushed: everything has arrived.
        traces = received_traces(receiver)

    # Node spans too: ADK's node tracing reaches the plugin that arrived
    # through what importing adk-otel (by the unpickling) registered.
    assert traces == [Counter(FLOW_SPANS)] * 2


def meta(ctx: Any, message: Any) -> dict[str, Any]:
    """The app's own A2A request metadata."""
    return {"tenant": "acme"}


@pytest.mark.parametrize("copier", COPIERS)
def test_a_copied_remote_agent_keeps_one_trace_interceptor(copier):
    remote = pytest.importorskip("google.adk.agents.remote_a2a_agent")
    agent = remote.RemoteA2aAgent(
        name="payments",
        agent_card="http://127.0.0.1:1/.well-known/agent-card.json",
        a2a_request_meta_provider=adk_otel.a2a.with_trace_context(meta),
    )
    if getattr(getattr(agent, "_config", None), "request_interceptors", "none") == "none":
        pytest.skip("this ADK release gives remote agents no request interceptors")
    a2a.propagate_from([agent])
    copied = COPIERS[copier](agent)
    a2a.propagate_from([copied])
    assert len(copied._config.request_interceptors) == 1
    assert copied._a2a_request_meta_provider(None, None) == {"tenant": "acme"}
