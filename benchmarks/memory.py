"""Memory over many invocations: adk-otel's bookkeeping and the process's RSS.

Runs the three-agent ``sequential`` workload (8 spans an invocation) through
adk-otel's default pipeline (``build_tracer_provider`` with an exporter that
drops the spans), 16 invocations in flight at a time, and at each checkpoint
records:

* adk-otel's bookkeeping: the plugin's ``open_spans``, its run registry's
  ``by_context``, ``by_invocation`` and ``orphans`` dicts, every dict/list on
  the ledger, and how many run records (``Run``) and span entries are alive;
* the resident set size (RSS) of the process;
* in a second, shorter phase under ``tracemalloc``: the bytes still allocated
  by adk-otel's own code (``src/adk_otel``, the scripted test model excluded).

The same checkpoints are taken first in a separate process running the same
invocations without adk-otel (no SDK, no plugin): RSS moves with the
allocator and ADK itself, so adk-otel's effect is the difference between
the two columns, not the growth of one.

The scripted model keeps every request it was sent (a test convenience); that
history is cleared after each invocation so it does not count as growth.
Usage: ``python benchmarks/memory.py [--runs 10000] [--traced-runs 2000] [--json PATH]``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
IN_FLIGHT = 16


def rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    import os

    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def invoker(runner: Any) -> Callable[[int], Awaitable[None]]:
    """``batch(count)``: ``count`` invocations, ``IN_FLIGHT`` at a time."""
    import workloads

    from adk_otel.testing.model import ScriptedModel

    models = [
        agent.model
        for agent in [runner.agent, *runner.agent.sub_agents]
        if isinstance(getattr(agent, "model", None), ScriptedModel)
    ]

    async def batch(count: int) -> None:
        semaphore = asyncio.Semaphore(IN_FLIGHT)

        async def one() -> None:
            async with semaphore:
                await workloads.invoke_on_new_session(runner)
                for model in models:
                    model.requests.clear()

        await asyncio.gather(*(one() for _ in range(count)))

    return batch


def bare_rss(runs: int, checkpoints: int) -> list[float]:
    """RSS at each checkpoint of the same invocations without adk-otel."""
    import workloads

    batch = invoker(workloads.runner_for("sequential"))
    loop = asyncio.new_event_loop()
    loop.run_until_complete(batch(200))  # warm-up
    rss = [rss_mib()]
    for _ in range(checkpoints):
        loop.run_until_complete(batch(runs // checkpoints))
        rss.append(rss_mib())
    loop.close()
    return rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10000)
    parser.add_argument("--traced-runs", type=int, default=2000)
    parser.add_argument("--checkpoints", type=int, default=10)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--bare", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    sys.path.insert(0, str(HERE))
    if args.bare:
        print(json.dumps(bare_rss(args.runs, args.checkpoints)))
        return
    sizes = ["--runs", str(args.runs), "--checkpoints", str(args.checkpoints)]
    baseline = subprocess.run(
        [sys.executable, "-W", "ignore", __file__, "--bare", *sizes],
        capture_output=True,
        text=True,
        check=True,
    )
    bare = json.loads(baseline.stdout.strip().splitlines()[-1])
    print("uninstrumented baseline done", file=sys.stderr)

    import workloads
    from overhead import _noop_exporter

    import adk_otel
    from adk_otel.ledger.spans import Entry
    from adk_otel.lifecycle.runs import Run
    from adk_otel.pipeline.provider import build_tracer_provider

    own_code = str(Path(adk_otel.__file__).resolve().parent)
    test_helpers = str(Path(own_code) / "testing")
    provider = build_tracer_provider(exporter=_noop_exporter())
    runner = adk_otel.instrument(workloads.runner_for("sequential"), tracer_provider=provider)
    plugin = adk_otel.plugin_of(runner)
    assert plugin is not None
    batch = invoker(runner)

    def bookkeeping() -> dict[str, int]:
        ledger = plugin._ledger_instance
        sizes = {
            "open_spans": plugin.open_spans,
            "runs": len(plugin._runs.by_context),
            "runs_by_invocation": len(plugin._runs.by_invocation),
            "orphans": len(plugin._runs.orphans),
        }
        for name, value in vars(ledger).items():
            if isinstance(value, dict | list | set):
                sizes[f"ledger.{name}"] = len(value)
        gc.collect()
        objects = gc.get_objects()
        sizes["live_runs"] = sum(1 for o in objects if type(o) is Run)
        sizes["live_entries"] = sum(1 for o in objects if type(o) is Entry)
        return sizes

    def own_bytes() -> int:
        snapshot = tracemalloc.take_snapshot()
        return sum(
            stat.size
            for stat in snapshot.statistics("filename")
            if stat.traceback[0].filename.startswith(own_code)
            and not stat.traceback[0].filename.startswith(test_helpers)
        )

    loop = asyncio.new_event_loop()
    started = time.perf_counter()
    loop.run_until_complete(batch(200))  # warm-up
    provider.force_flush()
    step = args.runs // args.checkpoints
    rows: list[dict[str, Any]] = []
    done = 0
    rows.append({"invocations": done, "rss_mib": rss_mib(), **bookkeeping()})
    while done < args.runs:
        loop.run_until_complete(batch(step))
        done += step
        provider.force_flush()
        rows.append({"invocations": done, "rss_mib": rss_mib(), **bookkeeping()})
        print(f"{done} invocations", file=sys.stderr)
    untraced_s = time.perf_counter() - started

    tracemalloc.start()
    loop.run_until_complete(batch(200))
    provider.force_flush()
    gc.collect()
    traced: list[dict[str, Any]] = [{"invocations": 0, "own_bytes": own_bytes()}]
    tstep = args.traced_runs // 4
    for i in range(1, 5):
        loop.run_until_complete(batch(tstep))
        provider.force_flush()
        gc.collect()
        traced.append({"invocations": i * tstep, "own_bytes": own_bytes()})
    tracemalloc.stop()
    loop.close()
    provider.shutdown()

    for row, rss in zip(rows, bare, strict=True):
        row["bare_rss_mib"] = rss
    result = {"rows": rows, "traced": traced, "seconds": time.perf_counter() - started}
    print(
        "| invocations | RSS MiB | RSS MiB without adk-otel | open spans | _runs "
        "| _runs_by_invocation | _orphans | ledger dicts | live runs | live entries |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        ledger = sum(v for k, v in row.items() if k.startswith("ledger."))
        print(
            f"| {row['invocations']} | {row['rss_mib']:.1f} | {row['bare_rss_mib']:.1f} "
            f"| {row['open_spans']} | {row['runs']} | {row['runs_by_invocation']} "
            f"| {row['orphans']} | {ledger} | {row['live_runs']} | {row['live_entries']} |"
        )
    print()
    # The pipeline's queue and the allocator's arenas fill up during the first
    # thousands of runs; growth is judged on the second half, after that.
    first, last = rows[len(rows) // 2], rows[-1]
    for label, key in (("with adk-otel", "rss_mib"), ("without", "bare_rss_mib")):
        per_1000 = (last[key] - first[key]) / ((last["invocations"] - first["invocations"]) / 1000)
        print(
            f"RSS growth over the second half ({first['invocations']} to {last['invocations']} "
            f"runs), {label}: {per_1000:+.2f} MiB / 1000 runs"
        )
    print(f"({untraced_s:.0f} s for {args.runs + 200} invocations with adk-otel)")
    print(
        "adk-otel's own live allocations (tracemalloc) after 0/25/50/75/100% of "
        f"{args.traced_runs} more invocations: " + ", ".join(f"{t['own_bytes']} B" for t in traced)
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
