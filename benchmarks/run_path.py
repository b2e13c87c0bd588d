"""One whole run's hooks, replayed: adk-otel against the yardsticks, hook by hook.

``overhead.py`` measures whole invocations, and its ratios move by a tenth
from run to run on a shared machine. This takes every plugin hook call of one
real run of each workload (``before_run`` to ``after_run``, the events
included, with the real ADK objects) and replays them in a tight loop with
the garbage collector off, for adk-otel's plugin, ``overhead.py``'s ``floor``
and the ``lean`` reference (``lean.py``). Each replayed run gets a fresh
``contextvars`` context with a run watch in it, as ``instrument()``'s runner
wrapper gives it, and ends with the wrapper's end (``wrapper_end``: where
adk-otel ends the invocation span). µs per run, median over ``--repeats``
interleaved repeats of ``--runs`` runs. What it leaves out is what every
plugin pays alike (ADK's own work and its dispatch of the hooks) and the
cost hook work adds to ADK's code around it (``hooks.py``'s "outside
hooks"): the ratios here are of the tracers' own work. One more thing differs
from a real run: every hook here runs in the one context, where ADK restores
its own context around a response, so a span a real run ends where it is not
current (and detaches later) is detached here at once.

Each configuration's bytecodes per run are counted too (``count_bytecodes``):
unlike the timer they are the same on every run, so a change to the hot path
shows at once, in either direction. Their ratio between two tracers has
tracked the timed ratio within a few hundredths.

Usage: ``python benchmarks/run_path.py [--repeats 7] [--runs 1000] [--json PATH]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import gc
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from hooks import HOOKS  # this directory: the benchmark scripts run from it
from report import emit  # this directory: the benchmark scripts run from it

HERE = Path(__file__).resolve().parent
WORKLOADS = ("single", "tool", "sequential")
CONFIGS = ("floor", "lean", "adk_otel")
WRAPPER_END = "wrapper_end"

Call = tuple[str, dict[str, Any]]


def capture_run(plugin: Any, workloads: Any, runner: Any) -> list[Call]:
    """Every hook call ``plugin`` (on ``runner``) sees in one run on a new
    session, in order, with its arguments; the plugin is left as it was."""
    calls: list[Call] = []

    def spy(hook: Any, hook_name: str) -> Any:
        async def call(**kwargs: Any) -> Any:
            calls.append((hook_name, kwargs))
            return await hook(**kwargs)

        return call

    for hook_name in HOOKS:
        object.__setattr__(plugin, hook_name, spy(getattr(plugin, hook_name), hook_name))
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(workloads.invoke_on_new_session(runner))
    finally:
        loop.close()
        for hook_name in HOOKS:
            object.__delattr__(plugin, hook_name)
    return calls


def _capture(provider: Any, workloads: Any, name: str) -> list[Call]:
    """Every hook call of one run of ``name`` under adk-otel's plugin (its
    second: on the first, adk-otel's ``before_run`` is called twice, once
    more after its close witness goes in front)."""
    from adk_otel.plugin import AdkOtelPlugin

    plugin = AdkOtelPlugin(tracer_provider=provider)
    runner = workloads.runner_for(name)
    runner.plugin_manager.plugins.insert(0, plugin)
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(workloads.invoke_on_new_session(runner))
    finally:
        loop.close()
    return capture_run(plugin, workloads, runner)


def drive(step: Any) -> None:
    """Run a hook's coroutine to its end (these hooks never await)."""
    try:
        step.send(None)
    except StopIteration:
        return
    raise RuntimeError("a hook awaited")


def _replay(plugin: Any, calls: list[Call], spent: Counter[str]) -> None:
    """One run's hooks on ``plugin``, each timed, then the wrapper's end."""
    from adk_otel.lifecycle.runner import CURRENT_WATCH, RunWatch
    from adk_otel.semconv import Outcome

    watch = RunWatch()
    CURRENT_WATCH.set(watch)
    clock = time.perf_counter_ns
    for hook_name, kwargs in calls:
        start = clock()
        drive(getattr(plugin, hook_name)(**kwargs))
        spent[hook_name] += clock() - start
    start = clock()
    watch.close_remaining(Outcome.INCOMPLETE, reason="no_after_run")
    spent[WRAPPER_END] += clock() - start


