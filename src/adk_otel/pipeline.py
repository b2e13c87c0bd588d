"""Where spans go: the tracer provider and the ADK-scope policy.

* A provider handed in is used as is.
* Otherwise an SDK provider already installed globally (by the application,
  ``opentelemetry-instrument`` or ``adk web``) is reused, never replaced (the
  one ADK's server built from ``OTEL_*`` alone has its OTLP export taken over
  by adk-otel's processor: ``adopt.py``).
* Otherwise one is built from the standard ``OTEL_*`` environment variables
  (service name, resource attributes, sampler, OTLP endpoint, protocol,
  headers, timeout), with a random ``service.instance.id`` unless one is set,
  exporting over OTLP with a batch processor, and installed globally so ADK
  and other libraries share it.

ADK also emits its own spans (scope ``gcp.vertex.agent``). By default they are
switched off on the provider adk-otel uses, through the SDK's tracer
configurator: ADK then gets non-recording spans that carry the parent context
through, so the tree stays connected with one layer per operation. They are
kept only when asked (``keep_adk_spans=True`` or ``ADK_OTEL_KEEP_ADK_SPANS=true``),
under ADK's web/API server too: its dev UI is drawn from adk-otel's spans
there (``devui.py``). The A2A SDK's internal spans (scope ``a2a-python-sdk``, dozens per
remote call) are switched off the same way unless ``ADK_OTEL_KEEP_A2A_SPANS=true``.
Bad configuration is reported with a warning naming the variable; it
never stops the agent (``otel_env.py``). The batch processor is described in
``export.py``.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk._logs import LogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter

from . import adk_scope, adopt, env
from .export import ExportingProcessor, batch_settings
from .instance import with_instance_id
from .otel_env import (
    console_exporter_from_env,
    otlp_exporter_from_env,
    otlp_log_exporter_from_env,
    sampler_from_env,
)
from .redact import guarded
from .semconv import A2A_SDK_SCOPE, ADK_SCOPE, INSTRUMENTATION_SCOPE
from .version import __version__

logger: logging.Logger = guarded(logging.getLogger(__name__))

KEEP_ADK_SPANS_ENV = "ADK_OTEL_KEEP_ADK_SPANS"
KEEP_A2A_SPANS_ENV = "ADK_OTEL_KEEP_A2A_SPANS"
_SUPPRESSING = "_adk_otel_suppresses_adk_scope"
_build_lock = threading.Lock()
_built: dict[str, Any] = {}
"""The tracer provider adk-otel built and installed (``tracer``), and the
logger provider it built beside it when first needed (``logger``)."""
_unswitchable: set[int] = set()
"""Providers already warned about: their SDK cannot switch a scope off."""


@dataclass(frozen=True)
class TelemetrySettings:
    tracer_provider: trace.TracerProvider | None = None
    keep_adk_spans: bool | None = None
    meter_provider: Any = None
    """Where metrics go (see ``metrics.py``); None: the global meter provider."""
    logger_provider: Any = None
    """Where the details event goes as a log record (see ``details.py``)."""
    details_as_span_event: bool | None = None


def resolve_tracer(settings: TelemetrySettings) -> trace.Tracer:
    """The tracer adk-otel's spans are made with, pipeline set up if needed."""
    provider = settings.tracer_provider or global_tracer_provider()
    if settings.tracer_provider is None:
        adopt.take_over(provider)  # ADK's server built it from OTEL_* alone (adopt.py)
    if not keep_adk_spans(settings.keep_adk_spans):
        suppress_adk_spans(provider)
    elif adk_scope.switch_on(
        provider, "tracer", scopes=frozenset({ADK_SCOPE}), marker=_SUPPRESSING
    ):
        # Asked to keep them on a provider where an earlier default switched them off.
        logger.info("adk-otel: ADK's own spans switched back on for this provider")
    if not env.flag(KEEP_A2A_SPANS_ENV, logger.warning):
        suppress_scopes(provider, frozenset({A2A_SDK_SCOPE}))
    return provider.get_tracer(INSTRUMENTATION_SCOPE, __version__)


def keep_adk_spans(explicit: bool | None) -> bool:
    """The argument, else ``ADK_OTEL_KEEP_ADK_SPANS`` (true or false), else
    off: one span per operation on every path, ``adk web`` included."""
    if explicit is not None:
        return explicit
    return env.flag(KEEP_ADK_SPANS_ENV, logger.warning) is True


