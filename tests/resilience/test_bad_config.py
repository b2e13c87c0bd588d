"""Bad ``OTEL_*`` configuration: one clear warning naming the variable (and
never a credential), and the agent still runs; where a usable exporter
remains, spans still arrive."""

from __future__ import annotations

import asyncio
import logging

import pytest

import adk_otel
from adk_otel.pipeline.provider import build_tracer_provider

from . import agents
from .conftest import run_child

# (environment, the variable the warning must name, whether spans still get exported)
CASES = {
    "endpoint-bad-port": ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:notaport"}, False),
    "endpoint-no-scheme": (
        {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "localhost:4318/v1/traces"},
        False,
    ),
    "endpoint-wrong-scheme": (
        {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://c:4317"},
        False,
    ),
    "protocol-unknown": ({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, True),
    "traces-protocol-unknown": ({"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "thrift"}, True),
    "headers-no-equals": ({"OTEL_EXPORTER_OTLP_HEADERS": "Bearer s3cr3t"}, True),
    "headers-bad-name": ({"OTEL_EXPORTER_OTLP_HEADERS": "api key=s3cr3t,x-ok=1"}, True),
    "traces-headers-not-encoded": ({"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-token=s3cr3té"}, True),
    "sampler-unknown": ({"OTEL_TRACES_SAMPLER": "sometimes"}, True),
    "sampler-arg-not-a-number": (
        {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "half"},
        True,
    ),
    "sampler-arg-out-of-range": (
        {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1.5"},
        True,
    ),
    "bsp-queue-not-a-number": ({"OTEL_BSP_MAX_QUEUE_SIZE": "lots"}, True),
    "bsp-delay-negative": ({"OTEL_BSP_SCHEDULE_DELAY": "-5"}, True),
    "bsp-batch-above-queue": (
        {"OTEL_BSP_MAX_QUEUE_SIZE": "100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "500"},
        True,
    ),
    "timeout-not-a-number": ({"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"}, True),
    "compression-unknown": ({"OTEL_EXPORTER_OTLP_COMPRESSION": "zip"}, True),
    "exporter-unknown": ({"OTEL_TRACES_EXPORTER": "zipkin"}, True),
    "keep-adk-spans-not-a-boolean": ({"ADK_OTEL_KEEP_ADK_SPANS": "maybe"}, True),
    # Out of range: the SDK's queue or timers would fail (OverflowError, a dead export thread).
    "bsp-queue-overflow": ({"OTEL_BSP_MAX_QUEUE_SIZE": "99999999999999999999"}, True),
    "bsp-delay-huge": ({"OTEL_BSP_SCHEDULE_DELAY": "99999999999999"}, True),
    "bsp-export-timeout-huge": ({"OTEL_BSP_EXPORT_TIMEOUT": "99999999999999"}, True),
    # The SDK reads this one too: it must not add its own message and traceback.
    "bsp-export-timeout-not-a-number": ({"OTEL_BSP_EXPORT_TIMEOUT": "abc"}, True),
    "exporter-unknown-in-a-list": ({"OTEL_TRACES_EXPORTER": "otlp,zipkin"}, True),
    "timeout-infinite": ({"OTEL_EXPORTER_OTLP_TIMEOUT": "inf"}, True),
    "timeout-huge": ({"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "1e12"}, True),
    # Credentials in the endpoint never reach a message.
    "endpoint-credentials": (
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://user:s3cr3t@localhost:notaport/?key=s3cr3t"},
        False,
    ),
    # gRPC would take user:s3cr3t@localhost as the host name and never connect.
    "grpc-endpoint-credentials": (
        {
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://user:s3cr3t@localhost:4317",
        },
        False,
    ),
}
VARIABLES = (
    "OTEL_EXPORTER_OTLP_",
    "OTEL_TRACES_",
    "OTEL_BSP_",
    "ADK_OTEL_",
)


@pytest.fixture
def clean_env(monkeypatch):
    import os

    for name in list(os.environ):
        if name.startswith(VARIABLES):
            monkeypatch.delenv(name)
    return monkeypatch


@pytest.mark.parametrize("case", CASES)
def test_bad_setting_is_named_and_the_agent_runs(case, clean_env, receiver, caplog):
    env, exports = CASES[case]
    if not any("ENDPOINT" in name for name in env):
        clean_env.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.http_endpoint)
    for name, value in env.items():
        clean_env.setenv(name, value)
    caplog.set_level(logging.WARNING)

    provider = build_tracer_provider()
    runner = adk_otel.instrument(agents.runner(agents.sequential()), tracer_provider=provider)
    events = asyncio.run(agents.invoke(runner))
    provider.shutdown()

    assert events > 0
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    [warning] = warnings
    assert warning.name.startswith("adk_otel")
    message = warning.getMessage()
    named = [name for name in env if name in message]
    assert named, message
    assert "s3cr3t" not in caplog.text
    if exports:
        assert len(receiver.wait_for(8, timeout=15)) == 8


def test_bad_settings_in_an_application_without_a_provider(receiver):
    """The global path: ``instrument()`` builds the provider from a broken
    environment; the app runs, exits normally, each variable is named once,
    and the spans still reach the collector."""
    env = {
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.http_endpoint,
        "OTEL_EXPORTER_OTLP_HEADERS": "Bearer s3cr3t",
        "OTEL_TRACES_SAMPLER": "sometimes",
        "OTEL_BSP_MAX_QUEUE_SIZE": "lots",
    }
    result = run_child(2, env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.report["runs_ok"] == 2 and result.report["errors"] == []
    problems = result.problems()
    for name in ("OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_HEADERS"):
        assert sum(name in line for line in problems) == 1, problems
    assert sum("OTEL_TRACES_SAMPLER" in line for line in problems) == 1, problems
    assert sum("OTEL_BSP_MAX_QUEUE_SIZE" in line for line in problems) == 1, problems
    assert len(problems) == 4, problems
    assert "s3cr3t" not in result.stderr
    assert result.report["exported"] == result.report["ended"] == 16
    assert len(receiver.wait_for(16, timeout=15)) == 16


BLANK = (
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
    "OTEL_EXPORTER_OTLP_COMPRESSION",
    "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
)


@pytest.mark.parametrize("name", BLANK)
def test_a_blank_exporter_variable_is_unset(name, clean_env, receiver, caplog):
    """``VAR=${UNSET}`` in a compose file: empty means unset, for the SDK's
    exporter too (which would otherwise fail and turn export off)."""
    clean_env.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.http_endpoint)
    clean_env.setenv(name, "")
    caplog.set_level(logging.WARNING)

    provider = build_tracer_provider()
    runner = adk_otel.instrument(agents.runner(agents.sequential()), tracer_provider=provider)
    asyncio.run(agents.invoke(runner))
    provider.shutdown()

    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert len(receiver.wait_for(8, timeout=15)) == 8


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_a_blank_endpoint_is_the_default_endpoint(protocol, clean_env):
    from adk_otel.pipeline.otel_env import otlp_exporter_from_env

    clean_env.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
    clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
    exporter = otlp_exporter_from_env()
    assert exporter is not None
    endpoint = str(exporter._endpoint)
    assert endpoint.startswith("localhost:4317") or endpoint.startswith("http://localhost:4318")
    exporter.shutdown()


def test_the_loss_summary_names_the_endpoint_without_credentials(clean_env) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from adk_otel.pipeline.export import ExportingProcessor, batch_settings

    exporter = OTLPSpanExporter(endpoint="https://user:s3cr3t@collector:4318/v1/traces?key=s3cr3t")
    processor = ExportingProcessor(exporter, **batch_settings())
    try:
        destination = processor._watch.destination  # what every loss message names
        assert destination == "https://***@collector:4318/v1/traces?***"
    finally:
        processor.shutdown()


@pytest.mark.parametrize("exporters", ["otlp,console", "console, otlp"])
def test_console_in_the_exporter_list_is_honoured(exporters, clean_env, receiver, caplog):
    """``OTEL_TRACES_EXPORTER=otlp,console``, as the SDK reads it: both, no warning."""
    import io

    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    clean_env.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.http_endpoint)
    clean_env.setenv("OTEL_TRACES_EXPORTER", exporters)
    caplog.set_level(logging.WARNING)

    provider = build_tracer_provider()
    processors = provider._active_span_processor._span_processors
    [console] = [p for p in processors if isinstance(p.span_exporter, ConsoleSpanExporter)]
    console.span_exporter.out = out = io.StringIO()
    runner = adk_otel.instrument(agents.runner(agents.sequential()), tracer_provider=provider)
    asyncio.run(agents.invoke(runner))
    provider.shutdown()

    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert out.getvalue().count('"name": "invoke_agent') >= 1
    assert len(receiver.wait_for(8, timeout=15)) == 8
