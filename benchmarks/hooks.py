"""Where the time goes: CPU µs per invocation inside each plugin hook, and outside them.

``overhead.py`` says how much adk-otel costs; this says where. For adk-otel
(under ``instrument()``), the ``floor`` and ``fair_floor`` yardsticks
(``overhead.py``), ``lean`` (adk-otel's attributes and core guarantees, built
lean: ``lean.py``) and adk-otel's plugin on its own (``plugin_only``: the same
hooks without ``instrument()``'s runner wrapper), it times each hook's work,
and the invocation as a whole, with the thread's CPU clock, over interleaved
samples (the method of ``overhead.py``). The hooks never await, so one step of
the hook's coroutine is all of its work. ``outside hooks`` = the invocation
over ``bare``, minus the time in hooks: the runner wrapper, and ADK's own
work made costlier by the plugin (dispatch of the hooks it implements, code
that runs while a span of the plugin is current, collection of what it
allocates). ``collections`` = the garbage collector's runs per invocation (any
generation): what the allocations of a configuration make ADK's large heap
pay, wherever they land. With ``--no-gc`` the collector is off while samples
are timed (one full collection per round, off the clock), so a collection
no longer lands in whichever hook happens to be running.

Usage: ``python benchmarks/hooks.py [--rounds 25] [--batch 20] [--no-gc] [--json PATH]``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from report import emit  # this directory: the benchmark scripts run from it

HERE = Path(__file__).resolve().parent
CONFIGS = ("bare", "floor", "fair_floor", "lean", "plugin_only", "adk_otel")
WORKLOADS = ("single", "tool", "sequential")
HOOKS = (
    "before_run_callback",
    "before_agent_callback",
    "before_model_callback",
    "after_model_callback",
    "before_tool_callback",
    "after_tool_callback",
    "on_event_callback",
    "after_agent_callback",
    "after_run_callback",
)
PLUGINS = ("adk_otel", "floor", "fair_floor", "lean")


class Bench:
    """One runner per (workload, configuration), hooks timed."""

    def __init__(self) -> None:
        from opentelemetry import trace

        from adk_otel.pipeline.provider import build_tracer_provider

        sys.path.insert(0, str(HERE))
        from overhead import (
            YARDSTICKS,
            _adk_otel_attribute_counts,
            adk_spans_configurator,
            install_yardstick,
        )
        from overhead import _noop_exporter as noop

        self.provider = build_tracer_provider(exporter=noop())
        trace.set_tracer_provider(self.provider)
        # ADK's own spans off everywhere, as in calls.py: "outside hooks" is
        # taken over ``bare``, which would record them where adk-otel does not.
        self.provider._set_tracer_configurator(tracer_configurator=adk_spans_configurator(False))
        import workloads

        import adk_otel
        from adk_otel.plugin import AdkOtelPlugin

        self.workloads = workloads
        self.spent: dict[tuple[str, str], Counter[str]] = {}
        self.runners: dict[tuple[str, str], Any] = {}
        for name in WORKLOADS:
            counts = _adk_otel_attribute_counts(workloads, name)
            for config in CONFIGS:
                runner = workloads.runner_for(name)
                plugins = runner.plugin_manager.plugins
                if config == "adk_otel":
                    adk_otel.instrument(runner, tracer_provider=self.provider)
                elif config == "plugin_only":
                    plugins.insert(0, AdkOtelPlugin(tracer_provider=self.provider))
                elif config in YARDSTICKS:
                    install_yardstick(runner, config, self.provider, counts)
                spent = self.spent[name, config] = Counter()
                for plugin in plugins:
                    if plugin.name in PLUGINS:
                        for hook in HOOKS:
                            timed = _timed(spent, hook, getattr(plugin, hook))
                            object.__setattr__(plugin, hook, timed)
                self.runners[name, config] = runner

    async def sample(self, name: str, config: str, batch: int) -> tuple[float, Counter[str], float]:
        """Thread CPU µs per invocation, per hook, and the collector's runs
        per invocation, over ``batch`` invocations."""
        runner, w = self.runners[name, config], self.workloads
        sessions = [await w.new_session(runner) for _ in range(batch)]
        spent = self.spent[name, config]
        spent.clear()
        runs = _collections()
        start = time.thread_time_ns()
        for session_id in sessions:
            await w.invoke(runner, session_id)
        elapsed = time.thread_time_ns() - start
        runs = _collections() - runs
        await w.delete_sessions(runner, sessions)
        per_hook = Counter({hook: ns / batch / 1e3 for hook, ns in spent.items()})
        return elapsed / batch / 1e3, per_hook, runs / batch


def _collections() -> int:
    return sum(generation["collections"] for generation in gc.get_stats())


def _timed(spent: Counter[str], name: str, hook: Any) -> Any:
    async def run(**kwargs: Any) -> Any:
        start = time.thread_time_ns()
        step = hook(**kwargs)
        try:
            step.send(None)
        except StopIteration as done:
            spent[name] += time.thread_time_ns() - start
            return done.value
        raise RuntimeError(f"{name} awaited")

    return run


def measure(rounds: int, batch: int, no_gc: bool = False) -> dict[str, Any]:
    bench = Bench()
    loop = asyncio.new_event_loop()
    table: dict[str, Any] = {}
    if no_gc:
        gc.disable()
    try:
        for name in WORKLOADS:
            for config in CONFIGS:  # warm-up
                loop.run_until_complete(bench.sample(name, config, batch))
            gc.collect()
            totals: dict[str, list[float]] = {c: [] for c in CONFIGS}
            hooks: dict[str, list[Counter[str]]] = {c: [] for c in CONFIGS}
            runs: dict[str, list[float]] = {c: [] for c in CONFIGS}
            for number in range(rounds):
                shift = number % len(CONFIGS)
                for config in CONFIGS[shift:] + CONFIGS[:shift]:
                    total, per_hook, collected = loop.run_until_complete(
                        bench.sample(name, config, batch)
                    )
                    totals[config].append(total)
                    hooks[config].append(per_hook)
                    runs[config].append(collected)
                if no_gc:
                    gc.collect()
            table[name] = _rows(totals, hooks, runs)
            print(f"{name} done", file=sys.stderr)
    finally:
        gc.enable()
        loop.close()
        bench.provider.shutdown()
    return table


def _rows(
    totals: dict[str, list[float]],
    hooks: dict[str, list[Counter[str]]],
    runs: dict[str, list[float]],
) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for config in CONFIGS[1:]:
        over = statistics.median(t - b for t, b in zip(totals[config], totals["bare"], strict=True))
        per_hook = {
            hook: statistics.median(sample.get(hook, 0.0) for sample in hooks[config])
            for hook in HOOKS
        }
        in_hooks = statistics.median(sum(sample.values()) for sample in hooks[config])
        rows[config] = {
            "over_bare": over,
            "in_hooks": in_hooks,
            "hooks": per_hook,
            "collections": statistics.mean(runs[config]),
        }
    return rows


def markdown(table: dict[str, Any]) -> str:
    short = [h.removesuffix("_callback") for h in HOOKS]
    lines = [
        "| workload | configuration | over bare | in hooks | outside hooks | collections | "
        + " | ".join(short)
        + " |",
        "|---" * (6 + len(HOOKS)) + "|",
    ]
    for name, rows in table.items():
        for config, row in rows.items():
            cells = " | ".join(f"{row['hooks'][h]:.0f}" for h in HOOKS)
            lines.append(
                f"| {name} | {config} | {row['over_bare']:.0f} | {row['in_hooks']:.0f} "
                f"| {row['over_bare'] - row['in_hooks']:.0f} | {row['collections']:.2f} "
                f"| {cells} |"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=25, help="rounds per workload")
    parser.add_argument("--batch", type=int, default=20, help="invocations per sample")
    parser.add_argument(
        "--no-gc", action="store_true", help="collector off while samples are timed"
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    options = parser.parse_args()
    table = measure(options.rounds, options.batch, options.no_gc)
    return emit(markdown(table), table, options.json)


if __name__ == "__main__":
    sys.exit(main())
