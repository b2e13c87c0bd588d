"""What each of lean's guarantees costs: its pieces switched off one at a time.

``lean.py`` keeps adk-otel's core guarantees the lean way; each guarantee is
one piece of it that can be switched off (``lean.PIECES``). What a piece
costs is what switching it off saves, measured three ways on the benchmark
workloads:

* ``calls``: Python and C calls per invocation on the agent's thread over
  ``bare`` (``calls.py``'s counter, ``sys.setprofile``): deterministic, the
  same on every run, the whole invocation (ADK's generator driven by the
  runner wrapper included);
* ``replay bytecodes``: the bytecodes everything the replayed hooks call
  executes per run (below; ``sys.settrace``): deterministic too;
* ``replay µs``: the hooks of one real run replayed on the captured ADK
  objects in a tight loop, collector off (``run_path.py``'s method), thread
  CPU time, the fastest of ``--repeats`` interleaved repeats of ``--runs``
  runs (interference from other processes only slows a repeat down): the
  hooks' own work, without ADK's; a piece is a few µs, within what a
  loaded machine moves a run by, so only on a quiet machine;
* ``wrapper µs``: the runner wrapper driving a generator that yields as many
  events as the workload (what it adds around ADK's generator, which the
  replay leaves out), against the generator iterated directly (fastest
  repeats, likewise).

A piece switched off makes lean wrong in the way its test in
``tests/benchmarks/test_yardsticks.py`` shows; the variants exist only to be
measured. ``floor``'s and adk-otel's calls are given beside for scale.

Usage: ``python benchmarks/lean_profile.py [--repeats 15] [--runs 200] [--json PATH]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import gc
import sys
import time
from pathlib import Path
from typing import Any

from report import emit  # this directory: the benchmark scripts run from it

HERE = Path(__file__).resolve().parent
WORKLOADS = ("single", "tool", "sequential")
INVOCATIONS = 5
EVENTS = {"single": 1, "tool": 3, "sequential": 3}
"""Events ADK yields per invocation of each workload (through the wrapper)."""
GUARANTEES = {
    "attach": "spans current for their layer's callbacks and library spans "
    "(attach, re-attach, detach where current)",
    "deferred": "ends after the layer's callbacks (at the response event, "
    "the next sibling, the wrapper's end)",
    "wrapper": "every span ended on cancellation and early close "
    "(adk-otel's runner wrapper, one closer per run)",
    "rollups": "roll-ups: calls, errors, tokens on agent and invocation spans",
    "outcomes": "outcome checks: closed early, cancelling, is_aborted, abort in flight",
    "reading": "attributes read from ADK's objects (cached per agent, tool, model, app; "
    "ids per run; responses per call)",
    "runs": "concurrent runs kept apart (a run found by invocation id)",
}


def _variants() -> dict[str, frozenset[str]]:
    import lean

    return {"lean": frozenset(), **{f"-{p}": frozenset({p}) for p in lean.PIECES}}


# -- calls ----------------------------------------------------------------------


def count_calls() -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """Calls over ``bare`` per invocation (floor, lean and each variant,
    adk-otel), and the part of them made by the tracer's own code (its file
    and the adk-otel code it calls: ``calls.py``'s ``own``)."""
    from opentelemetry import trace

    import adk_otel
    from adk_otel.pipeline.provider import build_tracer_provider

    sys.path.insert(0, str(HERE))
    import lean
    import workloads
    from calls import CallCounter
    from overhead import _floor_plugin, _noop_exporter

    provider = build_tracer_provider(exporter=_noop_exporter())
    trace.set_tracer_provider(provider)
    package_dir = str(Path(adk_otel.__file__).resolve().parent)
    loop = asyncio.new_event_loop()
    table: dict[str, dict[str, float]] = {}
    own: dict[str, dict[str, float]] = {}
    files = (str(HERE / "overhead.py"), str(HERE / "lean.py"))
    try:
        for name in WORKLOADS:
            configs: dict[str, Any] = {"bare": workloads.runner_for(name)}
            floor = configs["floor"] = workloads.runner_for(name)
            floor.plugin_manager.plugins.insert(0, _floor_plugin(provider))
            for variant, off in _variants().items():
                runner = configs[variant] = workloads.runner_for(name)
                lean.install(runner, provider, off)
            configs["adk_otel"] = adk_otel.instrument(
                workloads.runner_for(name), tracer_provider=provider
            )
            totals, mine = {}, {}
            for config, runner in configs.items():
                for _ in range(2):  # warm-up: first-call paths, caches
                    loop.run_until_complete(workloads.invoke_on_new_session(runner))
                counter = CallCounter(package_dir, files)

                async def invocations(runner: Any = runner) -> None:
                    for _ in range(INVOCATIONS):
                        await workloads.invoke_on_new_session(runner)

                sys.setprofile(counter)
                try:
                    loop.run_until_complete(invocations())
                finally:
                    sys.setprofile(None)
                totals[config] = counter.total / INVOCATIONS
                mine[config] = counter.own / INVOCATIONS
            table[name] = {c: t - totals["bare"] for c, t in totals.items() if c != "bare"}
            own[name] = {c: t - mine["bare"] for c, t in mine.items() if c != "bare"}
    finally:
        loop.close()
        provider.shutdown()
    return table, own


