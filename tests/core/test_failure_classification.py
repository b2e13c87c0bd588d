"""Failure classification never raises and never loses a span, whatever an
exception or a tool result does when read (property tests), and knows the
provider libraries' errors by name."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from adk_otel import semconv as sc
from adk_otel.ledger.spans import Ledger
from adk_otel.reading import failures
from adk_otel.semconv import Outcome

CATEGORIES = {c.value for c in failures.Category}
LAYERS = st.sampled_from([k.value for k in sc.SpanKind])


class _Boom(Exception):
    pass


def _raises(*_: Any, **__: Any) -> Any:
    raise _Boom("hostile")


def hostile_exception(
    attributes: dict[str, Any], hostile_str: bool, hostile_getattr: bool
) -> BaseException:
    """An exception whose attributes are anything, whose ``__str__`` or
    attribute lookup may raise."""
    namespace: dict[str, Any] = {}
    if hostile_str:
        namespace["__str__"] = _raises
    if hostile_getattr:
        namespace["__getattribute__"] = lambda self, name: (
            _raises() if not name.startswith("__") else object.__getattribute__(self, name)
        )
    cls = type("Hostile", (Exception,), namespace)
    error = cls("x")
    for key, value in attributes.items():
        with contextlib.suppress(Exception):
            object.__setattr__(error, key, value)
    return error


ANY_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
ATTRIBUTES = st.dictionaries(
    st.sampled_from(["code", "status", "status_code", "response", "details", "message", "headers"]),
    ANY_VALUE,
    max_size=4,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(ATTRIBUTES, st.booleans(), st.booleans(), LAYERS)
def test_any_exception_gets_a_documented_category(attributes, hostile_str, hostile_getattr, layer):
    error = hostile_exception(attributes, hostile_str, hostile_getattr)
    found = failures.classify_exception(error, layer)
    assert found.category in CATEGORIES
    for value in found.attributes.values():
        assert type(value) in (str, bool, int, float)


RESULTS = st.one_of(
    ANY_VALUE,
    st.fixed_dictionaries(
        {"status": st.one_of(st.just("error"), st.just("ERROR"), ANY_VALUE)},
        optional={"error_message": ANY_VALUE, "error": ANY_VALUE},
    ),
    st.fixed_dictionaries(
        {
            "error": st.one_of(
                st.text().map(
                    lambda t: "Invoking `t()` failed due to argument validation errors" + t
                ),
                st.text().map(lambda t: "MCP tool execution failed: " + t),
                ANY_VALUE,
            )
        }
    ),
)


@settings(max_examples=300, deadline=None)
@given(RESULTS, st.one_of(st.none(), st.text()))
def test_any_tool_result_is_classified_without_raising(result, mcp_error):
    found = failures.classify_result(object(), result, mcp_error)
    assert found is None or found.category in CATEGORIES
    # The documented rules, whatever else the result holds: an MCP error or a
    # status "error" is reported by the tool, ADK's argument check is invalid
    # arguments, and what is not a dict reports nothing.
    category = None if found is None else found.category
    if mcp_error is not None:
        assert category == failures.Category.TOOL_REPORTED_ERROR
    elif type(result) is not dict:
        assert found is None
    elif isinstance(result.get("status"), str) and result["status"].lower() == "error":
        assert category == failures.Category.TOOL_REPORTED_ERROR
    elif isinstance(result.get("error"), str) and result["error"].startswith(
        "Invoking `t()` failed due to argument validation errors"
    ):
        assert category == failures.Category.TOOL_INVALID_ARGS


@settings(max_examples=100, deadline=None)
@given(ANY_VALUE, LAYERS, st.booleans(), st.booleans())
def test_any_classifier_answer_is_safe(answer, layer, hostile_str, hostile_getattr):
    subject = hostile_exception({}, hostile_str, hostile_getattr)
    found = failures.ask_classifier(lambda subject, at: answer, subject, layer)
    assert found is None or (type(found) is str and 0 < len(found) <= 200)
    assert failures.ask_classifier(_raises, subject, layer) is None


@settings(max_examples=100, deadline=None)
@given(ATTRIBUTES, st.booleans(), st.booleans(), LAYERS)
def test_no_span_is_lost_on_any_failure(attributes, hostile_str, hostile_getattr, layer):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    ledger = Ledger(provider.get_tracer("t"))
    error = hostile_exception(attributes, hostile_str, hostile_getattr)
    entry = ledger.start("k", "execute_tool t")
    failure = failures.classify_exception(error, layer)
    ledger.end_entry(entry, Outcome.ERROR, error=error, extra=failure.attributes)
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes[sc.ADK_ERROR_CATEGORY] in CATEGORIES
    assert len(ledger) == 0


def test_an_error_span_without_a_category_gets_other():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    ledger = Ledger(provider.get_tracer("t"))
    ledger.end_entry(ledger.start("k", "s"), Outcome.ERROR, reason="something")
    (span,) = exporter.get_finished_spans()
    assert span.attributes[sc.ADK_ERROR_CATEGORY] == "other"


def _named(module: str, name: str, *bases: type) -> type:
    cls = type(name, bases or (Exception,), {})
    cls.__module__ = module
    return cls


def test_provider_errors_are_known_by_name_without_importing_them():
    """Classes named as openai, anthropic and litellm name them (their
    libraries need not be importable): nearest known name in the MRO wins."""
    api_connection = _named("openai", "APIConnectionError")
    timeout = _named("openai", "APITimeoutError", api_connection)
    assert failures.classify_exception(timeout(), "model").category == "timeout"
    assert failures.classify_exception(api_connection(), "model").category == "connection"
    overloaded = _named("anthropic", "OverloadedError")
    assert failures.classify_exception(overloaded(), "model").category == "provider_unavailable"
    window = _named("litellm", "ContextWindowExceededError", _named("litellm", "BadRequestError"))
    assert failures.classify_exception(window(), "model").category == "invalid_request"
    assert failures.classify_exception(ConnectionRefusedError(), "model").retryable is True
    assert failures.classify_exception(TimeoutError(), "agent").category == "timeout"


def test_remote_error_events_as_adk_words_them():
    """The texts of the error events ADK's RemoteA2aAgent yields (2.5 and 2.13)."""
    classify = failures.classify_remote_event
    broke_off = "A2A response stream ended before task t-1 reached a terminal state."
    assert classify(broke_off, None).category == "connection"
    assert classify("Remote A2A task failed: card declined", None).category == "remote_failed"
    http = classify("A2A request failed: HTTP Error 503", {"a2a:status_code": "503"})
    assert (http.category, http.status_code, http.retryable) == ("provider_unavailable", 503, True)
    assert classify("A2A request failed: Request timed out", None).category == "timeout"
    assert classify("Failed to authenticate remote A2A agent: no token", None).category == "auth"
    assert classify("Unknown A2A response type", None).category == "remote_failed"
