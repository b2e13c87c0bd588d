"""adk-otel's own cost as one run grows: per span, it must not grow with the run.

A long run (an agent that calls a tool a thousand times, a workflow of a
hundred nodes) makes hundreds of spans in one trace. If some of adk-otel's
bookkeeping walked a list of the run's spans, searched a stack by name or
kept a dict of every span until the run ended, each span would cost more the
longer the run: a term that ``calls.py``'s three small workloads never show.

Each workload is a real ``InMemoryRunner`` on the scripted model, traced by
adk-otel through the provider ``calls.py`` uses (adk-otel's default pipeline,
an exporter that drops the spans), measured at several sizes:

* ``tool_calls``: one ``LlmAgent`` whose model asks for one tool call a turn,
  N turns, then answers (N + 1 model calls, N tool calls);
* ``parallel_calls``: the same N tool calls asked for in one turn (ADK runs
  them concurrently: N sibling spans open at once);
* ``workflow``: an ADK 2 graph ``Workflow``, a chain of N function nodes.

Per size:

* ``spans``: spans adk-otel exported for the run;
* ``own``: calls made by adk-otel's code on the thread that runs the agent,
  counted as ``calls.py`` counts them (deterministic);
* ``own_per_span`` and ``marginal``: ``own`` per span, and the own calls each
  span added over the next smaller size (the per-run constant cancels out, so
  a growing term shows here first);
* ``lines`` and ``marginal_lines``: lines of adk-otel's code executed
  (``sys.settrace``), the same way: a loop over a growing list makes no
  calls, but runs lines;
* ``held_blocks`` / ``held_bytes``: what adk-otel's code (and the SDK work it
  asks for) has allocated and still holds when the run's last event arrives,
  the run's outer spans still open (``tracemalloc``, after exporting the
  finished spans and a collection);
* ``retained_blocks`` / ``retained_bytes``: the same after the run has ended
  and its session is deleted: what a run leaves behind.

Usage::

    python benchmarks/scaling.py                       # 10, 100, 1000: minutes
    python benchmarks/scaling.py --sizes 10 100        # quicker
    python benchmarks/scaling.py --workflow-sizes 10 100 --workloads workflow
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import sys
import sysconfig
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "scaling.json"
WORKLOADS = ("tool_calls", "parallel_calls", "workflow")
SIZES = (10, 100, 1000)
WORKFLOW_SIZES = (10, 100)
WARM_UP_SIZE = 3
"""A run of this size on a runner of the same shape first: first-call paths
and caches are paid before anything is counted."""
FRAMES = 48
"""Frames ``tracemalloc`` keeps per allocation: enough to see past the SDK's
and the standard library's frames to the code that asked for it."""


def _tool_calls_agent(size: int) -> Any:
    import workloads
    from google.adk.agents import LlmAgent

    from adk_otel.testing.model import ScriptedModel, call, reply

    script = [call("lookup", {"sku": f"A{i}"}) for i in range(size)]
    model = ScriptedModel(script=[*script, reply("done")])
    return LlmAgent(name="clerk", model=model, tools=[workloads.lookup])


def _parallel_calls_agent(size: int) -> Any:
    import workloads
    from google.adk.agents import LlmAgent

    from adk_otel.testing.model import ScriptedModel, calls, reply

    asked = calls(*(("lookup", {"sku": f"A{i}"}) for i in range(size)))
    return LlmAgent(
        name="clerk", model=ScriptedModel(script=[asked, reply("done")]), tools=[workloads.lookup]
    )


def step(node_input=None):  # type: ignore[no-untyped-def]
    """One function node of the chain: counts the nodes run so far (the first
    gets the user's message). Unannotated on purpose: ADK derives each node's
    input and output schemas from the annotations and refuses an edge whose
    schemas differ, as ``int | None`` in and ``int`` out do."""
    return node_input + 1 if isinstance(node_input, int) else 1


def _workflow(size: int) -> Any:
    from google.adk.workflow import FunctionNode, Workflow

    nodes = [
        FunctionNode(func=step, name=f"step{i}", parameter_binding="node_input")
        for i in range(size)
    ]
    return Workflow(name="chain", edges=[("START", *nodes)])


def runner_for(workload: str, size: int, provider: Any) -> Any:
    """A traced runner for ``workload`` at ``size``."""
    import workloads
    from google.adk.runners import InMemoryRunner

    import adk_otel

    if workload == "workflow":
        runner = InMemoryRunner(node=_workflow(size), app_name=workloads.APP)
    else:
        build = _tool_calls_agent if workload == "tool_calls" else _parallel_calls_agent
        runner = InMemoryRunner(agent=build(size), app_name=workloads.APP)
    return adk_otel.instrument(runner, tracer_provider=provider)


