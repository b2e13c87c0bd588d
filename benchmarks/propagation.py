"""What carrying the trace across one A2A call costs, in one interleaved run.

A calling process (this one) runs a ``SequentialAgent`` whose sub-agent is a
``RemoteA2aAgent``; the agent it calls is served by ``to_a2a`` under uvicorn
in a second process (``adk_otel.cli.demo_remote``), instrumented with adk-otel,
recording its spans (``OTEL_TRACES_EXPORTER=none``: nothing leaves it).

Configurations of the calling side, each with its own runner and remote agent:

* ``bare``: no tracing in the caller; the A2A call as ADK makes it.
* ``adk_otel``: the caller instrumented, with propagation: adk-otel's
  request interceptor puts the trace context into the request metadata and
  the served run continues it.
* ``no_propagation``: the caller instrumented, the interceptor taken off
  after the first call: the same spans, the served run starting a trace of
  its own. ``adk_otel`` minus ``no_propagation`` is what propagation costs
  per call, both sides together.

Wall time per call (the call crosses processes, so CPU time of one process
would miss half of it), median over rounds of one batch per configuration in
rotating order; [min-max] = the range of the median over ten stretches of
rounds. The pieces are also timed on their own (``timeit``, µs per call):
writing the carrier (``inject``), reading one (``remote_parent``) and reading
a response's task state (``a2a_task``).

Usage: ``python benchmarks/propagation.py [--rounds 40] [--batch 5] [--json PATH]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
import timeit
import warnings
from pathlib import Path
from typing import Any

warnings.filterwarnings("ignore")

CONFIGS = ("bare", "adk_otel", "no_propagation")
RESULTS = Path(__file__).resolve().parent / "results" / "propagation.json"


def _runner(url: str, instrumented: bool) -> tuple[Any, Any]:
    from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
    from google.adk.agents import SequentialAgent
    from google.adk.agents.remote_a2a_agent import RemoteA2aAgent
    from google.adk.runners import InMemoryRunner

    import adk_otel

    remote = RemoteA2aAgent(name="payments", agent_card=url + AGENT_CARD_WELL_KNOWN_PATH)
    runner = InMemoryRunner(agent=SequentialAgent(name="checkout", sub_agents=[remote]))
    return (adk_otel.instrument(runner) if instrumented else runner), remote


async def _call(runner: Any) -> None:
    from google.genai import types

    session = await runner.session_service.create_session(app_name=runner.app_name, user_id="u")
    async for _ in runner.run_async(
        user_id="u", session_id=session.id, new_message=types.UserContent("charge 19.90 EUR")
    ):
        pass


def _pieces() -> dict[str, float]:
    from opentelemetry.sdk.trace import TracerProvider

    from adk_otel.integrations.propagation import inject, remote_parent
    from adk_otel.reading.attributes import a2a_task

    tracer = TracerProvider().get_tracer("bench")
    number = 20_000
    with tracer.start_as_current_span("agent"):
        carrier = inject()
        pieces = {"inject": timeit.timeit(inject, number=number)}
    pieces["remote_parent"] = timeit.timeit(lambda: remote_parent(carrier), number=number)
    try:
        from a2a.types import Task, TaskState, TaskStatus

        response: Any = (Task(id="t", status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED)),)
    except Exception:
        response = None
    pieces["a2a_task"] = timeit.timeit(lambda: a2a_task(response), number=number)
    return {name: seconds / number * 1e6 for name, seconds in pieces.items()}


async def _measure(url: str, rounds: int, batch: int) -> dict[str, list[float]]:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    trace.set_tracer_provider(TracerProvider())  # recorded, never exported
    runners = {
        "bare": _runner(url, instrumented=False),
        "adk_otel": _runner(url, instrumented=True),
        "no_propagation": _runner(url, instrumented=True),
    }
    for runner, _ in runners.values():  # warm-up: card fetched, client built
        await _call(runner)
    _, remote = runners["no_propagation"]
    remote._config.request_interceptors = []  # adk-otel added it on the first run
    samples: dict[str, list[float]] = {name: [] for name in CONFIGS}
    for round_index in range(rounds):
        order = CONFIGS[round_index % 3 :] + CONFIGS[: round_index % 3]
        for name in order:
            runner, _ = runners[name]
            start = time.perf_counter()
            for _ in range(batch):
                await _call(runner)
            samples[name].append((time.perf_counter() - start) / batch * 1e6)
    return samples


def _summary(samples: dict[str, list[float]]) -> dict[str, Any]:
    def spread(values: list[float]) -> tuple[float, float]:
        size = max(1, len(values) // 10)
        medians = [statistics.median(values[i : i + size]) for i in range(0, len(values), size)]
        return min(medians), max(medians)

    bare = samples["bare"]
    out: dict[str, Any] = {}
    for name in CONFIGS:
        deltas = [a - b for a, b in zip(samples[name], bare, strict=True)]
        out[name] = {
            "us_per_call": statistics.median(samples[name]),
            "over_bare_us": statistics.median(deltas),
            "over_bare_range_us": spread(deltas),
        }
    prop = [a - b for a, b in zip(samples["adk_otel"], samples["no_propagation"], strict=True)]
    out["propagation_us"] = statistics.median(prop)
    out["propagation_range_us"] = spread(prop)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--batch", type=int, default=5)
    parser.add_argument("--json", type=Path, default=RESULTS)
    args = parser.parse_args()

    from adk_otel.cli.demo_remote import start_service

    service = start_service({"OTEL_TRACES_EXPORTER": "none"}, stderr=subprocess.DEVNULL)
    try:
        samples = asyncio.run(_measure(service.url, args.rounds, args.batch))
    finally:
        service.stop()
    summary = _summary(samples)
    pieces = _pieces()
    print("| configuration | wall µs / A2A call | over bare µs, median [min-max] | x bare |")
    print("|---|---|---|---|")
    bare = summary["bare"]["us_per_call"]
    for name in CONFIGS:
        row = summary[name]
        low, high = row["over_bare_range_us"]
        over = "-" if name == "bare" else f"{row['over_bare_us']:.0f} [{low:.0f}-{high:.0f}]"
        print(f"| {name} | {row['us_per_call']:.0f} | {over} | {row['us_per_call'] / bare:.2f} |")
    low, high = summary["propagation_range_us"]
    print(
        f"\npropagation (adk_otel - no_propagation): {summary['propagation_us']:.0f} µs "
        f"[{low:.0f}-{high:.0f}] per call"
    )
    print("pieces, µs per call: " + ", ".join(f"{k} {v:.2f}" for k, v in pieces.items()))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {"rounds": args.rounds, "batch": args.batch, "summary": summary, "pieces": pieces},
            indent=1,
        )
    )


if __name__ == "__main__":
    sys.exit(main())
