"""Does the batch export keep up with a busy agent process? Spans lost, by pipeline.

A busy asyncio loop runs the three-agent ``sequential`` workload (8 spans an
invocation) as fast as it can, many invocations in flight, while the batch
processor's thread exports. Compared, each in a fresh worker process:

* ``sdk``: the SDK's ``BatchSpanProcessor`` with its defaults (queue 2048,
  schedule delay 5 s), as most applications set it up;
* ``adk_otel``: adk-otel's default pipeline (``build_tracer_provider``).

Exporters: ``noop`` (takes the batch, does nothing), ``otlp-http`` (the real
OTLP/HTTP exporter to an in-process OTLP receiver on loopback: protobuf
encoding competes with the agent loop for the GIL; the receiver runs in a
process of its own, as a collector would), and ``held`` (an export
blocks until the burst is over, like a collector that stalls for a while:
the burst must fit in the queue).

Reported per case: invocations/s, spans ended, exported, lost, the longest
gap between two exports while the agents ran, and the time ``shutdown()``
took. Usage: ``python benchmarks/export_load.py [--runs 2000] [--json PATH]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PIPELINES = ("sdk", "adk_otel")
EXPORTERS = ("noop", "otlp-http", "held")
CONCURRENCY = 64
_RECEIVER = """
import sys
from adk_otel.testing.receiver import OtlpReceiver
receiver = OtlpReceiver().start()
print(receiver.http_endpoint, flush=True)
sys.stdin.read()
receiver.stop()
"""


def _worker(pipeline: str, exporter_kind: str, runs: int) -> dict[str, Any]:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    sys.path.insert(0, str(HERE))
    import workloads

    import adk_otel
    from adk_otel.pipeline.provider import build_tracer_provider

    class Recording(SpanExporter):
        """Counts and timestamps exports; delegates or holds as asked."""

        def __init__(self, inner: Any = None, hold: threading.Event | None = None) -> None:
            self.inner, self.hold = inner, hold
            self.spans = 0
            self.times: list[float] = []

        def export(self, spans: Any) -> SpanExportResult:
            self.times.append(time.perf_counter())
            if self.hold is not None:
                self.hold.wait(120)
            result = SpanExportResult.SUCCESS
            if self.inner is not None:
                result = self.inner.export(spans)
            if result is SpanExportResult.SUCCESS:
                self.spans += len(spans)
            return result

        def shutdown(self) -> None:
            if self.inner is not None:
                self.inner.shutdown()

    receiver = None
    hold = threading.Event() if exporter_kind == "held" else None
    inner = None
    if exporter_kind == "otlp-http":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        # The receiver stands in for a collector: its own process, as in production.
        receiver = subprocess.Popen(
            [sys.executable, "-c", _RECEIVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert receiver.stdout is not None
        inner = OTLPSpanExporter(endpoint=receiver.stdout.readline().strip())
    exporter = Recording(inner, hold)
    if pipeline == "sdk":
        provider = TracerProvider(resource=Resource.create())
        provider.add_span_processor(BatchSpanProcessor(exporter))
    else:
        provider = build_tracer_provider(exporter=exporter)
    ended = [0]

    class Counting:  # counts every span that ends (sampled), whatever the processor does
        def on_start(self, span: Any, parent_context: Any = None) -> None:
            pass

        def on_end(self, span: Any) -> None:
            ended[0] += 1

        def _on_ending(self, span: Any) -> None:
            pass

        def shutdown(self) -> None:
            pass

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return True

    provider.add_span_processor(Counting())  # type: ignore[arg-type]
    runner = adk_otel.instrument(workloads.runner_for("sequential"), tracer_provider=provider)

    async def load() -> float:
        semaphore = asyncio.Semaphore(CONCURRENCY)

        async def one() -> None:
            async with semaphore:
                await workloads.invoke_on_new_session(runner)

        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(runs)))
        return time.perf_counter() - started

    import logging

    logging.disable(logging.WARNING)  # the counts below say it; no log noise in the table
    elapsed = asyncio.run(load())
    ran_until = time.perf_counter()
    if hold is not None:
        hold.set()
    gaps = [
        b - a for a, b in zip(exporter.times, exporter.times[1:], strict=False) if b < ran_until
    ]
    started = time.perf_counter()
    provider.shutdown()
    shutdown_s = time.perf_counter() - started
    if receiver is not None:
        receiver.communicate("", timeout=30)
    return {
        "pipeline": pipeline,
        "exporter": exporter_kind,
        "runs": runs,
        "invocations_per_s": runs / elapsed,
        "spans_per_s": ended[0] / elapsed,
        "ended": ended[0],
        "exported": exporter.spans,
        "lost": ended[0] - exporter.spans,
        "exports": len(exporter.times),
        "max_gap_s": max(gaps) if gaps else None,
        "shutdown_s": shutdown_s,
    }


def measure(runs: int) -> list[dict[str, Any]]:
    results = []
    for exporter_kind in EXPORTERS:
        for pipeline in PIPELINES:
            command = [sys.executable, "-W", "ignore", __file__, "--runs", str(runs)]
            proc = subprocess.run(
                [*command, "--worker", pipeline, exporter_kind],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if proc.returncode != 0:
                raise RuntimeError(proc.stderr[-3000:])
            result = json.loads(proc.stdout.strip().splitlines()[-1])
            results.append(result)
            print(f"{pipeline}/{exporter_kind} done", file=sys.stderr)
    return results


def markdown(results: list[dict[str, Any]]) -> str:
    lines = [
        "| exporter | pipeline | invocations/s | spans/s | spans ended | exported | lost "
        "| longest gap between exports | shutdown |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        gap = "-" if r["max_gap_s"] is None else f"{r['max_gap_s']:.2f} s"
        lines.append(
            f"| {r['exporter']} | {r['pipeline']} | {r['invocations_per_s']:.0f} "
            f"| {r['spans_per_s']:.0f} | {r['ended']} | {r['exported']} | {r['lost']} "
            f"| {gap} | {r['shutdown_s']:.2f} s |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--worker", nargs=2, metavar=("PIPELINE", "EXPORTER"), help=argparse.SUPPRESS
    )
    parser.add_argument("--runs", type=int, default=1500, help="invocations per case")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(_worker(args.worker[0], args.worker[1], args.runs)))
        return
    results = measure(args.runs)
    print(markdown(results))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
