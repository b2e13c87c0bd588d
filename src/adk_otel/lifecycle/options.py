"""The plugin's options: kept as given, changed by ``configure()``, and
resolved into the ledger and the values the hooks read.

They are resolved when the ledger is first needed, not when the plugin is
built, so a plugin made at import time still picks up the provider, content
settings and environment the application sets up later; ``configure()``
resolves them again for the spans that follow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from opentelemetry import trace

from ..integrations import devui
from ..ledger.metrics import Instruments, resolve_instruments
from ..ledger.spans import Ledger
from ..pipeline import details, stability
from ..pipeline.details import DetailsLog
from ..pipeline.provider import TelemetrySettings, built_logger_provider, resolve_tracer
from ..pipeline.provider_check import usable
from ..reading import user_id as user_ids
from ..reading.content import ContentCapture, ContentSettings, Redactor
from ..reading.content import resolve as resolve_content

_T = TypeVar("_T")


def given(value: _T | None, current: _T) -> _T:
    """``value``, or ``current`` when ``value`` is ``None`` (not given)."""
    return current if value is None else value


def telemetry(
    current: TelemetrySettings,
    tracer_provider: trace.TracerProvider | None,
    keep_adk_spans: bool | None,
    meter_provider: Any,
    logger_provider: Any,
    details_as_span_event: bool | None,
) -> TelemetrySettings:
    """``current`` with the options given (``None`` keeps one as it is); a
    provider that cannot be used counts as not given (pipeline/provider_check.py)."""
    return TelemetrySettings(
        tracer_provider=given(usable("tracer_provider", tracer_provider), current.tracer_provider),
        keep_adk_spans=given(keep_adk_spans, current.keep_adk_spans),
        meter_provider=given(usable("meter_provider", meter_provider), current.meter_provider),
        logger_provider=given(usable("logger_provider", logger_provider), current.logger_provider),
        details_as_span_event=given(details_as_span_event, current.details_as_span_event),
    )


def content(
    current: ContentSettings,
    capture: bool | str | None,
    max_length: int | None,
    redact: Redactor | None,
) -> ContentSettings:
    """``current`` with the content options given (``None`` keeps one)."""
    return ContentSettings(
        given(capture, current.capture),
        given(max_length, current.max_length),
        given(redact, current.redact),
    )


@dataclass(frozen=True, slots=True)
class Resolved:
    """The options resolved against the environment."""

    content: ContentCapture | None
    """Active content policy; None (content capture off) skips all content work."""
    user_id: user_ids.UserIdMode
    """How invocation spans carry the user id (reading/user_id.py)."""
    latest: bool
    """``OTEL_SEMCONV_STABILITY_OPT_IN`` asks for the latest GenAI conventions."""
    tracer: trace.Tracer
    instruments: Instruments | None


def resolve(
    settings: TelemetrySettings, content_settings: ContentSettings, user_id: str | None
) -> Resolved:
    """Resolve the options now: the tracer (the pipeline set up if needed),
    the metric instruments and the values the hooks read."""
    capture = resolve_content(content_settings)
    user_id_mode = user_ids.resolve(user_id)
    latest = stability.latest_gen_ai()
    return Resolved(
        capture,
        user_id_mode,
        latest,
        resolve_tracer(settings),
        resolve_instruments(settings.meter_provider, latest=latest),
    )


def provider(settings: TelemetrySettings) -> trace.TracerProvider:
    """The tracer provider spans go to: the one given, else the global one."""
    return settings.tracer_provider or trace.get_tracer_provider()


def dev_ui(settings: TelemetrySettings, current: devui.DevUi | None) -> devui.DevUi | None:
    """The dev UI wiring when ADK's dev server reads this provider's spans
    (integrations/devui.py), else None; what waited on a wiring no longer needed ends."""
    if not devui.served(provider(settings)):
        if current is not None:
            current.release_under(None)  # no dev UI any more: end what waits
        return None
    return current if current is not None else devui.DevUi(Ledger.annotate)


def details_log(capture: ContentCapture | None, settings: TelemetrySettings) -> DetailsLog | None:
    """Where model calls' details events go as log records; None when
    content capture has no EVENT mode, or they go as span events."""
    if capture is None or not capture.on_event:
        return None
    if details.as_span_event(settings.details_as_span_event):
        return None
    log = details.resolve_logger(settings.logger_provider, built_logger_provider())
    return DetailsLog(log) if log is not None else None
