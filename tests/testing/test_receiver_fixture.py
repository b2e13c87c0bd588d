"""Spans that went over the wire: the otlp_receiver fixture feeding SpanQuery and the files."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from adk_otel.testing import SpanQuery, assert_tree
from adk_otel.traces.io.files import read_spans
from adk_otel.traces.io.otlp_json import write_requests

from .builders import TraceBuilder, build_shop

EXPECTED = (
    "invocation shop",
    [("invoke_agent root", ["generate_content scripted-model", "execute_tool lookup"])],
)


def exporter_for(protocol: str, receiver):
    if protocol == "grpc":
        return GrpcExporter(endpoint=receiver.grpc_endpoint, insecure=True, timeout=5)
    return HttpExporter(endpoint=receiver.http_endpoint, timeout=5)


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_exported_spans_can_be_queried_and_saved(protocol: str, otlp_receiver, tmp_path) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "shop"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter_for(protocol, otlp_receiver)))
    build_shop(TraceBuilder(provider))
    otlp_receiver.wait_for(4, timeout=10)
    provider.shutdown()

    from_requests = SpanQuery(otlp_receiver.requests)
    assert from_requests.tool("lookup").one().resource["service.name"] == "shop"
    assert_tree(otlp_receiver.requests, EXPECTED)
    assert_tree(otlp_receiver.spans(), EXPECTED)  # bare protobuf spans work too

    path = tmp_path / "traces.jsonl"
    write_requests(path, otlp_receiver.requests)
    assert_tree(read_spans(path), EXPECTED)
