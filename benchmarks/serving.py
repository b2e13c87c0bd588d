"""A server process with a slow collector: what it drops, what it says, what
requests pay.

ADK's FastAPI app (``get_fast_api_app`` with adk-otel as an extra plugin: the
``main.py`` of tests/serving) under uvicorn, one worker, exporting over
OTLP/HTTP to a receiver that holds every export for ``--delay`` seconds (a slow
collector), while ``--concurrency`` clients run the one-tool agent (5 adk-otel
spans a run) ``--runs`` times; then SIGTERM. ADK's server builds the tracer
provider from ``OTEL_*``; compared:

* ``adk``: left as ADK built it (the SDK's ``BatchSpanProcessor``, SDK
  defaults: queue 2048, schedule delay 5 s; ``ADK_OTEL_ADOPT_ADK_PROVIDER=false``);
* ``adk_otel``: adk-otel's pipeline on that provider (queue 8192, delay 1 s).

Reported per case: requests/s and median request latency, spans the server
ended per second (all scopes: FastAPI's too), spans received, dropped (from
what the server printed), and the shutdown line. ``none`` as delay is the
baseline. The rate one process sustains before it drops is bounded by the
export (``OTEL_BSP_MAX_EXPORT_BATCH_SIZE`` / delay spans/s, one export at a
time) plus what the queue absorbs for a burst (queue / (rate - export rate) s).

Usage: ``python benchmarks/serving.py [--runs 300] [--concurrency 20] [--json PATH]``
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from serving.harness import run_once, uvicorn, warm_up  # noqa: E402

from adk_otel.testing.receiver import OtlpReceiver  # noqa: E402

_OWN = re.compile(r"shutdown: (\d+) of (\d+) span\(s\) were not exported.*?(\d+) dropped")
_OWN_OK = re.compile(r"shutdown: .*all (\d+) span\(s\) exported")
_SDK = re.compile(r"(\d+) span\(s\) were dropped because a batch queue was full")


def case(pipeline: str, delay: float, runs: int, concurrency: int) -> dict[str, Any]:
    env = {"ADK_OTEL_ADOPT_ADK_PROVIDER": "false"} if pipeline == "adk" else {}
    with OtlpReceiver() as receiver:
        receiver.delay = delay
        server = uvicorn(receiver, **env)
        try:
            warm_up(server)
            latencies: list[float] = []

            def one(i: int) -> None:
                started = time.perf_counter()
                run_once(server, f"b{i}")
                latencies.append(time.perf_counter() - started)

            started = time.perf_counter()
            with ThreadPoolExecutor(concurrency) as pool:
                list(pool.map(one, range(runs)))
            elapsed = time.perf_counter() - started
            server.stop()
        finally:
            server.kill()
        received = len(receiver.spans())
        adk_otel_received = sum(
            len(scope.spans)
            for rs in receiver.resource_spans()
            for scope in rs.scope_spans
            if scope.scope.name == "adk_otel"
        )
    output = server.output
    line = next((x for x in output.splitlines() if "adk-otel: shutdown:" in x), "")
    dropped = 0
    ended: int | None = None
    if (found := _OWN.search(line)) is not None:
        dropped, ended = int(found.group(3)), int(found.group(2))
    elif (found := _SDK.search(line)) is not None:
        dropped = int(found.group(1))
    elif (found := _OWN_OK.search(line)) is not None:
        ended = int(found.group(1))
    if ended is None:
        ended = received + dropped
    return {
        "pipeline": pipeline,
        "delay_s": delay,
        "runs": runs,
        "requests_per_s": round(runs / elapsed, 1),
        "latency_median_ms": round(statistics.median(latencies) * 1000, 1),
        "spans_ended_per_s": round(ended / elapsed, 1),
        "spans_received": received,
        "adk_otel_spans_received": adk_otel_received,
        "adk_otel_spans_expected": runs * 5,
        "dropped": dropped,
        "queue_full_lines": output.count("Queue full, dropping"),
        "shutdown_line": line.split("adk-otel: ", 1)[-1][:300],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--delays", default="0,0.5,2")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "serving.json")
    args = parser.parse_args()
    results = []
    for delay in (float(d) for d in args.delays.split(",")):
        for pipeline in ("adk", "adk_otel"):
            result = case(pipeline, delay, args.runs, args.concurrency)
            results.append(result)
            print(json.dumps(result), flush=True)
    print()
    print(
        "| collector s/export | pipeline | req/s | median ms | spans ended/s "
        "| adk-otel spans received | dropped |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['delay_s']:g} | {r['pipeline']} | {r['requests_per_s']} | "
            f"{r['latency_median_ms']} | {r['spans_ended_per_s']} | "
            f"{r['adk_otel_spans_received']} of {r['adk_otel_spans_expected']} | {r['dropped']} |"
        )
    args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
