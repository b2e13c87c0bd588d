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

The batch processor adk-otel builds is the SDK's own ``BatchSpanProcessor``
with adk-otel's defaults for the ``OTEL_BSP_*`` settings left unset (a larger
queue, a shorter schedule delay) and two additions (:class:`ExportingProcessor`):
spans it could not deliver are counted and reported in a warning (never
silently lost), and shutdown waits for the final export for a bounded time,
so a process exits within seconds even when the collector is down or hangs.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider, sampling
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

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
    meter_provider: Any = None
    """Where metrics go (see ``metrics.py``); None: the global meter provider."""


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
    """An SDK provider from the environment (sampler from ``OTEL_TRACES_SAMPLER``
    / ``_ARG``), exporting through an :class:`ExportingProcessor`."""
    provider = TracerProvider(resource=Resource.create(), sampler=sampler_from_env())
    exporter = exporter if exporter is not None else otlp_exporter_from_env()
    if exporter is not None:
        provider.add_span_processor(ExportingProcessor(exporter, **batch_settings()))
    return provider


def exporting_processor(provider: Any) -> ExportingProcessor | None:
    """The :class:`ExportingProcessor` of a provider built here, if any."""
    active = getattr(provider, "_active_span_processor", None)
    for processor in getattr(active, "_span_processors", ()):
        if isinstance(processor, ExportingProcessor):
            return processor
    return None


# -- sampler -------------------------------------------------------------------

_SAMPLERS = (
    "always_on",
    "always_off",
    "traceidratio",
    "parentbased_always_on",
    "parentbased_always_off",
    "parentbased_traceidratio",
)
_DEFAULT_SAMPLER = "parentbased_always_on"


def sampler_from_env() -> sampling.Sampler | None:
    """The sampler ``OTEL_TRACES_SAMPLER`` / ``OTEL_TRACES_SAMPLER_ARG`` ask
    for; None (the SDK's default) when unset. A bad value is reported with a
    warning naming the variable, never raised."""
    name = os.environ.get("OTEL_TRACES_SAMPLER", "").strip().lower()
    if not name:
        return None
    if name not in _SAMPLERS:
        logger.warning(
            "adk-otel: OTEL_TRACES_SAMPLER=%r is not a sampler this SDK knows (use one of "
            "%s); using %s",
            name,
            ", ".join(_SAMPLERS),
            _DEFAULT_SAMPLER,
        )
        name = _DEFAULT_SAMPLER
    if name.endswith("traceidratio"):
        ratio: sampling.Sampler = sampling.TraceIdRatioBased(_sampler_ratio())
        return sampling.ParentBased(ratio) if name.startswith("parentbased") else ratio
    base = sampling.ALWAYS_OFF if name.endswith("always_off") else sampling.ALWAYS_ON
    return sampling.ParentBased(base) if name.startswith("parentbased") else base


def _sampler_ratio() -> float:
    raw = os.environ.get("OTEL_TRACES_SAMPLER_ARG", "").strip()
    if not raw:
        return 1.0
    try:
        ratio = float(raw)
    except ValueError:
        ratio = -1.0
    if not 0.0 <= ratio <= 1.0:
        logger.warning(
            "adk-otel: OTEL_TRACES_SAMPLER_ARG=%r is not a sampling ratio between 0 and 1 "
            "(e.g. 0.25); sampling everything (1.0)",
            raw,
        )
        return 1.0
    return ratio


# -- batch processor -------------------------------------------------------------

BSP_DEFAULTS = {
    "OTEL_BSP_MAX_QUEUE_SIZE": 8192,
    "OTEL_BSP_SCHEDULE_DELAY": 1000,
    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": 512,
    "OTEL_BSP_EXPORT_TIMEOUT": 5000,
}
"""adk-otel's values where the variable is unset (the SDK's: 2048 spans, 5000 ms,
512 spans, 30000 ms). The queue holds about 3 s of a busy agent process's
spans (350 three-agent invocations a second) so a starved export thread drops
nothing; the export timeout bounds the final flush at shutdown (ms)."""
DROP_REPORT_INTERVAL = 60.0
"""Seconds between two warnings that count spans dropped from a full queue."""


