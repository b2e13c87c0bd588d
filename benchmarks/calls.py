"""Function calls per invocation: a deterministic measure of adk-otel's own work.

Wall and CPU time jitter on a shared 2-core machine; call counts do not. The
same workload on the same releases makes exactly the same calls, run after
run, so a regression guard can compare them exactly where a timer needs
dozens of interleaved rounds (``overhead.py``).

Counted with ``sys.setprofile`` on the thread that runs the agent (the export
thread's work is not adk-otel's per-invocation work), per invocation on a new
session:

* ``own``: calls *made by* adk-otel's code: every Python or C function called
  from a frame of the ``adk_otel`` package, ``adk_otel.testing`` (the scripted
  model standing in for an LLM) aside (its own helpers, the SDK's span
  methods, builtins like ``getattr``). This depends on adk-otel alone, not on
  how many calls ADK or the SDK make inside what adk-otel calls, so it is the
  number the CI guard holds to a budget (``results/call_budget.json``, one
  entry per google-adk minor release). Calls made from the yardsticks' own
  files (``overhead.py``, ``lean.py``) count too, so a yardstick's ``own`` is
  its code's calls plus those of the adk-otel code it uses (``lean``: the
  runner wrapper and the attribute readers). Every configuration, ``bare``
  included, has a few: once adk-otel is set up in a process, ADK's own
  tracer calls go through adk-otel's node tracer.
* ``total_over_bare``: every call on that thread, minus the same workload with
  no tracing at all: what the process does more, SDK internals included. The
  floor plugin (one span per hook pair) and the empty plugin (hooks that
  return at once) are measured the same way, as yardsticks.
* ``blocks``: memory blocks the plugin's hooks leave allocated per invocation
  (``sys.getallocatedblocks()`` before and after each hook that opens a
  span, summed over the invocation; median over the invocations): what the
  open spans hold (the SDK span, adk-otel's entry and records, attribute
  dicts, contexts). Deterministic too (the hooks never await); the guard
  holds it to the budget as it holds the calls.

Usage::

    python benchmarks/calls.py                  # table
    python benchmarks/calls.py --check          # exit 1 if `own` is over budget
    python benchmarks/calls.py --update-budget  # record this release's counts
    python benchmarks/calls.py --trace single:adk_otel  # each own call of one invocation
    python benchmarks/calls.py --by-hook        # adk-otel's and lean's own calls, hook by hook
    python benchmarks/calls.py --by-hook --sampled  # the same, sampled_0 and floor_sampled_0

``--trace`` lists the ``own`` calls of one invocation in order, ``caller ->
callee``, so two tracers' work can be compared call by call (benchmarks/
README.md classifies adk-otel's against ``lean``'s). Calls made in code every
tracer shares (``SHARED``: ADK's node tracing, the export processor, the
runner wrapper) are marked ``shared``. ``--by-hook`` counts the same calls per
invocation for ``adk_otel`` and ``lean``, each under the plugin hook (or the
runner wrapper) innermost on the stack when it was made, those in shared code
on a row of their own.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import statistics
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from hooks import HOOKS  # this directory: the benchmark scripts run from it

HERE = Path(__file__).resolve().parent
BUDGET = HERE / "results" / "call_budget.json"
CONFIGS = (
    "bare",
    "empty",
    "floor",
    "fair_floor",
    "lean",
    "adk_otel",
    "sampled_0",
    "floor_sampled_0",
)
YARDSTICKS = ("empty", "floor", "fair_floor", "lean")
WORKLOADS = ("single", "tool", "sequential")
INVOCATIONS = 5
OPENING_HOOKS = (
    "before_run_callback",
    "before_agent_callback",
    "before_model_callback",
    "before_tool_callback",
)
"""The hooks that open a span: what they leave allocated is what a span holds."""
TRACERS = ("adk_otel", "floor", "fair_floor", "lean")
GUARDED = {
    "": ("adk_otel", "own"),
    "blocks": ("adk_otel", "blocks"),
    "sampled_0": ("sampled_0", "own"),
}
"""The budget's keys, ``<workload>`` or ``<workload>/<suffix>``, by suffix:
which configuration's which count each holds (a sampled-out run's own calls
on their own row, so a change that costs more there fails the guard too)."""
"""Plugin names whose span-opening hooks ``blocks`` measures."""
SHARED = ("lifecycle/nodes.py", "pipeline/export.py", "lifecycle/runner.py")
"""adk-otel's files whose calls every configuration makes alike (``--trace``):
ADK's node tracing goes through adk-otel's tracer once it is set up in the
process, every tracer exports through the same processor, and ``lean`` drives
ADK through adk-otel's runner wrapper."""
MARGIN = 1.03
"""A count may exceed its budget by this factor before the guard fails: room
for a patch release of ADK or the SDK, none for a new per-span cost."""