# -- replayed hooks ---------------------------------------------------------------


def _replay(plugin: Any, calls: list[Any], watched: bool) -> None:
    """One run's hooks on ``plugin``, then the wrapper's end (``watched``:
    with a run watch, as the runner wrapper gives a run)."""
    from run_path import drive

    from adk_otel.lifecycle.runner import CURRENT_WATCH, RunWatch
    from adk_otel.semconv import Outcome

    watch = RunWatch() if watched else None
    CURRENT_WATCH.set(watch)
    for hook_name, kwargs in calls:
        drive(getattr(plugin, hook_name)(**kwargs))
    if watch is not None:
        watch.close_remaining(Outcome.INCOMPLETE, reason="no_after_run")


BYTECODE_RUNS = 5
"""Replayed runs whose bytecodes are counted (the count is the same every run)."""


def count_bytecodes(plugin: Any, calls: list[Any], watched: bool) -> float:
    """Bytecodes executed per replayed run by everything the hooks call, the
    replay's own frames aside (``run_path.count_bytecodes``'s count)."""
    import run_path

    count = 0
    replay_files = (__file__, run_path.__file__)

    def trace(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if frame.f_code.co_filename in replay_files:
            return None
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        if event == "opcode":
            count += 1
        return trace

    sys.settrace(trace)
    try:
        for _ in range(BYTECODE_RUNS):
            contextvars.copy_context().run(_replay, plugin, calls, watched)
    finally:
        sys.settrace(None)
    return count / BYTECODE_RUNS


async def _replay_workload(
    provider: Any, calls: list[Any], repeats: int, runs: int
) -> dict[str, dict[str, float]]:
    # Inside a task, as ADK's hooks are: lean reads the current task.
    import lean

    variants = _variants()
    plugins = {v: lean.lean_plugin(provider, off) for v, off in variants.items()}
    samples: dict[str, list[float]] = {v: [] for v in variants}
    order = list(variants)
    clock = time.thread_time_ns  # CPU time: the machine may be shared
    for number in range(repeats + 1):  # the first repeat warms up
        shift = number % len(order)
        for variant in order[shift:] + order[:shift]:
            plugin, watched = plugins[variant], "wrapper" not in variants[variant]
            start = clock()
            for _ in range(runs):
                contextvars.copy_context().run(_replay, plugin, calls, watched)
            elapsed = clock() - start
            if number:
                samples[variant].append(elapsed / runs / 1e3)
            gc.collect()
    # The fastest repeat: what interference from other processes adds only
    # slows a repeat down, so the minimum is the steadiest reading of the work.
    return {
        v: {
            "us": min(samples[v]),
            "bytecodes": count_bytecodes(plugins[v], calls, "wrapper" not in variants[v]),
        }
        for v in variants
    }


def replay(repeats: int, runs: int) -> dict[str, dict[str, dict[str, float]]]:
    from opentelemetry import trace

    from adk_otel.pipeline.provider import build_tracer_provider

    sys.path.insert(0, str(HERE))
    import workloads
    from overhead import _noop_exporter
    from run_path import _capture

    provider = build_tracer_provider(exporter=_noop_exporter())
    trace.set_tracer_provider(provider)
    table: dict[str, dict[str, dict[str, float]]] = {}
    gc.disable()
    try:
        for name in WORKLOADS:
            calls = _capture(provider, workloads, name)
            table[name] = asyncio.run(_replay_workload(provider, calls, repeats, runs))
    finally:
        gc.enable()
        provider.shutdown()
    return table


# -- the wrapper around ADK's generator ---------------------------------------------


def wrapper_cost(repeats: int, runs: int) -> dict[str, float]:
    """µs per run the runner wrapper adds around a generator yielding the
    workload's events (its closer aside: a run with none registered)."""
    from adk_otel.lifecycle.runner import _watched

    async def events(count: int) -> Any:
        for number in range(count):
            yield number

    async def consume(count: int, wrapped: bool) -> None:
        inner = events(count)
        async for _ in _watched(inner) if wrapped else inner:
            pass

    async def measure(count: int) -> float:
        spent: dict[bool, list[float]] = {False: [], True: []}
        for number in range(repeats + 1):
            for wrapped in (False, True) if number % 2 else (True, False):
                start = time.thread_time_ns()
                for _ in range(runs):
                    await consume(count, wrapped)
                if number:
                    spent[wrapped].append((time.thread_time_ns() - start) / runs / 1e3)
        return min(spent[True]) - min(spent[False])

    gc.disable()
    try:
        return {name: asyncio.run(measure(count)) for name, count in EVENTS.items()}
    finally:
        gc.enable()


# -- report -------------------------------------------------------------------------


def measure(repeats: int, runs: int) -> dict[str, Any]:
    calls, own = count_calls()
    return {
        "calls_over_bare": calls,
        "own_calls": own,
        "replay_us": replay(repeats, runs),
        "wrapper_us": wrapper_cost(repeats, runs),
    }


def markdown(result: dict[str, Any]) -> str:
    calls, replayed, wrapper = result["calls_over_bare"], result["replay_us"], result["wrapper_us"]
    names = " / ".join(WORKLOADS)
    lines = [
        f"| piece switched off | guarantee it keeps | calls saved ({names}) "
        f"| of which by the tracer's code | replay bytecodes saved | replay µs saved |",
        "|---|---|---|---|---|---|",
    ]

    def cells(values: list[float], digits: int) -> str:
        return " / ".join(f"{v:.{digits}f}" for v in values)

    def saved(key: str, piece: str) -> list[float]:
        return [replayed[n]["lean"][key] - replayed[n][f"-{piece}"][key] for n in WORKLOADS]

    for piece, guarantee in GUARANTEES.items():
        fewer = [calls[n]["lean"] - calls[n][f"-{piece}"] for n in WORKLOADS]
        own = result["own_calls"]
        fewer_own = [own[n]["lean"] - own[n][f"-{piece}"] for n in WORKLOADS]
        faster = cells(saved("us", piece), 1)
        if piece == "wrapper":
            faster += f" (closer; around ADK's generator: {cells(list(wrapper.values()), 1)})"
        lines.append(
            f"| {piece} | {guarantee} | {cells(fewer, 0)} | {cells(fewer_own, 0)} "
            f"| {cells(saved('bytecodes', piece), 0)} | {faster} |"
        )
    lines += [
        "",
        f"| configuration | calls over bare ({names}) | replay bytecodes per run "
        f"| replay µs per run |",
        "|---|---|---|---|",
    ]
    for config in ("floor", "lean", "adk_otel"):
        per_run = [
            cells([replayed[n][config][k] for n in WORKLOADS], d) if config == "lean" else "-"
            for k, d in (("bytecodes", 0), ("us", 1))
        ]
        lines.append(
            f"| {config} | {cells([calls[n][config] for n in WORKLOADS], 0)} "
            f"| {per_run[0]} | {per_run[1]} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=15, help="interleaved repeats")
    parser.add_argument("--runs", type=int, default=200, help="replayed runs per repeat")
    parser.add_argument("--json", type=Path, help="also write the results here")
    options = parser.parse_args()
    result = measure(options.repeats, options.runs)
    return emit(markdown(result), result, options.json)


if __name__ == "__main__":
    sys.exit(main())
