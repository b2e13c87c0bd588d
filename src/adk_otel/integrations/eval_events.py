"""The GenAI ``gen_ai.evaluation.result`` event, in the invocation span's context.

The conventions define an evaluation result as an *event* parented to the
operation it judges. ADK scores a case only after all of its invocations ran,
so the invocation span has ended long before: an event can no longer be added
to it. A log record can still carry its context (the logs data model allows
any trace id / span id), so the event is a log record through the Logs API,
with the invocation span's trace context, as the details event is
(``details.py``): on the ``logger_provider`` given, else the global one, else
the one adk-otel built beside its tracer provider.

For backends that read only spans (Jaeger, Tempo), ``as_spans=True`` (or
``ADK_OTEL_EVALUATIONS_AS_SPANS=true``) sends instead one small span per
judged invocation, ``evaluate {eval case id}``, a child of the invocation span
started after the fact, with one ``gen_ai.evaluation.result`` span event per
result (``openinference.span.kind=EVALUATOR``: Arize Phoenix and MLflow, which
take no OTLP logs, show it as an evaluator). That span begins after its parent
ended: OpenTelemetry allows it and the viewers draw it under its parent, but it
is the one adk-otel span that outlives its parent, which is why it is not the
default. With no logger provider at all the span form is used.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry._logs import Logger, SeverityNumber, get_logger_provider

from .. import semconv as sc
from .. import settings
from ..pipeline.provider import TelemetrySettings, built_logger_provider
from ..util.redact import guarded
from ..version import __version__
from .eval_runs import Judged

logger: logging.Logger = guarded(logging.getLogger(__name__))


Record = Mapping[str, Any]
"""One ``gen_ai.evaluation.result`` event's attributes."""


def _real(provider: Any) -> bool:
    return provider is not None and type(provider).__name__ not in (
        "ProxyLoggerProvider",
        "NoOpLoggerProvider",
    )


class Sender:
    """Sends evaluation results, as log records or as spans."""

    def __init__(
        self,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        logger_provider: Any = None,
        spans: bool | None = None,
    ) -> None:
        self._tracer_provider = tracer_provider
        self._logger_provider = logger_provider
        self._spans = settings.load(settings.EVALUATIONS_AS_SPANS, spans, warn=logger.warning)
        self.sent: int = 0

    def _logger(self, settings: TelemetrySettings | None) -> Logger | None:
        given = settings.logger_provider if settings is not None else None
        candidates: list[Any] = [self._logger_provider, given, get_logger_provider()]
        provider = next((p for p in candidates if _real(p)), None)
        if provider is None:
            provider = built_logger_provider()  # built only when needed, and only this once
        if not _real(provider):
            return None
        found: Logger = provider.get_logger(sc.INSTRUMENTATION_SCOPE, __version__)
        return found

    def _tracer(self, settings: TelemetrySettings | None) -> trace.Tracer:
        provider = self._tracer_provider or (
            settings.tracer_provider if settings is not None else None
        )
        return (provider or trace.get_tracer_provider()).get_tracer(
            sc.INSTRUMENTATION_SCOPE, __version__
        )

    def send(self, judged: Judged | None, labels: Record, records: Sequence[Record]) -> None:
        """Send ``records`` (results for one invocation, ``judged``; None when
        adk-otel did not trace it) labelled with ``labels``. Never raises."""
        if not records:
            return
        try:
            settings = judged.settings if judged is not None else None
            log = None if self._spans else self._logger(settings)
            if log is None:
                self._as_span(judged, labels, records, settings)
            else:
                self._as_logs(log, judged, labels, records)
        except Exception:
            logger.warning("adk-otel: sending evaluation results failed", exc_info=True)

    def _as_logs(
        self, log: Logger, judged: Judged | None, labels: Record, records: Sequence[Record]
    ) -> None:
        context = None
        if judged is not None:
            context = trace.set_span_in_context(trace.NonRecordingSpan(judged.span_context))
        for record in records:
            log.emit(
                timestamp=time.time_ns(),
                context=context,
                severity_number=SeverityNumber.INFO,
                event_name=sc.GEN_AI_EVALUATION_RESULT_EVENT,
                attributes={**labels, **record},
            )
            self.sent += 1

    def _as_span(
        self,
        judged: Judged | None,
        labels: Record,
        records: Sequence[Record],
        settings: TelemetrySettings | None,
    ) -> None:
        parent = None
        if judged is not None:
            parent = trace.set_span_in_context(trace.NonRecordingSpan(judged.span_context))
        case = labels.get(sc.ADK_EVAL_CASE_ID)
        name = f"evaluate {case}" if case else "evaluate"
        attributes = {**labels, sc.OPENINFERENCE_SPAN_KIND: sc.OI_EVALUATOR}
        span = self._tracer(settings).start_span(name, context=parent, attributes=attributes)
        try:
            for record in records:
                span.add_event(sc.GEN_AI_EVALUATION_RESULT_EVENT, attributes=dict(record))
                self.sent += 1
            span.set_attribute(sc.ADK_OUTCOME, sc.Outcome.OK.value)
            span.set_status(trace.StatusCode.OK)
        finally:
            span.end()
