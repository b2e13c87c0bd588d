"""The batch processor adk-otel builds: spans are never lost silently, and
shutdown is bounded.

It is the SDK's own ``BatchSpanProcessor`` with adk-otel's defaults for the
``OTEL_BSP_*`` settings left unset (a larger queue, a shorter schedule delay)
and two additions (:class:`ExportingProcessor`): spans it could not deliver
are counted and reported in a warning, and shutdown waits for the final
export for a bounded time, so a process exits within seconds even when the
collector is down or hangs. See docs/operations.md.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import re
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from .. import settings
from ..util.redact import guarded, redact_text
from .span_repair import repair_batch

# One logger for everything on the export path, as documented (docs/operations.md).
logger: logging.Logger = guarded(logging.getLogger("adk_otel.pipeline"))

BATCH_SETTINGS = (
    settings.BSP_MAX_QUEUE_SIZE,
    settings.BSP_SCHEDULE_DELAY,
    settings.BSP_MAX_EXPORT_BATCH_SIZE,
    settings.BSP_EXPORT_TIMEOUT,
)
"""The batch processor's settings (declared in settings.py). adk-otel's defaults
differ from the SDK's (2048 spans, 5000 ms, 512 spans, 30000 ms): the queue holds
seconds of a busy agent process's spans, so an export thread starved for a while
drops nothing (benchmarks/README.md, "Export under load"); the export timeout
bounds the final flush at shutdown (ms). Each has a largest value: beyond it the
SDK's queue or timers fail (a deque or wait too large for the platform) or a
shutdown never ends. docs/operations.md lists them."""
DROP_REPORT_INTERVAL = 60.0
"""Seconds between two warnings that count spans dropped from a full queue."""
NO_COLLECTOR_ADVICE = (
    "nothing is listening there: start a collector (docker compose up -d, docs/collector.md), "
    "or keep the spans in a file the adk-otel commands read "
    "(OTEL_TRACES_EXPORTER=otlp_json_file, written to adk-otel-traces.jsonl), "
    "or turn export off (OTEL_TRACES_EXPORTER=none)"
)
"""What to do when the collector's port refuses connections: said with the
first failure and at shutdown, in place of the exporter's retry note."""
_RETRY_NOTE = re.compile(r",? *retrying in [0-9.]+ ?s\.?", re.IGNORECASE)
_REFUSED = re.compile(
    r"connection refused|failed to connect|connect failed|StatusCode\.UNAVAILABLE", re.IGNORECASE
)


def plain_problem(problem: str) -> str:
    """An exporter's failure as a user reads it: a refused connection said
    with what to do instead, any other problem without the exporter's retry
    note (by the time anyone reads it, the retry is over)."""
    if _REFUSED.search(problem):
        return f"the collector cannot be reached (connection refused); {NO_COLLECTOR_ADVICE}"
    return _RETRY_NOTE.sub("", problem).strip()


def batch_settings() -> dict[str, Any]:
    """Batch processor settings: each ``OTEL_BSP_*`` variable if valid, else
    adk-otel's default (a bad value is reported, naming the variable)."""
    values = {
        setting.env[0]: settings.load(setting, warn=logger.warning) for setting in BATCH_SETTINGS
    }
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

    def holding_back(self) -> bool:
        """True while this thread runs code whose SDK warnings adk-otel reports itself."""
        return getattr(self._local, "watch", False) is not False

    def filter(self, record: logging.LogRecord) -> bool:
        watch = getattr(self._local, "watch", False)
        if watch is False or record.levelno < logging.WARNING:
            return True
        if isinstance(watch, _ExportWatch):
            watch.trouble(record)
        return False


MUTING = _Muting()
_MUTED_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.grpc.exporter",
    "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
    "opentelemetry.sdk._shared_internal",
    "opentelemetry.util.re",
)


def install_muting() -> None:
    for name in _MUTED_LOGGERS:
        target = logging.getLogger(name)
        if MUTING not in target.filters:
            target.addFilter(MUTING)


