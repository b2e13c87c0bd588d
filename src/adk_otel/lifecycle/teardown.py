"""The plugin's last moments: at ``close()`` and at interpreter exit.

Spans still open then have no hook left to end them: they are ended
``incomplete`` (``plugin_closed``, ``process_exit``) so they reach the
exporter, after runs being cancelled were given a moment to end themselves.
"""

from __future__ import annotations

import asyncio
import atexit
import time
import weakref
from collections.abc import Callable
from typing import Protocol

from ..ledger.telemetry import TelemetryLedger
from ..pipeline import shutdown
from ..pipeline.provider import TelemetrySettings
from . import options
from .runs import Runs


class EndsOpenSpans(Protocol):
    def end_open_spans(self, reason: str = ...) -> None: ...


_LIVE: weakref.WeakSet[EndsOpenSpans] = weakref.WeakSet()
_exit_hook_registered = False


def end_at_exit(plugin: EndsOpenSpans) -> None:
    """At interpreter exit, end what is still open (runs whose event loop was
    closed or abandoned mid-run) as ``incomplete`` (``process_exit``), so the
    spans reach the exporter. Registered after the tracer provider exists, so
    it runs before the provider's own exit handler flushes and shuts down."""
    global _exit_hook_registered
    _LIVE.add(plugin)
    if not _exit_hook_registered:
        _exit_hook_registered = True
        atexit.register(_end_all_open_spans)


def _end_all_open_spans() -> None:
    for plugin in list(_LIVE):
        plugin.end_open_spans("process_exit")


async def close(
    ledger: TelemetryLedger | None,
    runs: Runs,
    end_open_spans: Callable[[], int],
    settings: TelemetrySettings,
    *,
    flush: bool = True,
) -> None:
    """Let cancelled runs end, end what is still open (``end_open_spans``
    returns how many it ended: a Runner sharing the plugin ends only its own,
    see lifecycle/sharing.py), then, with ``flush``, flush the tracer provider,
    bounded, and report what was exported and what was not (pipeline/shutdown.py):
    spans ended by now are counted, later ones are not."""
    started = time.monotonic()
    await _let_cancelled_runs_end(runs)
    cut_off = end_open_spans()
    if ledger is None or not flush:
        return
    provider = options.provider(settings)
    spent = time.monotonic() - started
    await asyncio.to_thread(shutdown.flush_and_report, provider, ledger.ended, cut_off, spent)


async def _let_cancelled_runs_end(runs: Runs) -> None:
    """A server stopping with runs in flight cancels their tasks just before
    it closes the runners (uvicorn's ``--timeout-graceful-shutdown``): let
    them unwind first, for a bounded time, so each run ends ``cancelled``
    through its own hooks and the spans around it (the HTTP server span)
    end before the flush, rather than being cut off as ``incomplete``."""
    try:
        await asyncio.sleep(0)  # one turn: cancellation reaches the runs' tasks
        unwinding = runs.unwinding()
        if unwinding:
            await asyncio.wait(unwinding, timeout=shutdown.UNWIND_LIMIT)
            await asyncio.sleep(0)  # and the tasks that awaited them
    except (RuntimeError, ValueError):
        pass
