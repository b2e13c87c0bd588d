"""Where spans go: the tracer provider and the ADK-scope policy.

* A provider handed in is used as is.
* Otherwise an SDK provider already installed globally (by the application,
  ``opentelemetry-instrument`` or ``adk web``) is reused, never replaced.
* Otherwise one is built from the standard ``OTEL_*`` environment variables
  (service name, resource attributes, sampler, OTLP endpoint, protocol,
  headers, timeout), exporting over OTLP with a batch processor, and installed
  globally so ADK and other libraries share it.

ADK also emits its own spans (scope ``gcp.vertex.agent``). By default they are
switched off on the provider adk-otel uses, through the SDK's tracer
configurator: ADK then gets non-recording spans that carry the parent context
through, so the tree stays connected with one layer per operation. They are
kept when asked (``keep_adk_spans=True`` or ``ADK_OTEL_KEEP_ADK_SPANS=true``)
and, by default, under ADK's web/API server, whose trace panel is built from
them. Bad configuration is reported with a warning naming the variable; it
never stops the agent.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from .semconv import ADK_SCOPE, INSTRUMENTATION_SCOPE
from .version import __version__

logger = logging.getLogger(__name__)

KEEP_ADK_SPANS_ENV = "ADK_OTEL_KEEP_ADK_SPANS"
PROTOCOLS = ("http/protobuf", "grpc")
DEFAULT_PROTOCOL = "http/protobuf"
_ADK_SERVER_MODULE = "google.adk.cli.api_server"
_SUPPRESSING = "_adk_otel_suppresses_adk_scope"
_build_lock = threading.Lock()


@dataclass(frozen=True)
class TelemetrySettings:
    tracer_provider: trace.TracerProvider | None = None
    keep_adk_spans: bool | None = None


def resolve_tracer(settings: TelemetrySettings) -> trace.Tracer:
    """The tracer adk-otel's spans are made with, pipeline set up if needed."""
    provider = settings.tracer_provider or global_tracer_provider()
    if not keep_adk_spans(settings.keep_adk_spans):
        suppress_adk_spans(provider)
    return provider.get_tracer(INSTRUMENTATION_SCOPE, __version__)


def keep_adk_spans(explicit: bool | None) -> bool:
    if explicit is not None:
        return explicit
    value = os.environ.get(KEEP_ADK_SPANS_ENV, "").strip().lower()
    if value:
        if value in ("1", "true", "yes", "on"):
            return True
        if value not in ("0", "false", "no", "off"):
            logger.warning(
                "adk-otel: %s=%r is not a boolean; ignoring it", KEEP_ADK_SPANS_ENV, value
            )
    return _ADK_SERVER_MODULE in sys.modules


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
        return trace.get_tracer_provider()


def build_tracer_provider(exporter: SpanExporter | None = None) -> TracerProvider:
    """An SDK provider from the environment; the sampler comes from
    ``OTEL_TRACES_SAMPLER``/``_ARG`` through the SDK itself."""
    provider = TracerProvider(resource=Resource.create())
    exporter = exporter if exporter is not None else otlp_exporter_from_env()
    if exporter is not None:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def _env(*names: str) -> tuple[str, str] | None:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return name, value
    return None


def otlp_protocol() -> str:
    found = _env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
    if found is None:
        return DEFAULT_PROTOCOL
    name, value = found
    if value not in PROTOCOLS:
        logger.warning(
            "adk-otel: %s=%r is not supported (use one of %s); using %s",
            name,
            value,
            ", ".join(PROTOCOLS),
            DEFAULT_PROTOCOL,
        )
        return DEFAULT_PROTOCOL
    return value


def endpoint_problem(value: str, protocol: str) -> str | None:
    """Why an OTLP endpoint cannot work, or None when it looks usable."""
    candidate = value if "://" in value or protocol != "grpc" else f"http://{value}"
    try:
        parts = urlsplit(candidate)
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError as exc:
        return str(exc)
    if parts.scheme not in ("http", "https"):
        return "the scheme must be http:// or https://"
    if not parts.hostname:
        return "it has no host"
    return None


def otlp_exporter_from_env() -> SpanExporter | None:
    """The OTLP span exporter ``OTEL_*`` asks for, or None with a warning.

    ``OTEL_TRACES_EXPORTER=none`` turns exporting off; the exporters read
    endpoint, headers, timeout, compression and certificates themselves.
    """
    exporters = os.environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower()
    if exporters == "none":
        return None
    if "otlp" not in exporters.split(","):
        logger.warning(
            "adk-otel: OTEL_TRACES_EXPORTER=%r: only 'otlp' and 'none' are built in; using otlp",
            exporters,
        )
    protocol = otlp_protocol()
    endpoint = _env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
    if endpoint is not None:
        problem = endpoint_problem(endpoint[1], protocol)
        if problem:
            logger.warning(
                "adk-otel: %s=%r is not a usable OTLP endpoint (%s); spans will not be "
                "exported. Example: http://localhost:4318 (http/protobuf) or "
                "http://localhost:4317 (grpc)",
                endpoint[0],
                endpoint[1],
                problem,
            )
            return None
    factory: Callable[[], Any]
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        factory = OTLPSpanExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter as HttpExporter,
        )

        factory = HttpExporter
    try:
        return factory()
    except Exception as exc:
        logger.warning("adk-otel: cannot create the OTLP %s exporter (%s)", protocol, exc)
        return None


def suppress_adk_spans(provider: Any) -> bool:
    """Switch ADK's own spans off on ``provider``; False when it cannot."""
    if getattr(provider, _SUPPRESSING, False):
        return True
    setter = getattr(provider, "_set_tracer_configurator", None)
    try:
        from opentelemetry.sdk.trace import _TracerConfig
    except ImportError:
        setter = None
    if setter is None:
        if isinstance(provider, TracerProvider):
            logger.info(
                "adk-otel: this opentelemetry-sdk cannot switch ADK's own spans off "
                "(needs >= 1.40); both layers will be recorded"
            )
        return False
    previous = getattr(provider, "_tracer_configurator", None)
    disabled = _TracerConfig(is_enabled=False)

    def configurator(scope: Any) -> Any:
        if scope.name == ADK_SCOPE:
            return disabled
        return previous(scope) if previous is not None else _TracerConfig.default()

    setter(tracer_configurator=configurator)
    setattr(provider, _SUPPRESSING, True)
    return True