def batch_settings() -> dict[str, Any]:
    """Batch processor settings: each ``OTEL_BSP_*`` variable if valid, else
    adk-otel's default (a bad value is reported, naming the variable)."""
    values = {name: _positive_int(name, default) for name, default in BSP_DEFAULTS.items()}
    queue = values["OTEL_BSP_MAX_QUEUE_SIZE"]
    batch = values["OTEL_BSP_MAX_EXPORT_BATCH_SIZE"]
    if batch > queue:
        logger.warning(
            "adk-otel: OTEL_BSP_MAX_EXPORT_BATCH_SIZE=%d is larger than the queue "
            "(OTEL_BSP_MAX_QUEUE_SIZE=%d); using %d",
            batch,
            queue,
            queue,
        )
        batch = queue
    return {
        "max_queue_size": queue,
        "schedule_delay_millis": values["OTEL_BSP_SCHEDULE_DELAY"],
        "max_export_batch_size": batch,
        "shutdown_timeout": values["OTEL_BSP_EXPORT_TIMEOUT"] / 1000,
    }


def _positive_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        logger.warning("adk-otel: %s=%r is not a positive integer; using %d", name, raw, default)
        return default
    return value


class _Muting(logging.Filter):
    """Holds back the OpenTelemetry exporters' own warnings while adk-otel
    exports (one retry warning per attempt, per batch, would flood the log);
    adk-otel reports the first failure and the counts itself."""

    def __init__(self) -> None:
        super().__init__()
        self._local = threading.local()

    @contextlib.contextmanager
    def active(self, watch: _ExportWatch | None = None) -> Iterator[None]:
        local = self._local
        previous = getattr(local, "watch", False)
        local.watch = watch
        try:
            yield
        finally:
            local.watch = previous

    def filter(self, record: logging.LogRecord) -> bool:
        watch = getattr(self._local, "watch", False)
        if watch is False or record.levelno < logging.WARNING:
            return True
        if watch is not None:
            watch.trouble(record)
        return False


_MUTING = _Muting()
_MUTED_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.grpc.exporter",
    "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
    "opentelemetry.sdk._shared_internal",
    "opentelemetry.util.re",
)


def _install_muting() -> None:
    for name in _MUTED_LOGGERS:
        target = logging.getLogger(name)
        if _MUTING not in target.filters:
            target.addFilter(_MUTING)


class _ExportWatch(SpanExporter):
    """Wraps the real exporter: counts what was handed over, delivered and
    lost; warns once when exporting starts failing and once when it works
    again; can abort a retrying export at shutdown."""

    def __init__(self, exporter: SpanExporter) -> None:
        self.exporter = exporter
        self.destination = str(getattr(exporter, "_endpoint", "") or type(exporter).__name__)
        self.handed = 0
        self.exported = 0
        self.failed = 0
        self.failing = False
        self.problem = ""
        self._first_problem = ""
        self.closing = False
        self.aborted = False
        self._streak = (0, 0)  # (batches, spans) lost since exporting last worked
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        count = len(spans)
        with self._lock:
            self.handed += count
        if self.aborted:
            self._failed(count, self.problem or "shutdown ended the export")
            return SpanExportResult.FAILURE
        problem = self._first_problem = ""
        try:
            with _MUTING.active(self):
                result = self.exporter.export(spans)
        except Exception as exc:
            result, problem = SpanExportResult.FAILURE, f"{type(exc).__name__}: {exc}"
        if result is SpanExportResult.SUCCESS:
            with self._lock:
                self.exported += count
                batches, lost = self._streak
                self._streak = (0, 0)
                self.failing = False
            if batches and not self.closing:
                logger.warning(
                    "adk-otel: exporting spans to %s works again; %d span(s) in %d batch(es) "
                    "were lost while it failed",
                    self.destination,
                    lost,
                    batches,
                )
        else:
            self._failed(count, problem or self._first_problem or "the exporter reported a failure")
        return result

    def trouble(self, record: logging.LogRecord) -> None:
        """The wrapped exporter logged a problem (its retry or failure notice)."""
        if not self._first_problem and not self.aborted:
            with contextlib.suppress(Exception):
                self._first_problem = record.getMessage()
        if self.closing:
            self.abort()  # at shutdown, the first sign of trouble ends the flush

    def _failed(self, count: int, problem: str) -> None:
        with self._lock:
            self.failed += count
            self.problem = problem
            first = not self.failing
            self.failing = True
            batches, lost = self._streak
            self._streak = (batches + 1, lost + count)
        if first and not self.closing:
            logger.warning(
                "adk-otel: could not export %d span(s) to %s (%s). Agent runs are not "
                "affected; spans are lost until the collector can be reached. Further "
                "failures are counted, not logged; a count follows when exporting works "
                "again and at shutdown",
                count,
                self.destination,
                problem,
            )

    def abort(self) -> None:
        """Stop retrying: the export in progress ends, later ones fail at once."""
        if self.aborted:
            return
        self.aborted = True
        with _MUTING.active(None), contextlib.suppress(Exception):
            self.exporter.shutdown()

    def shutdown(self) -> None:
        if not self.aborted:
            self.aborted = True
            with _MUTING.active(None):
                self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.exporter.force_flush(timeout_millis)