class CallCounter:
    """``sys.setprofile`` callback counting calls, total and from adk-otel frames."""

    def __init__(self, package_dir: str, files: tuple[str, ...] = ()) -> None:
        self.package_dir = package_dir
        self.testing_dir = str(Path(package_dir, "testing"))
        self.files = files
        """Files outside the package whose code counts as ours (the yardsticks')."""
        self.total = 0
        self.own = 0
        self._ours: dict[Any, bool] = {}

    def _is_ours(self, frame: FrameType | None) -> bool:
        if frame is None:
            return False
        code = frame.f_code
        ours = self._ours.get(code)
        if ours is None:
            name = code.co_filename
            # The scripted model lives in adk_otel.testing but stands in for an LLM.
            ours = (
                name.startswith(self.package_dir) and not name.startswith(self.testing_dir)
            ) or name in self.files
            self._ours[code] = ours
        return ours

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            self.total += 1
            if self._is_ours(frame.f_back):
                self.own += 1
        elif event == "c_call":
            self.total += 1
            if self._is_ours(frame):
                self.own += 1


class CallTracer(CallCounter):
    """A :class:`CallCounter` that also writes down each own call, in order."""

    def __init__(self, package_dir: str, files: tuple[str, ...] = ()) -> None:
        super().__init__(package_dir, files)
        self.calls: list[str] = []

    def _name(self, code: Any) -> str:
        path = code.co_filename
        for prefix in (self.package_dir, str(HERE)):
            if path.startswith(prefix):
                path = path[len(prefix) :].lstrip("/")
                break
        else:
            path = "/".join(Path(path).parts[-2:])
        return f"{path}:{code.co_qualname}"

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        own = self.own
        super().__call__(frame, event, arg)
        if self.own == own:
            return
        caller = frame.f_back if event == "call" else frame
        assert caller is not None  # an own call has a caller of ours
        if event == "call":
            callee = self._name(frame.f_code)
        else:
            callee = f"C {getattr(arg, '__qualname__', type(arg).__qualname__)}"
        where = self._name(caller.f_code)
        shared = "shared " if where.startswith(SHARED) else ""
        self.calls.append(f"{shared}{where} -> {callee}")


HOOK_ROWS = (*HOOKS, "the runner wrapper", "shared code", "elsewhere")
"""``--by-hook``'s rows: the hooks the workloads run, then calls made in the
runner wrapper outside any hook (its steps and its closer, which ends what a
run left open), in code every tracer shares, and anywhere else."""


class HookCounter(CallCounter):
    """A :class:`CallCounter` that also counts each own call under the plugin
    hook innermost on the stack (``HOOK_ROWS``)."""

    def __init__(self, package_dir: str, files: tuple[str, ...] = ()) -> None:
        super().__init__(package_dir, files)
        self.rows: dict[str, int] = dict.fromkeys(HOOK_ROWS, 0)
        self._wrapper = str(Path(package_dir, "lifecycle", "runner.py"))
        self._shared = tuple(str(Path(package_dir, path)) for path in SHARED)

    def _row(self, caller: FrameType) -> str:
        if caller.f_code.co_filename.startswith(self._shared):
            return "shared code"
        frame: FrameType | None = caller
        while frame is not None:
            code = frame.f_code
            if code.co_name in self.rows and self._is_ours(frame):
                return code.co_name
            if code.co_filename == self._wrapper:
                return "the runner wrapper"
            frame = frame.f_back
        return "elsewhere"

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        own = self.own
        super().__call__(frame, event, arg)
        if self.own != own:
            caller = frame.f_back if event == "call" else frame
            assert caller is not None  # an own call has a caller of ours
            self.rows[self._row(caller)] += 1


