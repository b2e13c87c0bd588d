"""The end of a server process: end what is open, flush, say what was lost.

Under ADK's servers (``adk web``, ``adk api_server``, an app from
``get_fast_api_app`` under uvicorn or gunicorn) the app's shutdown (its ASGI
lifespan) closes every runner, and each runner closes its plugins. That is the
last code adk-otel runs: uvicorn then re-raises SIGTERM and the process dies by
that signal, so no ``atexit`` handler (adk-otel's, or the SDK's flush) runs.
``AdkOtelPlugin.close()`` therefore ends the spans still open and then calls
:func:`flush_and_report`: the tracer provider is flushed, waited for at most
:func:`flush_timeout` seconds, and one line says what was exported and what
was not. See docs/operations.md, "Serving in production".
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from .. import settings
from .export import MUTING, ExportingProcessor
from .provider import exporting_processor

logger: logging.Logger = logging.getLogger("adk_otel.pipeline")

FLUSH_LIMIT = 4.0
"""The longest ``close()`` waits, in seconds, for cancelled runs to end and
then for the flush: under ADK's limit
for one plugin's ``close()`` (5 s) and well inside a platform's grace period
between SIGTERM and SIGKILL (Cloud Run: 10 s; Kubernetes: 30 s by default).
A lower ``OTEL_BSP_EXPORT_TIMEOUT`` lowers it."""
UNWIND_LIMIT = 1.0
"""Seconds ``close()`` gives runs whose tasks are being cancelled to end by
themselves (``cancelled``) before it ends what is left ``incomplete``."""
_SDK_DROP_LOGGER = "opentelemetry.sdk._shared_internal"
_SDK_DROP_MESSAGE = "Queue full, dropping %s."
_DROP_REPORT_INTERVAL = 60.0


def flush_timeout() -> float:
    """Seconds a shutdown flush may take: ``OTEL_BSP_EXPORT_TIMEOUT`` (ms),
    at most :data:`FLUSH_LIMIT`."""
    millis = settings.load(settings.BSP_EXPORT_TIMEOUT, warn=logger.debug)
    return min(millis / 1000, FLUSH_LIMIT)


class _SdkDrops(logging.Filter):
    """Counts the spans the SDK's own batch processors drop from a full queue
    (a provider adk-otel did not build: ADK's, the application's): the SDK
    logs one ``Queue full, dropping Span.`` line per span and keeps no count
    anyone can read. The lines are replaced by a counted warning, at the first
    drop and at most once a minute, and the total goes in the shutdown report."""

    def __init__(self) -> None:
        super().__init__()
        self.dropped: int = 0
        self._next_report = 0.0
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != _SDK_DROP_MESSAGE or record.args != ("Span",):
            return True
        if MUTING.holding_back():
            # adk-otel's own processor dropping: it has counted the span already.
            return True
        with self._lock:
            self.dropped += 1
            now = time.monotonic()
            report = now >= self._next_report
            if report:
                self._next_report = now + _DROP_REPORT_INTERVAL
        if report:
            logger.warning(
                "adk-otel: a span batch queue of the tracer provider is full: %d span(s) "
                "dropped so far (export cannot keep up with the collector). Raise "
                "OTEL_BSP_MAX_QUEUE_SIZE; a count follows each minute while dropping, "
                "and at shutdown",
                self.dropped,
            )
        return False


SDK_DROPS = _SdkDrops()


def count_sdk_drops() -> None:
    """Start counting the SDK batch processors' dropped spans (idempotent)."""
    target = logging.getLogger(_SDK_DROP_LOGGER)
    if SDK_DROPS not in target.filters:
        # First: the SDK's own duplicate filter would hide all but one line a while.
        target.filters.insert(0, SDK_DROPS)


@dataclass(frozen=True)
class FlushResult:
    finished: bool
    """The flush returned within the time allowed."""
    seconds: float
    queued: int | None
    """Spans still waiting in the provider's SDK batch queues afterwards
    (not exported, and lost when the process dies); None when unreadable."""


def flush(provider: Any, timeout: float) -> FlushResult:
    """Flush ``provider``, waiting at most ``timeout`` seconds. The SDK's batch
    processor ignores the timeout it is given (it exports all it holds, each
    export with its own retries), so the flush runs in a daemon thread that is
    left behind if it takes longer: the process is about to end."""
    flush_method = getattr(provider, "force_flush", None)
    started = time.monotonic()
    if flush_method is None:
        return FlushResult(True, 0.0, 0)
    done = threading.Event()

    def work() -> None:
        try:
            flush_method(int(timeout * 1000))
        except Exception:
            logger.debug("adk-otel: flushing the tracer provider failed", exc_info=True)
        finally:
            done.set()

    thread = threading.Thread(target=work, name="adk-otel-shutdown-flush", daemon=True)
    thread.start()
    finished = done.wait(timeout)
    return FlushResult(finished, time.monotonic() - started, _queued(provider))