class ExportingProcessor(BatchSpanProcessor):
    """The SDK's ``BatchSpanProcessor`` (same queue, thread and batching), plus:

    * spans dropped because the queue was full, spans the exporter failed to
      deliver, and spans still queued when shutdown gave up are counted
      (``dropped``, ``failed``, ``unsent``) and reported with a warning: at the
      first drop, at most once a minute while dropping, and at shutdown;
    * ``shutdown()`` waits at most ``shutdown_timeout`` seconds for the final
      export, and not at all once exporting is known to fail, then abandons
      it, so a process exits promptly with its collector down or hanging.
    """

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        max_queue_size: int,
        schedule_delay_millis: float,
        max_export_batch_size: int,
        shutdown_timeout: float,
    ) -> None:
        _install_muting()
        self._watch = _ExportWatch(exporter)
        super().__init__(
            self._watch,
            max_queue_size=max_queue_size,
            schedule_delay_millis=schedule_delay_millis,
            max_export_batch_size=max_export_batch_size,
        )
        self.capacity = max_queue_size
        self.shutdown_timeout = shutdown_timeout
        self.ended = 0
        self.dropped = 0
        self._next_report = 0.0
        self._closed = False
        self._lock = threading.Lock()
        # The SDK drops a span when its queue is full; seeing the queue lets
        # each drop be counted as it happens (else: counted at shutdown).
        queue = getattr(getattr(self, "_batch_processor", None), "_queue", None)
        self._queue = queue if isinstance(queue, collections.deque) else None

    @property
    def exporter(self) -> SpanExporter:
        return self._watch.exporter

    @property
    def exported(self) -> int:
        return self._watch.exported

    @property
    def failed(self) -> int:
        return self._watch.failed

    @property
    def unsent(self) -> int:
        """Spans neither dropped nor through an export yet: queued, or being
        exported (after shutdown: abandoned when it stopped waiting)."""
        return max(0, self.ended - self.dropped - self.exported - self.failed)

    @property
    def lost(self) -> int:
        return self.dropped + self.failed + (self.unsent if self._closed else 0)

    def on_end(self, span: ReadableSpan) -> None:
        context = span.context
        if context is None or not context.trace_flags.sampled:
            return
        queue = self._queue
        full = queue is not None and len(queue) >= self.capacity
        with self._lock:
            self.ended += 1
            if full:
                self.dropped += 1
        if not full:
            super().on_end(span)
            return
        with _MUTING.active():  # the SDK's "Queue full" line carries no count
            super().on_end(span)
        now = time.monotonic()
        if now < self._next_report:
            return
        self._next_report = now + DROP_REPORT_INTERVAL
        if self.dropped == 1:
            logger.warning(
                "adk-otel: the span export queue is full (%d spans), spans are being dropped: "
                "export cannot keep up with %s. Raise OTEL_BSP_MAX_QUEUE_SIZE for bursts; "
                "check the collector if it persists. Counts follow each minute while "
                "dropping, and at exit",
                self.capacity,
                self._watch.destination,
            )
        else:
            logger.warning(
                "adk-otel: %d span(s) dropped so far (span export queue full, %d spans)",
                self.dropped,
                self.capacity,
            )

    def shutdown(self) -> None:
        if self._closed:
            return
        watch = self._watch
        watch.closing = True
        if watch.failing:
            watch.abort()  # exporting fails: do not wait for retries at exit
        inner = getattr(self, "_batch_processor", None)
        try:
            try:
                # Waits for the export thread at most this long, then gives up.
                inner.shutdown(timeout_millis=self.shutdown_timeout * 1000)  # type: ignore[union-attr]
            except (AttributeError, TypeError):
                timer = threading.Timer(self.shutdown_timeout, watch.abort)
                timer.daemon = True
                with contextlib.suppress(RuntimeError):
                    timer.start()
                super().shutdown()
                timer.cancel()
        finally:
            watch.abort()
            self._closed = True
            self._report()

    def _report(self) -> None:
        parts = []
        if self.dropped:
            parts.append(f"{self.dropped} dropped because the export queue was full")
        if self.failed:
            parts.append(f"{self.failed} failed to export (exporter: {self._watch.problem})")
        if self.unsent:
            parts.append(
                f"{self.unsent} still being exported when shutdown stopped waiting "
                f"after {self.shutdown_timeout:g} s (OTEL_BSP_EXPORT_TIMEOUT)"
            )
        if parts:
            logger.warning(
                "adk-otel: %d of %d span(s) were not exported to %s: %s",
                self.lost,
                self.ended,
                self._watch.destination,
                "; ".join(parts),
            )


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
    _check_headers()
    options = _checked_exporter_options()
    factory: Callable[..., Any]
    if protocol == "grpc":
        from grpc import Compression as GrpcCompression
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        factory = OTLPSpanExporter
        if options.pop("compression", None) is not None:
            options["compression"] = GrpcCompression.NoCompression
    else:
        from opentelemetry.exporter.otlp.proto.http import Compression as HttpCompression
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter as HttpExporter,
        )

        factory = HttpExporter
        if options.pop("compression", None) is not None:
            options["compression"] = HttpCompression.NoCompression
    try:
        with _MUTING.active():  # header problems were reported above, without values
            return factory(**options)
    except Exception as exc:
        logger.warning(
            "adk-otel: cannot create the OTLP %s exporter from the OTEL_EXPORTER_OTLP_* "
            "settings (%s: %s); spans will not be exported",
            protocol,
            type(exc).__name__,
            exc,
        )
        return None


