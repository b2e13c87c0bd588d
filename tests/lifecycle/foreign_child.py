"""Child process of test_foreign_spans.py: the set-ups of foreign.py named on
the command line, each run by ADK alone, under ``instrument(runner)`` and with
the plugin in the App, on a global SDK provider set before ADK is imported.

ADK alone runs first, before any adk-otel plugin exists: adk-otel answers for
the tracer ADK holds from its first plugin on, so only then is ADK's own run
span ADK's alone. ``AutoTracingPlugin`` rewrites the functions of the modules
it finds for the rest of the process: its set-up runs in a process of its own.
Prints one JSON line: set-up -> path -> what landed where."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections import Counter
from importlib.metadata import version
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class _Logged(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _report(spans: list[ReadableSpan], landed: Any, scopes: tuple[str, ...]) -> dict[str, Any]:
    by_id = {s.context.span_id: s for s in spans}
    under: Counter[str] = Counter()
    parents: dict[str, list[str]] = {}
    for span in spans:
        if span.instrumentation_scope.name not in scopes:
            continue
        parent = by_id.get(span.parent.span_id) if span.parent else None
        parents.setdefault(span.name, []).append(parent.name if parent is not None else "-")
        while parent is not None and parent is not landed.root:
            parent = by_id.get(parent.parent.span_id) if parent.parent else None
        if parent is landed.root:
            under[span.name] += 1
    return {
        "foreign": landed.foreign,
        "in_run": landed.in_run,
        "traces": landed.traces,
        "root": landed.root.name,
        "under_root": dict(under),
        "parents": {name: sorted(set(found)) for name, found in parents.items()},
    }


async def _main(names: list[str]) -> dict[str, Any]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    if "auto_tracing" in names:
        try:
            import google.adk.plugins.auto_tracing_plugin  # noqa: F401
        except ImportError:
            return {"absent": [int(p) for p in version("google-adk").split(".")[:2]]}
    from tests.lifecycle import foreign

    logged = _Logged()
    logging.getLogger().addHandler(logged)
    found: dict[str, Any] = {name: {} for name in names}
    for path in foreign.PATHS:  # ADK alone first, for every set-up
        for name in names:
            setup = foreign.SETUPS[name]
            runner = foreign.runner(setup, path)
            if name == "auto_tracing":
                await foreign._run_once(runner)  # it wraps the modules at its first run
            exporter.clear()
            await foreign._run_once(runner)
            spans = list(exporter.get_finished_spans())
            landed = foreign.landing(spans, setup.foreign_scopes)
            report = _report(spans, landed, setup.foreign_scopes)
            report["clean"] = trace.get_current_span() is trace.INVALID_SPAN and not any(
                "Failed to detach context" in m for m in logged.messages
            )
            found[name][path] = report
    return found


if __name__ == "__main__":
    print(json.dumps(asyncio.run(_main(sys.argv[1:]))))