def _plugin(config: str, provider: Any) -> Any:
    from lean import lean_plugin
    from overhead import _floor_plugin

    from adk_otel.plugin import AdkOtelPlugin

    if config == "floor":
        return _floor_plugin(provider)
    if config == "lean":
        return lean_plugin(provider)
    plugin = AdkOtelPlugin(tracer_provider=provider)
    plugin.prepare()
    return plugin


BYTECODE_RUNS = 10
"""Replayed runs whose bytecodes are counted (the count is the same every run)."""


def count_bytecodes(plugin: Any, calls: list[Call]) -> float:
    """Bytecodes executed per replayed run by everything the hooks call (the
    replay loop's own frames aside), counted with ``sys.settrace``: the same
    number on every run, so two versions of the code compare without the
    timer's jitter. It counts interpreter steps, not their cost: a C call
    (the SDK's locks, ``dict`` work) is one step however long it takes."""
    count = 0
    here = __file__

    def trace(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if frame.f_code.co_filename == here:
            return None  # the replay's own loop: not the tracer's work
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        if event == "opcode":
            count += 1
        return trace

    spent: Counter[str] = Counter()
    sys.settrace(trace)
    try:
        for _ in range(BYTECODE_RUNS):
            contextvars.copy_context().run(_replay, plugin, calls, spent)
    finally:
        sys.settrace(None)
    return count / BYTECODE_RUNS


async def _measure_workload(
    provider: Any, calls: list[Call], repeats: int, runs: int
) -> dict[str, dict[str, float]]:
    # Run inside a task, as ADK's hooks are: the tracers read the current task.
    plugins = {config: _plugin(config, provider) for config in CONFIGS}
    samples: dict[str, list[Counter[str]]] = {config: [] for config in CONFIGS}
    for number in range(repeats + 1):  # the first repeat warms up
        shift = number % len(CONFIGS)
        for config in CONFIGS[shift:] + CONFIGS[:shift]:
            spent: Counter[str] = Counter()
            for _ in range(runs):
                contextvars.copy_context().run(_replay, plugins[config], calls, spent)
            if number:
                samples[config].append(spent)
            gc.collect()
    table: dict[str, dict[str, float]] = {}
    for config, repeated in samples.items():
        keys = [k for k in (*HOOKS, WRAPPER_END) if any(k in s for s in repeated)]
        row = {k: statistics.median(s[k] / runs / 1e3 for s in repeated) for k in keys}
        row["total"] = statistics.median(sum(s.values()) / runs / 1e3 for s in repeated)
        row["bytecodes"] = count_bytecodes(plugins[config], calls)
        table[config] = row
    return table


def measure(repeats: int, runs: int) -> dict[str, Any]:
    from opentelemetry import trace

    from adk_otel.pipeline.provider import build_tracer_provider

    sys.path.insert(0, str(HERE))
    from overhead import _noop_exporter

    provider = build_tracer_provider(exporter=_noop_exporter())
    trace.set_tracer_provider(provider)
    import workloads

    result: dict[str, Any] = {}
    gc.disable()
    try:
        for name in WORKLOADS:
            calls = _capture(provider, workloads, name)
            result[name] = asyncio.run(_measure_workload(provider, calls, repeats, runs))
    finally:
        gc.enable()
        provider.shutdown()
    return result


def markdown(result: dict[str, Any]) -> str:
    columns = [h.removesuffix("_callback") for h in HOOKS] + [WRAPPER_END]
    lines = [
        "| workload | configuration | µs per run | x floor | x lean "
        "| bytecodes per run | bytecodes x lean | " + " | ".join(columns) + " |",
        "|---" * (7 + len(columns)) + "|",
    ]
    for name, table in result.items():
        for config, row in table.items():
            cells = " | ".join(f"{row.get(k, 0.0):.1f}" for k in (*HOOKS, WRAPPER_END))
            lines.append(
                f"| {name} | {config} | {row['total']:.1f} "
                f"| {row['total'] / table['floor']['total']:.2f} "
                f"| {row['total'] / table['lean']['total']:.2f} "
                f"| {row['bytecodes']:.0f} "
                f"| {row['bytecodes'] / table['lean']['bytecodes']:.3f} | {cells} |"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=7, help="interleaved repeats")
    parser.add_argument("--runs", type=int, default=1000, help="replayed runs per repeat")
    parser.add_argument("--json", type=Path, help="also write the results here")
    options = parser.parse_args()
    result = measure(options.repeats, options.runs)
    return emit(markdown(result), result, options.json)


if __name__ == "__main__":
    sys.exit(main())