async def _run(runner: Any, size: int, at_last_event: Callable[[], None] | None = None) -> None:
    """One run on a new session, deleted afterwards; ``at_last_event`` is
    called when the run's final answer arrives, before the run ends."""
    import workloads
    from google.adk.agents.run_config import RunConfig

    session_id = await workloads.new_session(runner)
    # ADK stops a run at 500 model calls unless told otherwise.
    config = RunConfig(max_llm_calls=size + 10)
    events = runner.run_async(
        user_id=workloads.USER,
        session_id=session_id,
        new_message=workloads.MESSAGE,
        run_config=config,
    )
    async for event in events:
        if at_last_event is not None and event.is_final_response():
            at_last_event()
    await workloads.delete_sessions(runner, [session_id])


class Scaling:
    """The provider, exporter and call counter ``calls.py`` uses, and the
    measures of one run at one size."""

    def __init__(self) -> None:
        from opentelemetry import trace

        import adk_otel
        from adk_otel.pipeline.provider import build_tracer_provider

        sys.path.insert(0, str(HERE))
        from overhead import _noop_exporter

        self.exporter = _noop_exporter()
        self.provider = build_tracer_provider(exporter=self.exporter)
        trace.set_tracer_provider(self.provider)
        self.package_dir = str(Path(adk_otel.__file__).resolve().parent)
        self.testing_dir = str(Path(self.package_dir, "testing"))
        otel_dir = str(Path(trace.__file__).resolve().parents[1])
        self.skipped = (otel_dir, sysconfig.get_paths()["stdlib"])
        """Frames passed over when deciding whose an allocation is."""
        self.loop = asyncio.new_event_loop()

    def close(self) -> None:
        self.loop.close()
        self.provider.shutdown()

    def spans(self, runner: Any, size: int) -> int:
        """Spans exported for one run."""
        self.provider.force_flush()
        before = self.exporter.spans
        self.loop.run_until_complete(_run(runner, size))
        self.provider.force_flush()
        return int(self.exporter.spans - before)

    def own_calls(self, runner: Any, size: int) -> int:
        """adk-otel's own calls in one run, as ``calls.py`` counts them."""
        from calls import CallCounter, hooked

        counter = CallCounter(self.package_dir)
        with hooked(sys.setprofile, counter):
            self.loop.run_until_complete(_run(runner, size))
        return counter.own

    def own_lines(self, runner: Any, size: int) -> int:
        """Lines of adk-otel's code executed in one run (``sys.settrace``):
        a loop over a growing list makes no calls but runs lines."""
        package, testing = self.package_dir, self.testing_dir
        lines = [0]

        def local(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "line":
                lines[0] += 1
            return local

        def tracer(frame: FrameType, event: str, arg: Any) -> Any:
            name = frame.f_code.co_filename
            if name.startswith(package) and not name.startswith(testing):
                return local
            return None  # no line events from anyone else's frames

        from calls import hooked

        with hooked(sys.settrace, tracer):
            self.loop.run_until_complete(_run(runner, size))
        return lines[0]

    def _ours(self, trace: tracemalloc.Trace) -> bool:
        """Whether adk-otel's code asked for this allocation: the innermost
        frame outside OpenTelemetry and the standard library is adk-otel's."""
        for frame in reversed(trace.traceback):  # innermost first
            name = frame.filename
            if name.startswith(self.skipped):
                continue
            return name.startswith(self.package_dir) and not name.startswith(self.testing_dir)
        return False

    def _held(self) -> tuple[int, int]:
        self.provider.force_flush()  # finished spans leave the export queue
        gc.collect()
        snapshot = tracemalloc.take_snapshot()
        blocks = size = 0
        for trace in snapshot.traces:
            if self._ours(trace):
                blocks += 1
                size += trace.size
        return blocks, size

    def memory(self, runner: Any, size: int) -> dict[str, int]:
        """Blocks and bytes adk-otel's code holds at the run's last event and
        after the run."""
        self.provider.force_flush()
        gc.collect()
        # Only what is allocated after this is traced: the run's own.
        tracemalloc.start(FRAMES)
        try:
            held: list[tuple[int, int]] = []
            self.loop.run_until_complete(
                _run(runner, size, at_last_event=lambda: held.append(self._held()))
            )
            retained = self._held()
        finally:
            tracemalloc.stop()
        (held_blocks, held_bytes), *_ = held
        return {
            "held_blocks": held_blocks,
            "held_bytes": held_bytes,
            "retained_blocks": retained[0],
            "retained_bytes": retained[1],
        }

    def measure(self, workload: str, size: int, *, memory: bool = True) -> dict[str, float]:
        """Every measure of one size of ``workload``, each on its own run."""
        warm = runner_for(workload, WARM_UP_SIZE, self.provider)
        self.loop.run_until_complete(_run(warm, WARM_UP_SIZE))
        runner = runner_for(workload, size, self.provider)
        spans = self.spans(runner, size)
        own = self.own_calls(runner, size)
        lines = self.own_lines(runner, size)
        row: dict[str, float] = {"size": size, "spans": spans, "own": own, "lines": lines}
        row["own_per_span"] = own / spans
        row["lines_per_span"] = lines / spans
        if memory:
            for key, value in self.memory(runner, size).items():
                row[key] = value
                row[f"{key}_per_span"] = value / spans
        return row


def measure(
    sizes: dict[str, list[int]], *, memory: bool = True
) -> dict[str, list[dict[str, float]]]:
    """Rows per workload, smallest size first, with ``marginal``: own calls
    per span added since the previous size."""
    bench = Scaling()
    table: dict[str, list[dict[str, float]]] = {}
    try:
        for workload, workload_sizes in sizes.items():
            rows = [bench.measure(workload, size, memory=memory) for size in sorted(workload_sizes)]
            for smaller, larger in itertools.pairwise(rows):
                added = larger["spans"] - smaller["spans"]
                larger["marginal"] = (larger["own"] - smaller["own"]) / added
                larger["marginal_lines"] = (larger["lines"] - smaller["lines"]) / added
            table[workload] = rows
    finally:
        bench.close()
    return table


def ratios(rows: list[dict[str, float]]) -> dict[str, float]:
    """Largest size over smallest, per span; and the last marginal over the first."""
    first, last = rows[0], rows[-1]
    found = {
        "own_per_span": last["own_per_span"] / first["own_per_span"],
        "lines_per_span": last["lines_per_span"] / first["lines_per_span"],
    }
    for key in ("marginal", "marginal_lines"):
        marginals = [row[key] for row in rows if key in row]
        if len(marginals) >= 2:
            found[key] = marginals[-1] / marginals[0]
    return found


def markdown(table: dict[str, list[dict[str, float]]]) -> str:
    lines = [
        "| workload | size | spans | own calls / span | marginal calls / span "
        "| own lines / span | marginal lines / span "
        "| blocks / span held at last event | bytes / span held "
        "| blocks retained after | bytes retained after |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for workload, rows in table.items():
        for row in rows:
            marginal = f"{row['marginal']:.2f}" if "marginal" in row else "-"
            marginal_lines = f"{row['marginal_lines']:.2f}" if "marginal_lines" in row else "-"
            memory = "| - | - | - | - |"
            if "held_blocks" in row:
                memory = (
                    f"| {row['held_blocks_per_span']:.1f} | {row['held_bytes_per_span']:.0f} "
                    f"| {row['retained_blocks']:.0f} | {row['retained_bytes']:.0f} |"
                )
            lines.append(
                f"| {workload} | {row['size']:.0f} | {row['spans']:.0f} "
                f"| {row['own_per_span']:.2f} | {marginal} | {row['lines_per_span']:.2f} "
                f"| {marginal_lines} {memory}"
            )
    lines.append("")
    for workload, rows in table.items():
        found = ratios(rows)
        text = ", ".join(f"{key} {value:.3f}x" for key, value in found.items())
        lines.append(
            f"{workload}: size {rows[-1]['size']:.0f} against {rows[0]['size']:.0f}: {text}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=list(SIZES), help="tool calls per run"
    )
    parser.add_argument(
        "--workflow-sizes",
        type=int,
        nargs="+",
        default=list(WORKFLOW_SIZES),
        help="function nodes in the workflow",
    )
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument("--no-memory", action="store_true", help="own calls only (quicker)")
    parser.add_argument("--json", type=Path, default=RESULTS, help="where the raw numbers go")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    sizes = {
        workload: args.workflow_sizes if workload == "workflow" else args.sizes
        for workload in args.workloads
    }
    table = measure(sizes, memory=not args.no_memory)
    print(markdown(table))
    from importlib.metadata import version

    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {
                "google-adk": version("google-adk"),
                "opentelemetry-sdk": version("opentelemetry-sdk"),
                "rows": table,
                "ratios": {workload: ratios(rows) for workload, rows in table.items()},
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
