"""Run by test_fork.py in a fresh process: instrument with the built-in
pipeline (``OTEL_*``), run one invocation, fork (as gunicorn --preload does
after the app is loaded), run one more in the child, and report each
process's export counts as JSON lines ``PARENT {...}`` / ``CHILD {...}``."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import agents
from opentelemetry import trace

import adk_otel
from adk_otel.pipeline.provider import exporting_processor


def counts(label: str) -> None:
    provider = trace.get_tracer_provider()
    processor = exporting_processor(provider)
    provider.shutdown()  # type: ignore[attr-defined]
    report = {n: getattr(processor, n) for n in ("ended", "exported", "failed", "unsent")}
    print(label, json.dumps(report), flush=True)


runner = adk_otel.instrument(agents.runner(agents.sequential()))
asyncio.run(agents.invoke(runner))
trace.get_tracer_provider().force_flush()  # type: ignore[attr-defined]
pid = os.fork()
if pid == 0:
    asyncio.run(agents.invoke(runner))
    counts("CHILD")
    os._exit(0)
os.waitpid(pid, 0)
counts("PARENT")