def by_hook(pair: tuple[str, str] = ("adk_otel", "lean")) -> dict[str, dict[str, dict[str, float]]]:
    """Own calls per invocation, hook by hook: workload -> configuration -> row,
    for ``pair`` (adk-otel's configuration, then the yardstick's)."""
    table: dict[str, dict[str, dict[str, float]]] = {}
    with _bench() as (bench, loop):
        for name in WORKLOADS:
            table[name] = {}
            for config in pair:
                counter = HookCounter(bench.package_dir, bench.files)
                bench.count(loop, name, config, counter=counter)
                table[name][config] = {
                    row: calls / INVOCATIONS for row, calls in counter.rows.items() if calls
                }
    return table


def hook_markdown(
    table: dict[str, dict[str, dict[str, float]]], pair: tuple[str, str] = ("adk_otel", "lean")
) -> str:
    ours, theirs = pair
    lines = [
        "| hook | " + " | ".join(f"{name}: {ours} / {theirs}" for name in table) + " |",
        "|---|" + "---|" * len(table),
    ]
    for row in HOOK_ROWS:
        cells = [
            f"{table[name][ours].get(row, 0):g} / {table[name][theirs].get(row, 0):g}"
            for name in table
        ]
        if any(cell != "0 / 0" for cell in cells):
            lines.append(f"| {row} | " + " | ".join(cells) + " |")
    totals = [
        f"{sum(table[name][ours].values()):g} / {sum(table[name][theirs].values()):g}"
        for name in table
    ]
    lines.append("| **total** | " + " | ".join(totals) + " |")
    return "\n".join(lines)


@contextlib.contextmanager
def hooked(install: Callable[[Any], None], hook: Any) -> Iterator[None]:
    """``hook`` installed with ``install`` (``sys.setprofile`` or ``sys.settrace``)
    and the garbage collector off for the block: a collection that happened
    to run inside it would call whatever weak-reference callbacks are due, and
    the count would hang on when the collector last ran rather than on the code."""
    collecting = gc.isenabled()
    gc.collect()
    gc.disable()
    install(hook)
    try:
        yield
    finally:
        install(None)
        if collecting:
            gc.enable()


