"""An instrumented ADK run, exported by adk-otel's own env-configured pipeline
over real OTLP (gRPC and HTTP/protobuf) to a real receiver, then written as the
collector's file-exporter JSON and read back by the ``adk-otel`` CLI."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

import adk_otel
from adk_otel import cli
from adk_otel.cli.demo import build_app, run_once
from adk_otel.pipeline.provider import build_tracer_provider
from adk_otel.testing.receiver import OtlpReceiver
from adk_otel.traces.io.otlp_json import write_requests

EXPECTED = {
    "invocation shop": ("error", Status.STATUS_CODE_ERROR, None),
    "invoke_agent checkout": ("error", Status.STATUS_CODE_ERROR, "invocation shop"),
    "invoke_agent catalog": ("ok", Status.STATUS_CODE_OK, "invoke_agent checkout"),
    "execute_tool lookup_item": ("ok", Status.STATUS_CODE_OK, "invoke_agent catalog"),
    "invoke_agent payments": ("error", Status.STATUS_CODE_ERROR, "invoke_agent checkout"),
    "execute_tool charge_card": ("error", Status.STATUS_CODE_ERROR, "invoke_agent payments"),
}

SPEC = """
traces: 1
spans:
  - tool: charge_card
    status: ERROR
    error: PaymentDeclined
    parent: invoke_agent payments
  - agent: notifier
    count: 0
tree:
  name: invocation shop
  outcome: error
  children:
    - name: invoke_agent checkout
      children:
        - name: invoke_agent catalog
          outcome: ok
        - name: invoke_agent payments
          outcome: error
"""


def attribute(span: Span, key: str) -> str | None:
    return next((a.value.string_value for a in span.attributes if a.key == key), None)


@pytest.fixture(params=["grpc", "http/protobuf"])
def exported(request, monkeypatch, tmp_path) -> tuple[OtlpReceiver, list[Span]]:
    with OtlpReceiver() as receiver:
        monkeypatch.setenv("OTEL_SERVICE_NAME", "wire-test")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", request.param)
        if request.param == "grpc":
            monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.grpc_endpoint)
        else:
            monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.http_endpoint)
        provider = build_tracer_provider()
        app = adk_otel.instrument(build_app(), tracer_provider=provider)
        error = asyncio.run(run_once(app))
        assert type(error).__name__ == "PaymentDeclined"
        provider.shutdown()
        spans = receiver.wait_for(
            lambda got: any(s.name == "invocation shop" for s in got), timeout=15
        )
        yield receiver, spans


def test_received_spans_keep_names_parents_statuses_events(exported):
    receiver, spans = exported
    by_id = {s.span_id: s for s in spans}
    by_name = {s.name: s for s in spans}
    assert len({s.trace_id for s in spans}) == 1
    for name, (outcome, status, parent) in EXPECTED.items():
        span = by_name[name]
        assert attribute(span, "adk.outcome") == outcome, name
        assert span.status.code == status, name
        parent_span = by_id.get(span.parent_span_id)
        assert (parent_span.name if parent_span else None) == parent, name
    tool = by_name["execute_tool charge_card"]
    assert "card declined" in tool.status.message
    assert attribute(tool, "error.type").endswith("PaymentDeclined")
    [event] = [e for e in tool.events if e.name == "exception"]
    assert any(a.key == "exception.stacktrace" for a in event.attributes)
    assert by_name["generate_content scripted-model"].kind == Span.SPAN_KIND_CLIENT
    [resource] = {
        a.value.string_value
        for rs in receiver.resource_spans()
        for a in rs.resource.attributes
        if a.key == "service.name"
    }
    assert resource == "wire-test"


def test_cli_reads_the_collector_file_format(exported, tmp_path: Path, capsys):
    receiver, _ = exported
    traces = tmp_path / "traces.json"
    write_requests(traces, receiver.requests)
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)

    assert cli.main(["tree", str(traces)]) == 0
    tree = capsys.readouterr().out
    assert "execute_tool charge_card" in tree and "PaymentDeclined" in tree

    assert cli.main(["check", str(traces), "--expect", str(spec)]) == 0
    capsys.readouterr()

    spec.write_text(
        SPEC.replace("tool: charge_card\n    status: ERROR", "tool: charge_card\n    status: OK")
    )
    assert cli.main(["check", str(traces), "--expect", str(spec)]) == 1
    assert "charge_card" in capsys.readouterr().out
