"""A small agent application for the subprocess tests: configured only by the
environment (``OTEL_*``), traced with ``adk_otel.instrument()``.

``python child.py RUNS`` runs RUNS invocations of a three-agent pipeline, then
exits normally; adk-otel's provider shuts down at exit as in any application.
The last stdout line is a JSON report written after that shutdown: runs that
succeeded, errors raised into the application, the plugin's open spans and
the export processor's counts.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

logging.basicConfig(
    level=logging.WARNING, format="LOG %(levelname)s %(name)s: %(message)s", stream=sys.stderr
)
report: dict[str, Any] = {"runs_ok": 0, "errors": []}
held: dict[str, Any] = {}


def _final_report() -> None:
    # Registered before the tracer provider exists, so it runs after the
    # provider's own exit handler has shut the pipeline down.
    processor = held.get("processor")
    if processor is not None:
        for name in ("ended", "exported", "dropped", "failed", "unsent"):
            report[name] = getattr(processor, name)
    if "main_ended" in held:  # seconds from the app's last line to here: the exit's wait
        report["exit_wait_s"] = time.monotonic() - held["main_ended"]
    print(json.dumps(report), flush=True)


atexit.register(_final_report)

sys.path.insert(0, str(Path(__file__).resolve().parent))

import agents  # noqa: E402
from opentelemetry import trace  # noqa: E402

import adk_otel  # noqa: E402
from adk_otel.pipeline.provider import exporting_processor  # noqa: E402


async def main(runs: int) -> None:
    runner = adk_otel.instrument(agents.runner(agents.sequential()))
    held["processor"] = exporting_processor(trace.get_tracer_provider())
    for _ in range(runs):
        try:
            await agents.invoke(runner)
            report["runs_ok"] += 1
        except Exception as exc:  # reported, so the test can tell
            report["errors"].append(f"{type(exc).__name__}: {exc}")
    plugin = adk_otel.plugin_of(runner)
    report["open_spans"] = plugin.open_spans if plugin is not None else None


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
    held["main_ended"] = time.monotonic()