def global_tracer_provider() -> trace.TracerProvider:
    """The global provider; built from ``OTEL_*`` and installed if none is set."""
    with _build_lock:
        current = trace.get_tracer_provider()
        if not isinstance(current, trace.ProxyTracerProvider):
            return current
        if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
            return trace.NoOpTracerProvider()
        provider = build_tracer_provider()
        trace.set_tracer_provider(provider)
        _built["tracer"] = provider
        return trace.get_tracer_provider()


def built_logger_provider() -> Any:
    """A logger provider exporting over OTLP (``OTEL_EXPORTER_OTLP_*``, as the
    spans), built and installed globally when adk-otel built the tracer
    provider itself and no global logger provider is set; else None."""
    with _build_lock:
        if "logger" in _built or "tracer" not in _built:
            return _built.get("logger")
        from opentelemetry._logs import get_logger_provider, set_logger_provider
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

        provider = LoggerProvider(resource=_built["tracer"].resource)
        exporter = otlp_log_exporter_from_env()
        if exporter is not None:
            provider.add_log_record_processor(
                _WithoutScope(BatchLogRecordProcessor(exporter), ADK_SCOPE)
            )
        set_logger_provider(provider)
        _built["logger"] = get_logger_provider()
        return _built["logger"]


def build_tracer_provider(exporter: SpanExporter | None = None) -> TracerProvider:
    """An SDK provider from the environment (sampler from ``OTEL_TRACES_SAMPLER``
    / ``_ARG``), exporting through an :class:`ExportingProcessor`."""
    provider = TracerProvider(
        resource=with_instance_id(Resource.create()), sampler=sampler_from_env()
    )
    if exporter is None:
        console = console_exporter_from_env()  # OTEL_TRACES_EXPORTER=otlp,console
        if console is not None:
            provider.add_span_processor(SimpleSpanProcessor(console))
        exporter = otlp_exporter_from_env()
    if exporter is not None:
        provider.add_span_processor(ExportingProcessor(exporter, **batch_settings()))
    return provider


class _WithoutScope(LogRecordProcessor):
    """A log record processor passing on every record except one scope's:
    ADK's own log events (scope ``gcp.vertex.agent``), which repeat the
    details event, never went anywhere before this provider existed."""

    def __init__(self, inner: Any, scope: str) -> None:
        self._inner = inner
        self._scope = scope

    def on_emit(self, log_record: Any) -> None:
        scope = getattr(log_record, "instrumentation_scope", None)
        if getattr(scope, "name", None) != self._scope:
            self._inner.on_emit(log_record)

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return bool(self._inner.force_flush(timeout_millis))


def exporting_processor(provider: Any) -> ExportingProcessor | None:
    """The :class:`ExportingProcessor` of a provider built here, if any."""
    active = getattr(provider, "_active_span_processor", None)
    for processor in getattr(active, "_span_processors", ()):
        if isinstance(processor, ExportingProcessor):
            return processor
    return None


def suppress_adk_spans(provider: Any) -> bool:
    """Switch ADK's own spans off on ``provider``; False when it cannot."""
    return suppress_scopes(provider, frozenset({ADK_SCOPE}))


def suppress_scopes(provider: Any, scopes: frozenset[str]) -> bool:
    """Switch the spans of ``scopes`` off on ``provider``; False when it cannot."""
    try:
        from opentelemetry.sdk.trace import _TracerConfig
    except ImportError:
        switched = False
    else:
        switched = adk_scope.switch_off(
            provider,
            "tracer",
            scopes=scopes,
            disabled=_TracerConfig(is_enabled=False),
            default=_TracerConfig.default,
            marker=_SUPPRESSING,
        )
    if not switched and isinstance(provider, TracerProvider) and id(provider) not in _unswitchable:
        _unswitchable.add(id(provider))
        what = (
            "ADK's own spans"
            if scopes == {ADK_SCOPE}
            else "the spans of " + ", ".join(sorted(scopes))
        )
        logger.warning(
            "adk-otel: this opentelemetry-sdk (%s) cannot switch %s off: its tracer "
            "configurator (_set_tracer_configurator, _TracerConfig: an experimental API, "
            "in 1.40 to 1.44 at least) is missing or refused; they will be recorded "
            "alongside adk-otel's spans",
            _sdk_version(),
            what,
        )
    return switched


def _sdk_version() -> str:
    try:
        from importlib.metadata import version

        return version("opentelemetry-sdk")
    except Exception:
        return "unknown version"
