"""The GenAI ``gen_ai.client.inference.operation.details`` event of a model call.

The conventions define it as an *event*: a log record with ``event_name``,
structured (not JSON-string) attributes and the model span's trace context,
emitted through the OpenTelemetry Logs API. That is the default form, with
content capture in an EVENT mode. The logger provider is the one passed as
``logger_provider=``, else the global one; when neither is set and adk-otel
built the tracer provider itself, it builds an OTLP log pipeline beside it
(``provider.py``). With no logger provider at all the event falls back to the
older span-event form (JSON strings on one span event, emitted as the span
ends), which is also what ``details_as_span_event=True`` or
``ADK_OTEL_DETAILS_AS_SPAN_EVENT=true`` ask for: backends that read span
events only (Jaeger, Tempo) show it there.

Tool-call ids: ADK assigns its ``adk-...`` function-call ids only after
``after_model`` (the model span has ended by then). A log record whose output
has tool calls without ids therefore waits for the model's response event
(``on_event``), which carries the ids, and takes them from it; if that event
never comes, the record is emitted without ids when the run ends.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry._logs import Logger, SeverityNumber, get_logger_provider

from .. import semconv as sc
from .. import settings
from ..util.redact import guarded
from ..version import __version__

logger: logging.Logger = guarded(logging.getLogger(__name__))

AS_SPAN_EVENT_ENV = settings.DETAILS_AS_SPAN_EVENT.env[0]
MAX_PENDING = 1024
"""Records waiting for tool-call ids, at most (older ones are emitted as they are)."""

_warned: set[str] = set()


def resolve_logger(explicit: Any, built: Any = None) -> Logger | None:
    """The Logs API logger for the details event: on ``explicit``, else the
    global logger provider, else ``built`` (a provider adk-otel built); None
    when none is a real provider (the span-event form is used then)."""
    for provider in (explicit, get_logger_provider(), built):
        if _is_real(provider):
            return provider.get_logger(sc.INSTRUMENTATION_SCOPE, __version__)
    if "no-logger" not in _warned:
        _warned.add("no-logger")
        logger.info(
            "adk-otel: no logger provider is set; the %s event is a span event",
            sc.GEN_AI_INFERENCE_DETAILS_EVENT,
        )
    return None


def _is_real(provider: Any) -> bool:
    return provider is not None and type(provider).__name__ not in (
        "ProxyLoggerProvider",
        "NoOpLoggerProvider",
    )


def structured(text: Any) -> Any:
    """A captured value (JSON text) as the structured value a log record
    carries; a value that is no longer JSON (cut to size) stays a string."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def unlinked_tool_calls(messages: Any) -> list[dict[str, Any]]:
    """The ``tool_call`` parts of output messages that have no id yet."""
    if not isinstance(messages, list):
        return []
    return [
        part
        for message in messages
        if isinstance(message, dict)
        for part in message.get("parts") or ()
        if isinstance(part, dict) and part.get("type") == "tool_call" and part.get("id") is None
    ]


class DetailsLog:
    """Emits details records; holds those waiting for ADK's tool-call ids."""

    def __init__(self, log: Logger) -> None:
        self.log = log
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, str], list[_Pending]] = {}
        self._count = 0

    def emit(self, span: trace.Span, attributes: Mapping[str, Any]) -> None:
        self.log.emit(
            timestamp=time.time_ns(),
            context=trace.set_span_in_context(span),
            severity_number=SeverityNumber.INFO,
            event_name=sc.GEN_AI_INFERENCE_DETAILS_EVENT,
            attributes=dict(attributes),
        )

    def emit_or_hold(
        self, span: trace.Span, attributes: dict[str, Any], invocation_id: Any, agent: Any
    ) -> None:
        """Emit now, or hold until :meth:`link` when the output has tool
        calls whose ids ADK has not assigned yet."""
        calls = unlinked_tool_calls(attributes.get(sc.GEN_AI_OUTPUT_MESSAGES))
        if not calls or not isinstance(invocation_id, str) or not isinstance(agent, str):
            self.emit(span, attributes)
            return
        overflow: _Pending | None = None
        with self._lock:
            self._pending.setdefault((invocation_id, agent), []).append(
                _Pending(span, attributes, calls)
            )
            self._count += 1
            if self._count > MAX_PENDING:
                overflow = self._pop_oldest()
        if overflow is not None:
            self.emit(overflow.span, overflow.attributes)

    def link(self, invocation_id: Any, agent: Any, calls: Sequence[tuple[str, str]]) -> None:
        """A response event of ``agent`` with ADK's ``(name, id)`` function
        calls: the held record whose tool calls have the same names in the
        same order gets those ids and is emitted."""
        with self._lock:
            held = self._pending.get((invocation_id, agent))
            if not held:
                return
            names = [name for name, _ in calls]
            found = next((p for p in held if [c.get("name") for c in p.calls] == names), None)
            if found is None:
                return
            held.remove(found)
            self._count -= 1
            if not held:
                del self._pending[(invocation_id, agent)]
        for part, (_, call_id) in zip(found.calls, calls, strict=True):
            part["id"] = call_id
        self.emit(found.span, found.attributes)

    def flush(self, invocation_id: Any = None) -> None:
        """Emit what still waits (for one run, or all), without ids."""
        with self._lock:
            keys = [k for k in self._pending if invocation_id is None or k[0] == invocation_id]
            flushed = [p for k in keys for p in self._pending.pop(k)]
            self._count -= len(flushed)
        for pending in flushed:
            self.emit(pending.span, pending.attributes)

    def _pop_oldest(self) -> _Pending | None:
        for key, held in self._pending.items():
            oldest = held.pop(0)
            if not held:
                del self._pending[key]
            self._count -= 1
            return oldest
        return None


class _Pending:
    __slots__ = ("attributes", "calls", "span")

    def __init__(
        self, span: trace.Span, attributes: dict[str, Any], calls: list[dict[str, Any]]
    ) -> None:
        self.span = span
        self.attributes = attributes
        self.calls = calls