class _ExportWatch(SpanExporter):
    """Wraps the real exporter: counts what was handed over, delivered and
    lost; warns once when exporting starts failing and once when it works
    again; can abort a retrying export at shutdown."""

    def __init__(self, exporter: SpanExporter) -> None:
        self.exporter = exporter
        self.destination = redact_text(
            str(getattr(exporter, "_endpoint", "") or type(exporter).__name__)
        )
        self.handed = 0
        self.exported = 0
        self.failed = 0
        self.repaired = 0
        """Spans whose text could not be encoded, repaired and exported (span_repair.py)."""
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
            spans, repaired = repair_batch(spans)
            if repaired:
                self._repaired(repaired)
            with MUTING.active(self):
                result = self.exporter.export(spans)
        except (UnicodeError, ValueError, TypeError) as exc:
            # Raised before anything was sent: this batch cannot be encoded,
            # whatever the collector's state.
            result = SpanExportResult.FAILURE
            problem = f"the batch could not be encoded ({type(exc).__name__}: {exc})"
        except Exception as exc:
            result = SpanExportResult.FAILURE
            problem = plain_problem(f"{type(exc).__name__}: {exc}")
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

    def _repaired(self, count: int) -> None:
        with self._lock:
            self.repaired += count
            first = self.repaired == count
        if first:
            logger.warning(
                "adk-otel: %d span(s) carried text that is not valid UTF-8 (such as a lone "
                "surrogate from an undecodable file name); the characters were escaped and "
                "the spans exported with the rest of their batch. Later ones are counted "
                "and reported at exit",
                count,
            )

    @property
    def troubled(self) -> bool:
        """The export in progress has reported a problem (it is retrying)."""
        return bool(self._first_problem)

    def trouble(self, record: logging.LogRecord) -> None:
        """The wrapped exporter logged a problem (its retry or failure notice)."""
        if not self._first_problem and not self.aborted:
            with contextlib.suppress(Exception):
                self._first_problem = plain_problem(record.getMessage())
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
            cause = (
                "this batch is lost; the collector is not the cause"
                if problem.startswith("the batch could not be encoded")
                else "spans are lost until the collector can be reached"
            )
            logger.warning(
                "adk-otel: could not export %d span(s) to %s (%s). Agent runs are not "
                "affected; %s. Further failures are counted, not logged; a count follows "
                "when exporting works again and at shutdown",
                count,
                self.destination,
                problem,
                cause,
            )

    def abort(self) -> None:
        """Stop retrying: the export in progress ends, later ones fail at once."""
        if self.aborted:
            return
        self.aborted = True
        with MUTING.active(None), contextlib.suppress(Exception):
            self.exporter.shutdown()

    def shutdown(self) -> None:
        if not self.aborted:
            self.aborted = True
            with MUTING.active(None):
                self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.exporter.force_flush(timeout_millis)

    def count_afresh(self) -> None:
        """Zero every count (in a forked child: what the parent handled is its own)."""
        self._lock = threading.Lock()
        self.handed = self.exported = self.failed = self.repaired = 0
        self.failing, self.problem, self._streak = False, "", (0, 0)


def _forked(ref: weakref.ref[ExportingProcessor]) -> None:
    processor = ref()
    if processor is not None:
        processor.count_afresh()


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
        install_muting()
        self._watch = _ExportWatch(exporter)
        super().__init__(
            self._watch,
            max_queue_size=max_queue_size,
            schedule_delay_millis=schedule_delay_millis,
            max_export_batch_size=max_export_batch_size,
            # Given, so the SDK does not read OTEL_BSP_EXPORT_TIMEOUT a second time
            # (a bad value would be reported twice, once with a traceback).
            export_timeout_millis=shutdown_timeout * 1000,
        )
        self.capacity = max_queue_size
        self.shutdown_timeout = shutdown_timeout
        self.ended: int = 0
        self.dropped: int = 0
        self._next_report = 0.0
        self._closed = False
        self._lock = threading.Lock()
        # The SDK drops a span when its queue is full; seeing the queue lets
        # each drop be counted as it happens (else: counted at shutdown).
        queue = getattr(getattr(self, "_batch_processor", None), "_queue", None)
        self._queue = queue if isinstance(queue, collections.deque) else None
        if hasattr(os, "register_at_fork"):
            # A forked child (gunicorn --preload) starts with an empty queue (the
            # SDK re-creates it); it must not inherit the parent's counts either,
            # or it reports as lost spans the parent exported.
            this = weakref.ref(self)
            os.register_at_fork(after_in_child=lambda: _forked(this))

    def count_afresh(self) -> None:
        """Zero every count (in a forked child: what the parent handled is its own)."""
        self._lock = threading.Lock()
        self.ended = self.dropped = 0
        self._next_report = 0.0
        self._watch.count_afresh()

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
    def repaired(self) -> int:
        return self._watch.repaired

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
        with MUTING.active():  # the SDK's "Queue full" line carries no count
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
        if watch.failing or watch.troubled:
            # Exporting fails, or the export in progress is waiting to retry (a
            # refused connection): do not wait for retries at exit.
            watch.abort()
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
                super().shutdown()  # type: ignore[no-untyped-call]
                timer.cancel()
        finally:
            watch.abort()
            self._closed = True
            self.count_drops()
            self._report()

    def count_drops(self) -> None:
        """Count the drops exactly: for a report, once a flush or the export
        thread is done or given up.

        ``on_end`` counts a drop when it sees the queue full, before the SDK
        appends the span; the export thread may empty the queue in between,
        and then that span is exported (or fails) as well as counted dropped.
        Every span that ended was queued and handed to the exporter, is still
        queued, or was dropped: what the first two do not account for is the
        third."""
        queue = self._queue
        if queue is not None:
            self.dropped = max(0, self.ended - self._watch.handed - len(queue))

    @property
    def destination(self) -> str:
        """Where the spans go, redacted, as messages name it."""
        return self._watch.destination

    def losses(self, unsent: str) -> list[str]:
        """One phrase per cause of loss so far; ``unsent`` completes the one
        for spans given up while still queued (it says when and why)."""
        parts = []
        if self.dropped:
            parts.append(f"{self.dropped} dropped because the export queue was full")
        if self.failed:
            parts.append(f"{self.failed} failed to export (exporter: {self._watch.problem})")
        if self.unsent:
            parts.append(f"{self.unsent} {unsent}")
        return parts

    def _report(self) -> None:
        parts = self.losses(
            f"still being exported when shutdown stopped waiting "
            f"after {self.shutdown_timeout:g} s (OTEL_BSP_EXPORT_TIMEOUT)"
        )
        if self.repaired:
            logger.warning(
                "adk-otel: %d span(s) had text that is not valid UTF-8; it was escaped and "
                "the spans exported",
                self.repaired,
            )
        if parts:
            logger.warning(
                "adk-otel: %d of %d span(s) were not exported to %s: %s",
                self.lost,
                self.ended,
                self._watch.destination,
                "; ".join(parts),
            )