class Bench:
    """One runner per (workload, configuration) on a provider built as adk-otel
    builds one, with an exporter that drops the spans."""

    def __init__(self) -> None:
        from opentelemetry import trace

        import adk_otel
        from adk_otel.pipeline.provider import build_tracer_provider

        sys.path.insert(0, str(HERE))
        from overhead import (
            _adk_otel_attribute_counts,
            _noop_exporter,
            _sampled_provider,
            adk_spans_configurator,
            install_yardstick,
        )

        self.provider = build_tracer_provider(exporter=_noop_exporter())
        trace.set_tracer_provider(self.provider)
        # ADK's own spans off in every configuration, as overhead.py has them
        # for all but ``adk``: else "calls over bare" compares unlike runs.
        self.provider._set_tracer_configurator(tracer_configurator=adk_spans_configurator(False))
        self.sampled = _sampled_provider(0.0, _noop_exporter())
        import workloads

        self.workloads = workloads
        self.package_dir = str(Path(adk_otel.__file__).resolve().parent)
        self.files = (str(HERE / "overhead.py"), str(HERE / "lean.py"))
        self.runners: dict[tuple[str, str], Any] = {}
        for name in WORKLOADS:
            counts = _adk_otel_attribute_counts(workloads, name)
            for config in CONFIGS:
                runner = workloads.runner_for(name)
                if config == "adk_otel":
                    adk_otel.instrument(runner, tracer_provider=self.provider)
                elif config == "sampled_0":
                    adk_otel.instrument(runner, tracer_provider=self.sampled)
                elif config == "floor_sampled_0":
                    install_yardstick(runner, "floor", self.sampled, counts)
                elif config in YARDSTICKS:
                    install_yardstick(runner, config, self.provider, counts)
                self.runners[name, config] = runner
        # adk-otel switched ADK's own scope off on this provider: every
        # configuration runs without ADK's spans, as `bare` must.

    def close(self) -> None:
        """Shut both providers down (their export threads with them)."""
        self.provider.shutdown()
        self.sampled.shutdown()

    def count(
        self,
        loop: asyncio.AbstractEventLoop,
        name: str,
        config: str,
        *,
        invocations_counted: int = INVOCATIONS,
        counter: CallCounter | None = None,
    ) -> CallCounter:
        runner = self.runners[name, config]
        invoke: Callable[[Any], Any] = self.workloads.invoke_on_new_session
        for _ in range(2):  # warm-up: first-call paths, caches
            loop.run_until_complete(invoke(runner))

        async def invocations() -> None:
            for _ in range(invocations_counted):
                await invoke(runner)

        if counter is None:
            counter = CallCounter(self.package_dir, self.files)
        with hooked(sys.setprofile, counter):
            loop.run_until_complete(invocations())
        return counter

    def blocks(self, loop: asyncio.AbstractEventLoop, name: str, config: str) -> float:
        """Median over invocations of the memory blocks the span-opening hooks
        leave allocated (0 with no plugin)."""
        runner = self.runners[name, config]
        plugins = [p for p in runner.plugin_manager.plugins if p.name in TRACERS]
        if not plugins:
            return 0.0
        held = [0]

        def counted(hook: Callable[..., Any]) -> Callable[..., Any]:
            async def run(**kwargs: Any) -> Any:
                step = hook(**kwargs)  # the hooks never await: one step runs them
                # No collection inside the hook: one that happens to run there
                # frees other objects' blocks and hides what the span holds.
                collecting = gc.isenabled()
                gc.disable()
                before = sys.getallocatedblocks()
                try:
                    step.send(None)
                except StopIteration as done:
                    held[0] += sys.getallocatedblocks() - before
                    return done.value
                finally:
                    if collecting:
                        gc.enable()
                raise RuntimeError(f"{hook.__name__} awaited")

            return run

        for plugin in plugins:
            for hook_name in OPENING_HOOKS:
                object.__setattr__(plugin, hook_name, counted(getattr(plugin, hook_name)))
        per_invocation = []
        try:
            for _ in range(INVOCATIONS):
                held[0] = 0
                loop.run_until_complete(self.workloads.invoke_on_new_session(runner))
                per_invocation.append(held[0])
        finally:
            for plugin in plugins:
                for hook_name in OPENING_HOOKS:
                    object.__delattr__(plugin, hook_name)
        return float(statistics.median(per_invocation))


@contextlib.contextmanager
def _bench() -> Iterator[tuple[Bench, asyncio.AbstractEventLoop]]:
    """A :class:`Bench` and an event loop to drive it, both closed after."""
    bench = Bench()
    loop = asyncio.new_event_loop()
    try:
        yield bench, loop
    finally:
        loop.close()
        bench.close()


def measure() -> dict[str, dict[str, dict[str, float]]]:
    table: dict[str, dict[str, dict[str, float]]] = {}
    with _bench() as (bench, loop):
        for name in WORKLOADS:
            counts = {config: bench.count(loop, name, config) for config in CONFIGS}
            bare = counts["bare"].total
            table[name] = {
                config: {
                    "own": counter.own / INVOCATIONS,
                    "total_over_bare": (counter.total - bare) / INVOCATIONS,
                    "blocks": bench.blocks(loop, name, config),
                }
                for config, counter in counts.items()
            }
    return table


def trace(name: str, config: str) -> list[str]:
    """Each own call of one invocation of workload ``name`` under ``config``."""
    with _bench() as (bench, loop):
        tracer = CallTracer(bench.package_dir, bench.files)
        bench.count(loop, name, config, invocations_counted=1, counter=tracer)
        return tracer.calls