# Header names: an HTTP token; values: printable ASCII (spaces allowed),
# without "," (the separator). Anything else must be URL-encoded (%XX).
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE = re.compile(r"[\x20-\x7e]*")


def _check_headers() -> None:
    """Report ``OTEL_EXPORTER_OTLP_(TRACES_)HEADERS`` entries the exporter will
    ignore or choke on. Values are never logged: they often hold credentials."""
    found = _env("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
    if found is None:
        return
    name, value = found
    _install_muting()
    problems = []
    entries = [e.strip() for e in value.split(",")]
    for number, entry in enumerate(entries, 1):
        if not entry:
            continue
        key, sep, val = entry.partition("=")
        key = key.strip()
        if not sep or not key:
            problems.append(f"entry {number} is not name=value")
        elif not _HEADER_NAME.fullmatch(key):
            problems.append(f"header name {key!r} has characters not allowed in a header name")
        elif not _HEADER_VALUE.fullmatch(val.strip()):
            problems.append(f"the value of {key!r} must be URL-encoded (%XX)")
    if problems:
        logger.warning(
            "adk-otel: %s: %s; those entries are ignored. Expected: "
            "name1=value1,name2=value2 (values URL-encoded)",
            name,
            "; ".join(problems),
        )


def _checked_exporter_options() -> dict[str, Any]:
    """Timeout and compression, which the exporters would fail on with a
    message naming neither variable: reported here, replaced by defaults
    (``{"timeout": 10.0}``, ``{"compression": "none"}``) passed explicitly."""
    options: dict[str, Any] = {}
    found = _env("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")
    if found is not None:
        try:
            usable = float(found[1]) > 0
        except ValueError:
            usable = False
        if not usable:
            logger.warning("adk-otel: %s=%r is not a positive number of seconds; using 10", *found)
            options["timeout"] = 10.0
    found = _env("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION")
    if found is not None and found[1].lower() not in ("none", "gzip", "deflate"):
        logger.warning("adk-otel: %s=%r is not one of none, gzip, deflate; using none", *found)
        options["compression"] = "none"
    return options


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
