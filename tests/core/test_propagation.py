"""Incoming trace context is untrusted: whatever a request carries, reading it
never raises, and only a valid W3C context becomes a parent."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from adk_otel.integrations.propagation import MAX_HEADER_LENGTH, inject, remote_parent, run_parent

VALID = "00-" + "a" * 32 + "-" + "b" * 16 + "-01"

values = st.one_of(
    st.text(),
    st.text(alphabet="0123456789abcdef-", max_size=80),
    st.integers(),
    st.none(),
    st.lists(st.text(), max_size=3),
    st.binary(max_size=40),
)
carriers = st.one_of(
    st.dictionaries(st.sampled_from(["traceparent", "tracestate", "baggage", "x"]), values),
    values,
)


@settings(max_examples=300, deadline=None)
@given(carriers)
def test_any_carrier_is_read_without_raising(carrier) -> None:
    context = remote_parent(carrier)
    if context is not None:
        span_context = trace.get_current_span(context).get_span_context()
        assert span_context.is_valid and span_context.is_remote
    _, continued = run_parent(carrier)
    assert continued is (context is not None)


def test_a_valid_traceparent_is_continued_and_kept_whole() -> None:
    context = remote_parent({"traceparent": VALID, "tracestate": "k=v"})
    span_context = trace.get_current_span(context).get_span_context()
    assert format(span_context.trace_id, "032x") == "a" * 32
    assert span_context.trace_state.get("k") == "v"


def test_oversized_values_are_dropped_before_parsing() -> None:
    padded = VALID + " " * MAX_HEADER_LENGTH
    assert remote_parent({"traceparent": padded}) is None
    context = remote_parent({"traceparent": VALID, "tracestate": "k=" + "v" * 10_000})
    assert trace.get_current_span(context).get_span_context().trace_state.get("k") is None


def test_a_local_span_of_the_same_trace_stays_the_parent() -> None:
    """An instrumented HTTP server continued the caller first: it is the deeper parent."""
    tracer = TracerProvider().get_tracer("test")
    remote = remote_parent({"traceparent": VALID})
    with tracer.start_as_current_span("POST /run", context=remote) as server:
        parent, continued = run_parent({"traceparent": VALID})
        assert trace.get_current_span(parent) is server and continued is False
    with tracer.start_as_current_span("an unrelated local span"):
        parent, continued = run_parent({"traceparent": VALID})
        assert continued is True


def test_inject_writes_the_current_context() -> None:
    tracer = TracerProvider().get_tracer("test")
    assert inject() == {}
    with tracer.start_as_current_span("agent") as span:
        carrier = inject()
    trace_id = format(span.get_span_context().trace_id, "032x")
    assert carrier["traceparent"].split("-")[1] == trace_id
