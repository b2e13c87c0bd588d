"""A small span tree made with the SDK, and the checks that it survived a trip over OTLP."""

from __future__ import annotations

from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan
from opentelemetry.proto.trace.v1.trace_pb2 import Status as PbStatus
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from adk_otel.testing.receiver import OtlpReceiver

from .conftest import SERVICE_NAME

ROOT, AGENT, TOOL = "invoke_agent shop", "agent shop", "execute_tool lookup"
SCOPE = ("adk_otel.stack_test", "1.2.3")
TYPED_ATTRIBUTES: dict[str, Any] = {
    "adk.app.name": "shop",
    "adk.model.streaming": True,
    "gen_ai.usage.input_tokens": 42,
    "test.temperature": 0.25,
    "gen_ai.response.finish_reasons": ["stop", "length"],
    "test.ints": [1, 2, 3],
    "test.floats": [0.5, 1.5],
    "test.bools": [True, False],
}


def value_of(value: AnyValue) -> Any:
    """An OTLP AnyValue as the Python value the SDK was given."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(item) for item in value.array_value.values]
    return getattr(value, kind)


def attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: value_of(pair.value) for pair in pairs}


def make_tree(provider: TracerProvider) -> Span:
    """root (SERVER, OK) > agent (INTERNAL, typed attributes) > tool (CLIENT, ERROR + event).

    Returns the root span, whose context the received spans must carry.
    """
    tracer = provider.get_tracer(*SCOPE)
    with (
        tracer.start_as_current_span(ROOT, kind=SpanKind.SERVER) as root,
        tracer.start_as_current_span(AGENT, attributes=TYPED_ATTRIBUTES),
        tracer.start_as_current_span(TOOL, kind=SpanKind.CLIENT) as tool,
    ):
        try:
            raise LookupError("no such sku: A1")
        except LookupError as exc:
            tool.record_exception(exc, attributes={"adk.tool.attempt": 2})
            tool.set_status(Status(StatusCode.ERROR, "no such sku: A1"))
        root.set_status(Status(StatusCode.OK))
    return root


def assert_tree_intact(receiver: OtlpReceiver, root_sent: Span, timeout: float = 10.0) -> None:
    """Names, ids, parents, kinds, statuses, attributes, events, resource and scope."""
    received = {span.name: span for span in receiver.wait_for(3, timeout=timeout)}
    assert len(receiver.spans()) == 3, [span.name for span in receiver.spans()]
    root, agent, tool = received[ROOT], received[AGENT], received[TOOL]

    context = root_sent.get_span_context()
    assert {span.trace_id for span in received.values()} == {context.trace_id.to_bytes(16, "big")}
    assert root.span_id == context.span_id.to_bytes(8, "big")
    assert root.parent_span_id == b""
    assert agent.parent_span_id == root.span_id
    assert tool.parent_span_id == agent.span_id
    assert tool.end_time_unix_nano <= agent.end_time_unix_nano <= root.end_time_unix_nano

    assert [root.kind, agent.kind, tool.kind] == [
        PbSpan.SPAN_KIND_SERVER,
        PbSpan.SPAN_KIND_INTERNAL,
        PbSpan.SPAN_KIND_CLIENT,
    ]
    assert (root.status.code, root.status.message) == (PbStatus.STATUS_CODE_OK, "")
    assert agent.status.code == PbStatus.STATUS_CODE_UNSET
    assert (tool.status.code, tool.status.message) == (
        PbStatus.STATUS_CODE_ERROR,
        "no such sku: A1",
    )

    assert attributes(agent.attributes) == TYPED_ATTRIBUTES  # typed values, not strings
    kinds = {pair.key: pair.value.WhichOneof("value") for pair in agent.attributes}
    assert kinds["adk.model.streaming"] == "bool_value"
    assert kinds["gen_ai.usage.input_tokens"] == "int_value"
    assert kinds["test.temperature"] == "double_value"

    (event,) = tool.events
    assert event.name == "exception"
    event_attributes = attributes(event.attributes)
    assert event_attributes["exception.type"] == "LookupError"
    assert event_attributes["exception.message"] == "no such sku: A1"
    assert "raise LookupError" in event_attributes["exception.stacktrace"]
    assert event_attributes["adk.tool.attempt"] == 2

    for resource_spans in receiver.resource_spans():
        resource = attributes(resource_spans.resource.attributes)
        assert resource["service.name"] == SERVICE_NAME
        assert resource["telemetry.sdk.language"] == "python"
        for scope_spans in resource_spans.scope_spans:
            assert (scope_spans.scope.name, scope_spans.scope.version) == SCOPE