def release() -> str:
    """The google-adk minor release the budget entry belongs to."""
    from importlib.metadata import version

    return ".".join(version("google-adk").split(".")[:2])


def markdown(table: dict[str, dict[str, dict[str, float]]]) -> str:
    lines = [
        "| workload | configuration | calls by the tracer / invocation "
        "| calls over bare / invocation | blocks held by open spans / invocation |",
        "|---|---|---|---|---|",
    ]
    for name, rows in table.items():
        for config, row in rows.items():
            lines.append(
                f"| {name} | {config} | {row['own']:.0f} | {row['total_over_bare']:.0f} "
                f"| {row['blocks']:.0f} |"
            )
    return "\n".join(lines)


def check(table: dict[str, dict[str, dict[str, float]]], budget: dict[str, Any]) -> list[str]:
    """Problems with ``table`` against this release's budget entry; [] when within."""
    entry = budget.get(release())
    if entry is None:
        return [
            f"no call budget for google-adk {release()}: "
            "run benchmarks/calls.py --update-budget and commit the file"
        ]
    problems = []
    for key, allowed in entry.items():
        name, _, suffix = key.partition("/")
        config, measure_name = GUARDED[suffix]
        measured = table[name][config][measure_name]
        what = "memory blocks held by its open spans" if measure_name == "blocks" else "calls"
        if config != "adk_otel":
            what += f" ({config})"
        if measured > allowed * MARGIN:
            problems.append(
                f"{name}: adk-otel makes {measured:.0f} {what} per invocation, budget "
                f"{allowed:.0f} (+{(MARGIN - 1) * 100:.0f} %): a new per-span cost? If it is "
                "meant, run benchmarks/calls.py --update-budget and say why in the commit"
            )
    return problems


def _write_json(path: Path | None, table: Any) -> None:
    """``--json``: the raw numbers, when asked for."""
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(table, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--check", action="store_true", help="exit 1 if over the budget")
    action.add_argument("--update-budget", action="store_true", help="record this release")
    action.add_argument(
        "--trace", metavar="WORKLOAD:CONFIG", help="list each own call of one invocation"
    )
    action.add_argument(
        "--by-hook", action="store_true", help="adk-otel's and lean's own calls, hook by hook"
    )
    parser.add_argument(
        "--sampled",
        action="store_true",
        help="with --by-hook: sampled_0 against floor_sampled_0 instead",
    )
    parser.add_argument("--json", type=Path, help="also write the table here")
    parser.add_argument("--budget", type=Path, default=BUDGET, help="the budget file")
    args = parser.parse_args()
    if args.trace:
        name, _, config = args.trace.partition(":")
        if name not in WORKLOADS or config not in CONFIGS:
            parser.error(
                f"--trace takes WORKLOAD:CONFIG, a workload of {', '.join(WORKLOADS)} "
                f"and a configuration of {', '.join(CONFIGS)}"
            )
        calls = trace(name, config)
        print("\n".join(calls))
        shared = sum(call.startswith("shared ") for call in calls)
        print(f"{len(calls)} own calls, {shared} of them shared by every tracer")
        return
    if args.by_hook:
        pair = ("sampled_0", "floor_sampled_0") if args.sampled else ("adk_otel", "lean")
        hooks = by_hook(pair)
        print(hook_markdown(hooks, pair))
        _write_json(args.json, hooks)
        return
    table = measure()
    print(markdown(table))
    _write_json(args.json, table)
    budget = json.loads(args.budget.read_text()) if args.budget.exists() else {}
    if args.update_budget:
        budget[release()] = {
            (f"{name}/{suffix}" if suffix else name): table[name][config][measure_name]
            for name in WORKLOADS
            for suffix, (config, measure_name) in GUARDED.items()
        }
        args.budget.write_text(json.dumps(budget, indent=1, sort_keys=True) + "\n")
        print(f"budget for google-adk {release()} written to {args.budget}")
    elif args.check:
        problems = check(table, budget)
        for problem in problems:
            print(problem, file=sys.stderr)
        sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
