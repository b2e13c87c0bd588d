"""Per-invocation cost of tracing an ADK agent, four ways, in one interleaved run.

Configurations (each in its own worker process, see below):

* ``bare``: no OpenTelemetry SDK at all; ADK's tracer stays a no-op proxy.
* ``adk``: ADK's own tracing: an SDK ``TracerProvider`` with a
  ``BatchSpanProcessor`` and an exporter that does nothing, installed
  globally, so ADK's ``gcp.vertex.agent`` spans are recorded.
* ``adk_otel``: adk-otel's default: the same global provider, built by
  ``adk_otel.pipeline.build_tracer_provider`` (adk-otel's batch processor
  settings), runner instrumented, ADK's duplicate spans switched off.
* ``adk_otel_keep``: as ``adk_otel`` with ``keep_adk_spans=True``.
* ``floor``: a yardstick, not a product: the same provider with ADK's spans
  switched off, and the smallest plugin that opens and ends one span per ADK
  hook pair (the same spans, 8 attributes each, no bookkeeping beyond a dict).
  What any plugin-based tracer must pay; adk-otel minus floor is adk-otel's
  own logic.

Method. ADK gets its tracer once, at import, as
``trace.get_tracer("gcp.vertex.agent")``: a ``ProxyTracer`` that follows the
*global* provider, which can be set only once per process. So every
configuration runs in its own long-lived worker subprocess that installs its
provider before ADK is imported; ADK's spans then really go to the provider
under test. The parent drives the workers one at a time (they never compete
for a core) in *cycles*: one invocation in every configuration, the order
rotating from cycle to cycle, so a slowdown of the machine (other processes,
frequency changes) lands on all configurations alike, and each
configuration's invocation is compared with the ``bare`` one of the same
cycle. Sessions are made ahead, off the clock. Measured: the process CPU time
of each invocation (all threads, so the export thread's work counts; CPU time
rather than wall time, as the machine may be shared). Reported: the median
over all cycles, min/max of the medians of ten consecutive stretches of
cycles; overhead = median of the per-cycle differences to ``bare``.

The raw OpenTelemetry SDK span cost (``start_span`` + ``end`` on a provider
with a ``BatchSpanProcessor`` and the same do-nothing exporter, in a tight
loop) is measured in the ``adk`` worker every ten cycles, as the yardstick
for adk-otel's cost per span.

Usage: ``python benchmarks/overhead.py [--cycles 250] [--json PATH]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CONFIGS = ("bare", "adk", "adk_otel", "adk_otel_keep", "floor")
WORKLOADS = ("single", "tool", "sequential")
HERE = Path(__file__).resolve().parent


# -- worker -------------------------------------------------------------------


def _noop_exporter() -> Any:
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class NoopExporter(SpanExporter):
        """Counts spans and drops them."""

        def __init__(self) -> None:
            self.spans = 0

        def export(self, spans: Any) -> SpanExportResult:
            self.spans += len(spans)
            return SpanExportResult.SUCCESS

    return NoopExporter()


def _floor_plugin(provider: Any) -> Any:
    from google.adk.plugins.base_plugin import BasePlugin
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode

    ok = Status(StatusCode.OK)
    tracer = provider.get_tracer("floor")

    class FloorPlugin(BasePlugin):
        """One span per hook pair, parent by a dict lookup; nothing else."""

        def __init__(self) -> None:
            super().__init__(name="floor")
            self.open: dict[Any, Any] = {}

        def _start(self, key: Any, name: str, parent: Any = None) -> None:
            above = self.open.get(parent)
            context = trace.set_span_in_context(above) if above is not None else None
            attributes = {f"floor.attr{i}": name for i in range(8)}
            self.open[key] = tracer.start_span(name, context=context, attributes=attributes)

        def _end(self, key: Any) -> None:
            span = self.open.pop(key, None)
            if span is not None:
                span.set_attribute("floor.outcome", "ok")
                span.set_status(ok)
                span.end()

        async def before_run_callback(self, *, invocation_context: Any) -> None:
            self._start("run", "invocation")

        async def after_run_callback(self, *, invocation_context: Any) -> None:
            self._end("run")

        async def before_agent_callback(self, *, agent: Any, callback_context: Any) -> None:
            parent = getattr(agent.parent_agent, "name", "run")
            self._start(agent.name, f"invoke_agent {agent.name}", parent)

        async def after_agent_callback(self, *, agent: Any, callback_context: Any) -> None:
            self._end(agent.name)

        async def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> None:
            key = id(callback_context.actions)
            self._start(key, "generate_content", callback_context.agent_name)

        async def after_model_callback(self, *, callback_context: Any, llm_response: Any) -> None:
            self._end(id(callback_context.actions))

        async def before_tool_callback(
            self, *, tool: Any, tool_args: Any, tool_context: Any
        ) -> None:
            key = tool_context.function_call_id
            self._start(key, f"execute_tool {tool.name}", tool_context.agent_name)

        async def after_tool_callback(
            self, *, tool: Any, tool_args: Any, tool_context: Any, result: Any
        ) -> None:
            self._end(tool_context.function_call_id)

    return FloorPlugin()


def _worker(config: str) -> None:
    # The protocol runs over the original stdout; anything else printed goes to stderr.
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)

    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    exporter = _noop_exporter()
    provider: Any = None
    if config == "adk":
        provider = TracerProvider(resource=Resource.create())
        provider.add_span_processor(BatchSpanProcessor(exporter))
    elif config.startswith("adk_otel") or config == "floor":
        from adk_otel.pipeline import build_tracer_provider, suppress_adk_spans

        provider = build_tracer_provider(exporter=exporter)
        if config == "floor":
            suppress_adk_spans(provider)
    if provider is not None:
        trace.set_tracer_provider(provider)

    # Only now import ADK and the workloads.
    sys.path.insert(0, str(HERE))
    import workloads

    runners = {}
    for name in WORKLOADS:
        runner = workloads.runner_for(name)
        if config.startswith("adk_otel"):
            import adk_otel

            adk_otel.instrument(runner, keep_adk_spans=config == "adk_otel_keep")
        elif config == "floor":
            runner.plugin_manager.plugins.insert(0, _floor_plugin(provider))
        runners[name] = runner

    loop = asyncio.new_event_loop()
    pools: dict[str, list[str]] = {name: [] for name in WORKLOADS}
    invocations = 0

    async def one(name: str) -> dict[str, Any]:
        nonlocal invocations
        runner = runners[name]
        pool = pools[name]
        if not pool:  # sessions are made ahead, off the clock
            pool.extend([await workloads.new_session(runner) for _ in range(32)])
        session_id = pool.pop()
        start, cpu_start = time.perf_counter(), time.process_time()
        await workloads.invoke(runner, session_id)
        cpu = time.process_time() - cpu_start
        wall = time.perf_counter() - start
        invocations += 1
        await runner.session_service.delete_session(
            app_name=workloads.APP, user_id=workloads.USER, session_id=session_id
        )
        return {"cpu_us": cpu * 1e6, "wall_us": wall * 1e6}

    raw_provider = TracerProvider(resource=Resource.create())
    raw_provider.add_span_processor(BatchSpanProcessor(_noop_exporter()))
    raw_tracer = raw_provider.get_tracer("raw")
    six = {f"attr.{i}": "value" for i in range(6)}

    def raw_spans(n: int) -> dict[str, Any]:
        results = {}
        for label, attributes in (("plain", None), ("attrs6", six)):
            start = time.process_time()
            for _ in range(n):
                raw_tracer.start_span("span", attributes=attributes).end()
            results[label] = (time.process_time() - start) / n * 1e6
        return results

    for line in sys.stdin:
        request = json.loads(line)
        if request["cmd"] == "one":
            reply = loop.run_until_complete(one(request["workload"]))
        elif request["cmd"] == "raw":
            reply = raw_spans(request["n"])
        elif request["cmd"] == "spans":  # spans exported per invocation so far
            if provider is not None:
                provider.force_flush()
            reply = {"per_invocation": exporter.spans / max(invocations, 1)}
            exporter.spans, invocations = 0, 0
        else:
            break
        out.write(json.dumps(reply) + "\n")
    if provider is not None:
        provider.shutdown()
    raw_provider.shutdown()


# -- parent -------------------------------------------------------------------


class Worker:
    def __init__(self, config: str) -> None:
        self.config = config
        self.proc = subprocess.Popen(
            [sys.executable, "-W", "ignore", __file__, "--worker", config],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )

    def ask(self, **request: Any) -> dict[str, Any]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.config} died")
        return json.loads(line)

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def measure(cycles: int, raw_n: int) -> dict[str, Any]:
    """For each workload, ``cycles`` cycles; a cycle runs one invocation in
    every configuration (order rotating), so any slowdown of the machine
    lands on all of them alike, and compares them invocation by invocation."""
    workers = {config: Worker(config) for config in CONFIGS}
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {}
    spans: dict[str, dict[str, float]] = {}
    raw: list[dict[str, float]] = []
    try:
        for name in WORKLOADS:
            for worker in workers.values():  # warm-up: imports, caches, first-call paths
                for _ in range(20):
                    worker.ask(cmd="one", workload=name)
                worker.ask(cmd="spans")
            cells: dict[str, list[dict[str, Any]]] = {config: [] for config in CONFIGS}
            for cycle in range(cycles):
                shift = cycle % len(CONFIGS)
                for config in CONFIGS[shift:] + CONFIGS[:shift]:
                    cells[config].append(workers[config].ask(cmd="one", workload=name))
                if cycle % 10 == 0:
                    raw.append(workers["adk"].ask(cmd="raw", n=raw_n))
            samples[name] = cells
            spans[name] = {c: w.ask(cmd="spans")["per_invocation"] for c, w in workers.items()}
            print(f"{name} done", file=sys.stderr)
    finally:
        for worker in workers.values():
            worker.close()
    return {"cycles": cycles, "samples": samples, "spans": spans, "raw": raw}


CHUNKS = 10
"""Min/max are over the medians of this many consecutive stretches of cycles."""


def _chunked(values: list[float]) -> dict[str, float]:
    size = max(1, len(values) // CHUNKS)
    medians = [statistics.median(values[i : i + size]) for i in range(0, len(values), size)]
    return {"median": statistics.median(values), "min": min(medians), "max": max(medians)}


def analyse(data: dict[str, Any]) -> dict[str, Any]:
    raw_plain = _chunked([r["plain"] for r in data["raw"]])
    raw_attrs = _chunked([r["attrs6"] for r in data["raw"]])
    table: dict[str, Any] = {}
    for name in WORKLOADS:
        cells = data["samples"][name]
        bare = [s["cpu_us"] for s in cells["bare"]]
        adk_diff = [s["cpu_us"] - b for s, b in zip(cells["adk"], bare, strict=True)]
        adk_overhead = statistics.median(adk_diff)
        for config in CONFIGS:
            times = [s["cpu_us"] for s in cells[config]]
            paired = [t - b for t, b in zip(times, bare, strict=True)]
            overhead = _chunked(paired)
            spans = data["spans"][name][config]
            row: dict[str, Any] = {
                "us_per_invocation": _chunked(times),
                "wall_us_per_invocation": statistics.median(s["wall_us"] for s in cells[config]),
                "spans_per_invocation": spans,
                "overhead_us": overhead,
                "ratio_vs_bare": statistics.median(times) / statistics.median(bare),
            }
            if config != "bare":
                adk_times = [s["cpu_us"] for s in cells["adk"]]
                row["ratio_vs_adk"] = statistics.median(times) / statistics.median(adk_times)
                row["overhead_vs_adk_overhead"] = (
                    overhead["median"] / adk_overhead if adk_overhead > 0 else None
                )
                row["overhead_us_per_span"] = overhead["median"] / spans if spans else None
            table[f"{config}/{name}"] = row
    return {"raw_span_us": raw_plain, "raw_span_6_attrs_us": raw_attrs, "table": table}


def markdown(result: dict[str, Any]) -> str:
    raw = result["raw_span_us"]
    lines = [
        "| workload | configuration | CPU µs / invocation, median [min-max] "
        "| overhead µs vs bare, median [min-max] "
        "| x bare | x adk | overhead / adk's | spans | overhead µs / span |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in WORKLOADS:
        for config in CONFIGS:
            row = result["table"][f"{config}/{name}"]
            t = row["us_per_invocation"]
            o = row["overhead_us"]
            cells = [
                name,
                config,
                f"{t['median']:.0f} [{t['min']:.0f}-{t['max']:.0f}]",
                "-" if config == "bare" else f"{o['median']:.0f} [{o['min']:.0f}-{o['max']:.0f}]",
                f"{row['ratio_vs_bare']:.2f}",
                "-" if config == "bare" else f"{row['ratio_vs_adk']:.2f}",
                "-" if config in ("bare", "adk") else _fmt(row["overhead_vs_adk_overhead"]),
                f"{row['spans_per_invocation']:.0f}",
                "-" if config == "bare" else _fmt(row["overhead_us_per_span"], 1),
            ]
            lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        f"Raw SDK span (start + end, BatchSpanProcessor, no-op exporter): "
        f"{raw['median']:.1f} µs [{raw['min']:.1f}-{raw['max']:.1f}]; with 6 attributes: "
        f"{result['raw_span_6_attrs_us']['median']:.1f} µs."
    )
    return "\n".join(lines)


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def targets(result: dict[str, Any]) -> list[str]:
    raw = result["raw_span_us"]["median"]
    verdicts = []
    for name in WORKLOADS:
        row = result["table"][f"adk_otel/{name}"]
        per_span = row["overhead_us_per_span"]
        share = row["overhead_vs_adk_overhead"]
        verdicts.append(
            f"{name}: adk-otel {per_span:.1f} µs/span vs 2 x raw {2 * raw:.1f} µs "
            f"-> {'met' if per_span <= 2 * raw else 'MISSED'}; overhead "
            f"{_fmt(share)} of ADK's own -> "
            f"{'met' if share is not None and share <= 0.5 else 'MISSED'}; "
            f"floor plugin {result['table'][f'floor/{name}']['overhead_us_per_span']:.1f} µs/span"
        )
    return verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", choices=CONFIGS, help=argparse.SUPPRESS)
    parser.add_argument("--cycles", type=int, default=250, help="cycles per workload")
    parser.add_argument("--raw-n", type=int, default=300, help="raw SDK spans per sample")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    if args.worker:
        _worker(args.worker)
        return
    started = time.perf_counter()
    data = measure(args.cycles, args.raw_n)
    result = analyse(data)
    result["seconds"] = time.perf_counter() - started
    print(markdown(result))
    print()
    for verdict in targets(result):
        print(verdict)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**result, "raw_data": data}, indent=1))


if __name__ == "__main__":
    main()