def _queued(provider: Any) -> int | None:
    """Spans in the SDK batch queues of ``provider``'s processors, or None."""
    active = getattr(provider, "_active_span_processor", None)
    processors = getattr(active, "_span_processors", None)
    if processors is None:
        return None
    total = 0
    for processor in processors:
        batch = getattr(processor, "_batch_processor", None)
        if batch is None:
            continue
        queue = getattr(batch, "_queue", None)
        if queue is None:
            return None
        total += len(queue)
    return total


def flush_and_report(provider: Any, ended: int, cut_off: int, spent: float = 0.0) -> None:
    """Flush ``provider`` (bounded, ``spent`` seconds of the limit already
    used) and log one line: ``ended`` adk-otel spans ended in this process,
    ``cut_off`` of them just now (runs still open). Never raises."""
    if not hasattr(provider, "force_flush"):
        return  # no SDK provider (no-op, OTEL_SDK_DISABLED): nothing was exported
    try:
        timeout = max(0.1, flush_timeout() - spent)
        result = flush(provider, timeout)
        processor = exporting_processor(provider)
        if processor is not None:
            _report_own(processor, result, timeout, ended, cut_off)
        else:
            _report_foreign(result, timeout, ended, cut_off)
    except Exception:
        logger.warning("adk-otel: the shutdown flush failed", exc_info=True)


def _cut_off(cut_off: int) -> str:
    if not cut_off:
        return ""
    return f" ({cut_off} of them still open at shutdown, ended incomplete or cancelled)"


def _report_own(
    processor: ExportingProcessor, result: FlushResult, timeout: float, ended: int, cut_off: int
) -> None:
    destination = processor.destination
    processor.count_drops()
    lost = processor.dropped + processor.failed + processor.unsent  # unsent: not shut down
    if not lost:
        logger.info(
            "adk-otel: shutdown: %d adk-otel span(s) ended in this process%s; all %d span(s) "
            "exported to %s (flushed in %.1f s)",
            ended,
            _cut_off(cut_off),
            processor.exported,
            destination,
            result.seconds,
        )
        return
    parts = processor.losses(
        f"not yet exported when the shutdown flush stopped waiting after {timeout:g} s"
    )
    logger.warning(
        "adk-otel: shutdown: %d of %d span(s) were not exported to %s: %s. adk-otel ended "
        "%d span(s) in this process%s",
        lost,
        processor.ended,
        destination,
        "; ".join(parts),
        ended,
        _cut_off(cut_off),
    )


def _report_foreign(result: FlushResult, timeout: float, ended: int, cut_off: int) -> None:
    parts = []
    if SDK_DROPS.dropped:
        parts.append(f"{SDK_DROPS.dropped} span(s) were dropped because a batch queue was full")
    if not result.finished:
        queued = "" if result.queued is None else f"; {result.queued} span(s) still queued"
        parts.append(f"the flush did not finish within {timeout:g} s{queued}, not exported")
    if not parts:
        logger.info(
            "adk-otel: shutdown: %d adk-otel span(s) ended in this process%s; the tracer "
            "provider (not built by adk-otel) was flushed in %.1f s; export failures, if "
            "any, are its exporter's to report",
            ended,
            _cut_off(cut_off),
            result.seconds,
        )
        return
    logger.warning(
        "adk-otel: shutdown: %d adk-otel span(s) ended in this process%s; %s (tracer "
        "provider not built by adk-otel: export failures are its exporter's to report)",
        ended,
        _cut_off(cut_off),
        "; ".join(parts),
    )


_announced: set[int] = set()


def announce(provider: Any) -> None:
    """Once per provider adk-otel did not build: say what adk-otel can and
    cannot promise about its spans there, and start counting the SDK's drops."""
    if exporting_processor(provider) is not None or id(provider) in _announced:
        return
    if not hasattr(provider, "add_span_processor"):
        return  # no SDK provider (no-op, or OTEL_SDK_DISABLED): nothing is exported
    _announced.add(id(provider))
    count_sdk_drops()
    logger.info(
        "adk-otel: spans go to a tracer provider adk-otel did not build (%s): its queue, "
        "retries and exit are its own. adk-otel ends its spans exactly once, flushes this "
        "provider when the runner closes (at most %g s), counts spans its SDK batch "
        "queues drop, and reports both at shutdown; export failures are its exporter's "
        "to report",
        type(provider).__name__,
        flush_timeout(),
    )
