"""pipeline/provider.py: the ADK-scope policy and OTLP settings from the environment."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap

import pytest
from opentelemetry.sdk.trace import TracerProvider, _TracerConfig
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from adk_otel.lifecycle.nodes import NodeTracer
from adk_otel.pipeline import otel_env, scope_tracers
from adk_otel.pipeline import provider as pipeline
from adk_otel.semconv import ADK_SCOPE


def test_suppress_adk_spans_keeps_an_earlier_configurator() -> None:
    provider = TracerProvider()
    provider._set_tracer_configurator(
        tracer_configurator=lambda scope: _TracerConfig(is_enabled=scope.name != "noisy")
    )
    assert pipeline.suppress_adk_spans(provider)
    assert pipeline.suppress_adk_spans(provider), "a second call is harmless"
    assert not provider.get_tracer("noisy").start_span("x").is_recording()
    assert not provider.get_tracer(ADK_SCOPE).start_span("x").is_recording()
    assert provider.get_tracer("other").start_span("x").is_recording()


def test_suppress_adk_spans_reports_providers_it_cannot_configure() -> None:
    class OldProvider:
        pass

    assert pipeline.suppress_adk_spans(OldProvider()) is False


def test_a_provider_whose_configurator_fails_does_not_break_instrument(caplog) -> None:
    """The configurator API is experimental: if it raises, ADK's spans stay on
    and adk-otel still traces."""

    class Refusing(TracerProvider):
        def _set_tracer_configurator(self, **kwargs) -> None:
            raise RuntimeError("experimental API changed")

    provider = Refusing()
    caplog.set_level(logging.INFO, logger="adk_otel")
    assert pipeline.suppress_adk_spans(provider) is False
    assert provider.get_tracer(ADK_SCOPE).start_span("x").is_recording()
    assert any("cannot switch ADK's own spans off" in r.getMessage() for r in caplog.records)
    tracer = pipeline.resolve_tracer(pipeline.TelemetrySettings(tracer_provider=provider))
    assert tracer.start_span("ours").is_recording()


def _scope_warnings(caplog) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and "cannot switch" in r.getMessage()
    ]


def test_an_sdk_without_tracer_config_keeps_tracing_and_says_why(monkeypatch, caplog) -> None:
    """``_TracerConfig`` is private: an SDK that drops it cannot switch ADK's
    scope off, but ADK's scope is answered by adk-otel's own tracer, which
    records none of ADK's duplicates: no warning, and adk-otel's spans work."""
    import sys
    import types

    import opentelemetry.sdk.trace as sdk_trace

    class Later(types.ModuleType):
        """The SDK module as importers see it, without the private name (the
        SDK's own code keeps its globals)."""

        def __getattr__(self, name: str) -> object:
            if name == "_TracerConfig":
                raise AttributeError(name)
            return getattr(sdk_trace, name)

    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", Later(sdk_trace.__name__))
    provider = TracerProvider()
    caplog.set_level(logging.WARNING, logger="adk_otel")
    tracer = pipeline.resolve_tracer(pipeline.TelemetrySettings(tracer_provider=provider))
    pipeline.resolve_tracer(pipeline.TelemetrySettings(tracer_provider=provider))
    # Only the A2A SDK's scope, which nothing routes, is said to stay on.
    [warning] = _scope_warnings(caplog)
    assert "a2a-python-sdk" in warning and "ADK's own spans" not in warning
    assert isinstance(provider.get_tracer(ADK_SCOPE), NodeTracer)
    assert not provider.get_tracer(ADK_SCOPE).start_span("x").is_recording()
    assert tracer.start_span("ours").is_recording()


def test_an_sdk_without_the_configurator_setter_keeps_tracing_and_says_why(caplog) -> None:
    """Likewise when the provider has no ``_set_tracer_configurator``; and
    when ADK's scope cannot be routed either: ADK's own spans are then kept on
    that provider (the tracer ADK holds is answered for by itself, see
    test_setups), and the warning names only the scope it could not switch off."""

    class Later(TracerProvider):
        _set_tracer_configurator = None  # as if a later SDK had removed it

    provider = Later()
    caplog.set_level(logging.WARNING, logger="adk_otel")
    tracer = pipeline.resolve_tracer(pipeline.TelemetrySettings(tracer_provider=provider))
    [warning] = _scope_warnings(caplog)
    assert "a2a-python-sdk" in warning and "ADK's own spans" not in warning
    assert not provider.get_tracer(ADK_SCOPE).start_span("x").is_recording()
    assert tracer.start_span("ours").is_recording()
    caplog.clear()

    class Unroutable(Later):
        def __init__(self) -> None:
            super().__init__()
            self._tracers = _Cache(self._tracers)  # not the SDK's plain dict

    class _Cache(dict):  # type: ignore[type-arg]
        pass

    provider = Unroutable()
    pipeline.resolve_tracer(pipeline.TelemetrySettings(tracer_provider=provider))
    [warning] = _scope_warnings(caplog)
    assert "a2a-python-sdk" in warning and "_set_tracer_configurator" in warning
    assert provider.get_tracer(ADK_SCOPE).start_span("x").is_recording()


def test_adk_spans_pass_the_parent_through() -> None:
    """A switched-off ADK span keeps children in the caller's trace."""
    provider = TracerProvider()
    pipeline.suppress_adk_spans(provider)
    ours = provider.get_tracer("adk_otel")
    adk = provider.get_tracer(ADK_SCOPE)
    with ours.start_as_current_span("caller") as caller, adk.start_as_current_span("agent x"):
        child = ours.start_span("child")
    assert child.parent.span_id == caller.get_span_context().span_id


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, False),
        ({"ADK_OTEL_KEEP_ADK_SPANS": "true"}, True),
        ({"ADK_OTEL_KEEP_ADK_SPANS": "0"}, False),
    ],
)
def test_keep_adk_spans_from_env(monkeypatch, env, expected) -> None:
    monkeypatch.delenv("ADK_OTEL_KEEP_ADK_SPANS", raising=False)
    monkeypatch.delitem(__import__("sys").modules, "google.adk.cli.api_server", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert pipeline.keep_adk_spans(None) is expected
    assert pipeline.keep_adk_spans(not expected) is (not expected), "explicit wins"


@pytest.mark.parametrize(
    ("value", "protocol", "problem"),
    [
        ("http://localhost:4318", "http/protobuf", None),
        ("localhost:4317", "grpc", None),
        ("localhost:4318", "http/protobuf", "scheme"),
        ("http://:4318", "http/protobuf", "no host"),
        ("http://localhost:99999", "http/protobuf", "out of range"),
        ("http://user:pw@collector:4317", "grpc", "user:password@"),
        ("user:pw@collector:4317", "grpc", "user:password@"),
        ("http://user:pw@collector:4318", "http/protobuf", None),  # basic auth works there
    ],
)
def test_endpoint_problems_are_explained(value, protocol, problem) -> None:
    found = otel_env.endpoint_problem(value, protocol)
    assert (found is None) if problem is None else (problem in found)


def test_unknown_protocol_warns_naming_the_variable(monkeypatch, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="adk_otel")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
    assert otel_env.otlp_protocol() == "http/protobuf"
    assert "OTEL_EXPORTER_OTLP_PROTOCOL='http/json' is not supported" in caplog.text


@pytest.mark.parametrize(("keep", "recorded"), [(None, False), ("true", True), ("false", False)])
def test_a2a_sdk_spans_are_off_unless_kept(monkeypatch, keep, recorded) -> None:
    if keep is None:
        monkeypatch.delenv("ADK_OTEL_KEEP_A2A_SPANS", raising=False)
    else:
        monkeypatch.setenv("ADK_OTEL_KEEP_A2A_SPANS", keep)
    provider = TracerProvider()
    pipeline.resolve_tracer(pipeline.TelemetrySettings(tracer_provider=provider))
    assert provider.get_tracer("a2a-python-sdk").start_span("enqueue").is_recording() is recorded
    assert provider.get_tracer("gcp.vertex.agent").start_span("adk").is_recording() is False
    assert provider.get_tracer("httpx").start_span("GET").is_recording()


def test_keeping_adk_spans_after_the_default_switches_them_back_on() -> None:
    provider = TracerProvider()
    pipeline.resolve_tracer(pipeline.TelemetrySettings(tracer_provider=provider))
    assert not provider.get_tracer(ADK_SCOPE).start_span("adk").is_recording()
    pipeline.resolve_tracer(
        pipeline.TelemetrySettings(tracer_provider=provider, keep_adk_spans=True)
    )
    assert provider.get_tracer(ADK_SCOPE).start_span("adk").is_recording()


@pytest.mark.parametrize(("env", "expected"), [("false", False), ("true", True), (None, False)])
def test_adk_spans_are_off_under_adk_server_too_unless_kept(monkeypatch, env, expected) -> None:
    """Under ``adk web`` / ``adk api_server`` ADK's spans are off like everywhere
    else; ``ADK_OTEL_KEEP_ADK_SPANS=true`` keeps them."""
    import sys

    import google.adk.cli.api_server  # noqa: F401 - ADK's server module, loaded

    assert "google.adk.cli.api_server" in sys.modules
    if env is None:
        monkeypatch.delenv("ADK_OTEL_KEEP_ADK_SPANS", raising=False)
    else:
        monkeypatch.setenv("ADK_OTEL_KEEP_ADK_SPANS", env)
    assert pipeline.keep_adk_spans(None) is expected


def test_adks_scope_is_answered_by_the_tracer_the_package_registers() -> None:
    """The pipeline never imports the lifecycle (the import contract): importing
    the package registers the lifecycle's node tracer for ADK's scope, as the
    entry point of ``OTEL_PYTHON_TRACER_PROVIDER=adk_otel`` imports it, and
    ``lifecycle/nodes.py`` is loaded only when ADK's tracer is first asked for."""
    code = textwrap.dedent(
        """
        import sys
        from adk_otel.pipeline import provider_from_env
        print("adk_otel.lifecycle.nodes" in sys.modules)
        tracer = provider_from_env().get_tracer("gcp.vertex.agent")
        print(type(tracer).__module__, type(tracer).__name__)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "OTEL_TRACES_EXPORTER": "none"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.splitlines() == ["False", "adk_otel.lifecycle.nodes NodeTracer"]


def test_with_no_tracer_registered_for_adks_scope_the_sdks_answers(monkeypatch) -> None:
    monkeypatch.setattr(scope_tracers, "_factories", {})

    built = pipeline.AdkOtelTracerProvider()
    assert type(built.get_tracer(ADK_SCOPE)) is type(built.get_tracer("other"))
    sdk = TracerProvider()
    assert pipeline.route_adk_scope(sdk, route=True) is False
    assert type(sdk._tracers) is dict


def test_the_registered_factory_makes_the_tracer_of_adks_scope(monkeypatch) -> None:
    made: list[object] = []

    def factory(sdk_tracer):
        made.append(sdk_tracer)
        return NodeTracer(sdk_tracer)

    monkeypatch.setattr(scope_tracers, "_factories", {})
    scope_tracers.register(ADK_SCOPE, factory)

    built = pipeline.AdkOtelTracerProvider()
    built.keep_adk_spans(True)
    tracer = built.get_tracer(ADK_SCOPE)
    assert isinstance(tracer, NodeTracer) and tracer.native, "keep_adk_spans reaches it"
    assert built.get_tracer(ADK_SCOPE) is tracer
    sdk = TracerProvider()
    assert pipeline.route_adk_scope(sdk, route=True)
    assert isinstance(sdk.get_tracer(ADK_SCOPE), NodeTracer)
    assert [type(t).__module__ for t in made] == ["opentelemetry.sdk.trace"] * 2
    assert tracer.sdk_tracer is made[0]


def test_a_swapped_span_processor_is_followed_and_said_once(caplog, monkeypatch) -> None:
    """A platform replacing the provider's active processor (as Agent Engine's
    AdkApp does) leaves tracers made before on the old, shut-down one: the
    watch points them at the new one, and says so once."""
    from opentelemetry.sdk.trace import SynchronousMultiSpanProcessor

    from adk_otel.pipeline import processor_swap

    monkeypatch.setitem(processor_swap._told, "swapped", False)
    caplog.set_level(logging.WARNING, logger="adk_otel")
    provider = TracerProvider()
    before = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(before))
    ours = provider.get_tracer("adk_otel")
    others = provider.get_tracer("an-application")
    watch = processor_swap.ProcessorWatch(ours, provider)
    watch.check()
    assert not caplog.records, "nothing swapped yet: nothing said"

    provider._active_span_processor.shutdown()  # as the platform does
    provider._active_span_processor = SynchronousMultiSpanProcessor()
    after = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(after))
    ours.start_span("lost").end()
    assert after.get_finished_spans() == (), "the SDK's own behaviour: a stale tracer drops"

    for _ in range(2):
        watch.check()
    ours.start_span("kept").end()
    others.start_span("kept too").end()
    assert [s.name for s in after.get_finished_spans()] == ["kept", "kept too"]
    said = [
        r.getMessage() for r in caplog.records if "span processor was replaced" in r.getMessage()
    ]
    assert len(said) == 1 and "2 tracer(s)" in said[0], said
