"""The export leg of the provider ADK's server built from ``OTEL_*`` alone.

``adk web``, ``adk api_server`` and ``get_fast_api_app`` build and install a
tracer provider themselves when ``OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT`` is
set, before adk-otel is loaded: a resource from ``OTEL_*`` only (no
``service.instance.id``: every worker looks the same), and the SDK's
``BatchSpanProcessor`` with the SDK's defaults (a 2048-span queue, a 5 s
delay), which counts nothing it drops. That provider also carries ADK's own
processors (its dev UI's trace panel), so adk-otel keeps it and takes over
only its OTLP export: the batch processor is replaced by adk-otel's
:class:`ExportingProcessor` (exporter, queue and timeouts from ``OTEL_*`` as
everywhere else in adk-otel: counted loss, bounded shutdown), and
``service.instance.id`` is added to its resource. Only a provider that looks
exactly like ADK's is touched (the decision and its measurements:
docs/operations.md, "Serving in production"). ``ADK_OTEL_ADOPT_ADK_PROVIDER=false``
leaves it alone.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from .. import settings
from .export import ExportingProcessor, batch_settings
from .instance import give_instance_id
from .otel_env import otlp_exporter_from_env

logger: logging.Logger = logging.getLogger("adk_otel.pipeline")

ADOPT_ENV = settings.ADOPT_ADK_PROVIDER.env[0]
_ADK_SERVER_MODULE = "google.adk.cli.api_server"
_OTLP_EXPORTER_MODULES = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
)
_lock = threading.Lock()


def take_over(provider: Any) -> bool:
    """Replace the OTLP batch processor of ADK's ``OTEL_*``-built provider by
    adk-otel's; True when done (now or before). Never raises."""
    try:
        with _lock:
            return _take_over(provider)
    except Exception:
        logger.warning("adk-otel: taking over the OTLP export failed; left as is", exc_info=True)
        return False


def _take_over(provider: Any) -> bool:
    if not _looks_like_adks(provider):
        return False
    active = provider._active_span_processor
    processors = active._span_processors
    if any(isinstance(p, ExportingProcessor) for p in processors):
        return True
    batches = [p for p in processors if type(p) is BatchSpanProcessor and _exports_otlp(p)]
    if len(batches) != 1 or not settings.load(settings.ADOPT_ADK_PROVIDER, warn=logger.warning):
        return False
    exporter = otlp_exporter_from_env()
    if exporter is None:
        return False  # reported by otlp_exporter_from_env; ADK's export left as it was
    old = batches[0]
    new = ExportingProcessor(exporter, **batch_settings())
    with active._lock:
        active._span_processors = tuple(new if p is old else p for p in processors)
    give_instance_id(provider)  # on the tracers made before too (FastAPI's)
    # What the old processor still holds (usually nothing yet) is sent in the background.
    threading.Thread(target=old.shutdown, name="adk-otel-handover", daemon=True).start()
    logger.info(
        "adk-otel: exporting through adk-otel's pipeline on the tracer provider ADK's "
        "server built from OTEL_* (queue %d spans, loss counted, shutdown bounded; "
        "service.instance.id %s). %s=false leaves ADK's export as it was",
        new.capacity,
        provider.resource.attributes.get("service.instance.id"),
        ADOPT_ENV,
    )
    return True


def _looks_like_adks(provider: Any) -> bool:
    """ADK's server is loaded, an OTLP endpoint is set, and the provider is an
    SDK one whose resource came from ``OTEL_*`` alone (ADK builds it with
    ``OTELResourceDetector``; a provider built in code with the SDK's
    ``Resource.create()`` carries ``telemetry.sdk.*``)."""
    if _ADK_SERVER_MODULE not in sys.modules or type(provider) is not TracerProvider:
        return False
    if settings.found(settings.TRACES_ENDPOINT) is None:
        return False
    if "telemetry.sdk.name" in provider.resource.attributes:
        return False
    active = getattr(provider, "_active_span_processor", None)
    return isinstance(getattr(active, "_span_processors", None), tuple) and hasattr(active, "_lock")


def _exports_otlp(processor: BatchSpanProcessor) -> bool:
    exporter = getattr(getattr(processor, "_batch_processor", None), "_exporter", None)
    return type(exporter).__module__ in _OTLP_EXPORTER_MODULES
