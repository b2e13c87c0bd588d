"""Machine instructions per invocation, counted by Valgrind: the end-to-end cost, noise-free.

``overhead.py`` times each configuration's CPU time. On a shared machine the
time of one invocation moves by more than the tracers differ, and its
verdicts come out *unreadable*. Instructions executed do not move with the
load: this script runs ``overhead.py``'s configurations, workloads and
runners in one process under Valgrind's ``callgrind`` tool and counts the
instructions the agent's thread executes per invocation. It counts the
same work ``overhead.py`` times: ADK, the SDK, the tracer, the interpreter,
the allocator and the garbage collector, C code and Python alike, where
``calls.py`` counts function calls and ``run_path.py`` bytecodes in a
replay of the hooks. What it leaves out is what an instruction count cannot
see: cache misses, branch mispredictions and the export thread.

Method. The child process builds ``overhead.Bench`` (one provider, one
runner per workload and configuration) and warms every runner up. Then, per
round, per workload, for every configuration in an order that rotates from
round to round: sessions made, a full collection, a marker, ``--batch``
invocations, a marker. A marker is a call of ``os.getloadavg``, which
nothing else in an ADK run calls: callgrind dumps its counters on entering
the C library's ``getloadavg`` (``--dump-before``; an exported symbol, so
this works on a stripped interpreter too), so each dump holds exactly what
ran since the previous marker. The dumps are read per thread
(``--separate-threads``); the agent's thread is the first. Rounds repeat the
counts up to the random ids and the allocator's and the collector's state: a
fraction of a percent of an invocation, a few percent of an overhead.
Separate runs differ by as much, so a ratio within ``SPREAD`` of the target
is called neither met nor missed.

Overhead = a configuration's instructions per invocation minus ``bare``'s,
same round; the ratios are of those overheads, median over rounds.

Usage: ``python benchmarks/instructions.py [--rounds 2] [--batch 10] [--configs floor,lean]
[--pieces] [--sampled] [--json PATH]`` (Valgrind on the PATH; about 5 minutes for the default
configurations).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from report import emit  # this directory: the benchmark scripts run from it

HERE = Path(__file__).resolve().parent
CONFIGS = ("bare", "adk", "adk_otel", "floor", "fair_floor", "lean")
SAMPLED_OUT = ("sampled_0", "sampled_1pct", "floor_sampled_0", "sampled_0_metrics")
"""``--sampled``: ``overhead.py``'s sampled-out configurations; adk-otel's
sampled-out run (``sampled_0``) is read against ``floor_sampled_0``."""
SAMPLED_OUT_TARGET = 1.2
"""adk-otel's sampled-out overhead at most this many times the floor plugin's."""
PIECES = ("attach", "deferred", "wrapper", "rollups", "outcomes", "reading", "runs")
"""``lean``'s pieces (``lean.PIECES``): ``--pieces`` adds a ``lean-<piece>``
configuration for each, ``lean`` with that piece switched off, so what the
guarantee costs is what switching it off saves (``lean_profile.py``'s method)."""
WORKLOADS = ("single", "tool", "sequential")
MARKER = "getloadavg"
"""The C library function ``os.getloadavg`` calls: callgrind dumps on entering it."""
ORDER = CONFIGS + SAMPLED_OUT + tuple(f"lean-{piece}" for piece in PIECES)
TARGET = 1.5
"""The hot-path bound: adk-otel's overhead at most 1.5x ``floor``'s."""
SPREAD = 0.05
"""How far apart (relatively) the same ratio came out in separate runs: closer
to the target than this, a run says neither met nor missed."""


def _marker() -> float:
    """The marker, as the clock ``overhead.Bench.sample`` reads around its invocations."""
    os.getloadavg()
    return 0.0


def child(rounds: int, batch: int, configs: tuple[str, ...], phases_file: Path) -> None:
    """Runs under callgrind: the phases, each between two markers, in order."""
    sys.path.insert(0, str(HERE))
    from overhead import Bench

    bench = Bench(tuple(c for c in configs if c in CONFIGS + SAMPLED_OUT))
    import lean

    for config in configs:
        if config.startswith("lean-"):
            for name in WORKLOADS:
                runner = bench.runners[name, config] = bench.workloads.runner_for(name)
                lean.install(runner, bench.provider, frozenset({config.removeprefix("lean-")}))
    loop = asyncio.new_event_loop()
    phases: list[dict[str, Any]] = []

    def phase(name: str, config: str, count: int) -> None:
        # The first marker dumps what ran before (not counted), the second this phase.
        loop.run_until_complete(bench.sample(name, config, count, clock=_marker, own_export=False))

    try:
        for name in WORKLOADS:
            for config in configs:  # warm-up: imports, caches, first-call paths
                phase(name, config, 2)
                phases.append({"workload": name, "config": config, "round": -1, "count": 2})
        for number in range(rounds):
            for name in WORKLOADS:
                shift = number % len(configs)
                for config in configs[shift:] + configs[:shift]:
                    phase(name, config, batch)
                    phases.append(
                        {"workload": name, "config": config, "round": number, "count": batch}
                    )
    finally:
        loop.close()
        bench.provider.shutdown()
    phases_file.write_text(json.dumps(phases))


_SUMMARY = re.compile(r"^summary:\s+(\d+)", re.MULTILINE)
_DUMP = re.compile(r"\.(\d+)-01$")


def read_dumps(directory: Path, stem: str) -> dict[int, int]:
    """Dump number -> instructions on the first thread, from callgrind's files
    ``<stem>.<n>-01``."""
    found: dict[int, int] = {}
    for path in directory.glob(f"{stem}.*-01"):
        number = _DUMP.search(path.name)
        summary = _SUMMARY.search(path.read_text(errors="replace"))
        if number and summary:
            found[int(number.group(1))] = int(summary.group(1))
    return found


def callgrind(valgrind: str, out: Path, argv: list[str]) -> dict[int, int]:
    """Run this Python on ``argv`` under callgrind, dumping at every marker;
    returns the agent's thread's dumps (``read_dumps``)."""
    command = [
        valgrind,
        "--tool=callgrind",
        f"--dump-before={MARKER}",
        "--separate-threads=yes",
        f"--callgrind-out-file={out / 'cg'}",
        sys.executable,
        *argv,
    ]
    # A fixed hash seed: the same dict and set layouts in every run.
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    subprocess.run(command, check=True, env=env, stderr=subprocess.DEVNULL)
    return read_dumps(out, "cg")


def per_phase(phases: list[dict[str, Any]], dumps: dict[int, int]) -> list[dict[str, Any]]:
    """Each phase with its instructions per invocation: phase ``i`` is dump
    ``2i + 2`` (dump ``2i + 1`` is what ran between its start marker and the
    previous phase's end)."""
    if len(dumps) != 2 * len(phases):
        raise SystemExit(
            f"instructions: {len(dumps)} dumps for {len(phases)} phases (expected "
            f"{2 * len(phases)}): something else called {MARKER}, or Valgrind "
            "did not find it"
        )
    return [
        {**phase, "per_invocation": dumps[2 * i + 2] / phase["count"]}
        for i, phase in enumerate(phases)
    ]


def analyse(measured: list[dict[str, Any]]) -> dict[str, Any]:
    """Per workload: instructions per invocation of every configuration, its
    overhead over ``bare`` and adk-otel's overhead as a multiple of each
    yardstick's (median over rounds, and every round's)."""
    rounds = sorted({m["round"] for m in measured if m["round"] >= 0})
    table: dict[str, Any] = {}
    for name in (w for w in WORKLOADS if any(m["workload"] == w for m in measured)):
        cells = {
            (m["config"], m["round"]): m["per_invocation"]
            for m in measured
            if m["workload"] == name and m["round"] >= 0
        }
        configs = sorted({config for config, _ in cells}, key=ORDER.index)
        overheads = {
            config: [cells[config, r] - cells["bare", r] for r in rounds] for config in configs
        }
        ratios = {
            config: [
                a / b if b > 0 else None
                for a, b in zip(overheads["adk_otel"], overheads[config], strict=True)
            ]
            for config in configs
            if config not in ("bare", "adk_otel")
        }
        table[name] = {
            "per_invocation": {c: statistics.median(cells[c, r] for r in rounds) for c in configs},
            "overhead": {c: statistics.median(v) for c, v in overheads.items()},
            "overhead_by_round": overheads,
            "adk_otel_x": {
                c: statistics.median(x for x in v if x is not None) if any(v) else None
                for c, v in ratios.items()
            },
            "adk_otel_x_by_round": ratios,
        }
        if "sampled_0" in overheads and "floor_sampled_0" in overheads:
            sampled = [
                a / b if b > 0 else None
                for a, b in zip(overheads["sampled_0"], overheads["floor_sampled_0"], strict=True)
            ]
            table[name]["sampled_0_x_floor_sampled_0"] = statistics.median(
                x for x in sampled if x is not None
            )
            table[name]["sampled_0_x_floor_sampled_0_by_round"] = sampled
    return {"rounds": len(rounds), "workloads": table}


def verdict_on(ratio: float) -> str:
    """adk-otel's ratio to ``floor`` against the target, allowing for ``SPREAD``."""
    if ratio > TARGET * (1 + SPREAD):
        return "missed"
    if ratio < TARGET * (1 - SPREAD):
        return "met"
    return f"at the bound (runs differ by up to {SPREAD:.0%})"


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "| workload | configuration | instructions per invocation | overhead over bare | "
        "adk_otel's overhead x this one's (each round) |",
        "|---|---|---|---|---|",
    ]
    for name, row in result["workloads"].items():
        for config, value in row["per_invocation"].items():
            ratio = row["adk_otel_x"].get(config)
            rounds = row["adk_otel_x_by_round"].get(config, [])
            each = " / ".join(f"{x:.3f}" if x is not None else "-" for x in rounds)
            lines.append(
                f"| {name} | {config} | {value:,.0f} | {row['overhead'][config]:,.0f} | "
                + (f"{ratio:.3f} ({each})" if ratio is not None else "")
                + " |"
            )
    pieces = [
        c
        for c in ORDER[len(CONFIGS) + len(SAMPLED_OUT) :]
        if any(c in r["overhead"] for r in result["workloads"].values())
    ]
    if pieces:
        lines += [
            "",
            "| piece of lean switched off | "
            + " | ".join(f"{name}: saves (x floor's overhead)" for name in result["workloads"])
            + " |",
            "|---|" + "---|" * len(result["workloads"]),
        ]
        for piece in pieces:
            cells = []
            for row in result["workloads"].values():
                saves = row["overhead"]["lean"] - row["overhead"][piece]
                cells.append(f"{saves:,.0f} ({saves / row['overhead']['floor']:.3f})")
            lines.append(f"| {piece.removeprefix('lean-')} | " + " | ".join(cells) + " |")
    for name, row in result["workloads"].items():
        ratio = row["adk_otel_x"].get("floor")
        if ratio is not None:
            verdict = verdict_on(ratio)
            lines.append(f"\n{name}: adk-otel {ratio:.3f}x floor, target {TARGET}x: {verdict}")
        sampled = row.get("sampled_0_x_floor_sampled_0")
        if sampled is not None:
            each = " / ".join(
                f"{x:.3f}" if x is not None else "-"
                for x in row["sampled_0_x_floor_sampled_0_by_round"]
            )
            verdict = "met" if sampled <= SAMPLED_OUT_TARGET else "missed"
            lines.append(
                f"{name}: adk-otel sampled out {sampled:.3f}x floor sampled out ({each}), "
                f"target {SAMPLED_OUT_TARGET}x: {verdict}"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="rounds (the counts repeat)")
    parser.add_argument("--batch", type=int, default=10, help="invocations per phase")
    parser.add_argument(
        "--configs", help="comma-separated configurations (bare and adk_otel always run)"
    )
    parser.add_argument(
        "--pieces", action="store_true", help="also lean with each piece off (lean-<piece>)"
    )
    parser.add_argument(
        "--sampled", action="store_true", help="also the sampled-out configurations"
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    configs = CONFIGS
    if args.configs:
        asked = {"bare", "adk_otel", *args.configs.split(",")}
        unknown = asked - set(ORDER)
        if unknown:
            parser.error(f"unknown configurations: {', '.join(sorted(unknown))}")
        configs = tuple(c for c in ORDER if c in asked)
    if args.pieces:
        pieces = ORDER[len(CONFIGS) + len(SAMPLED_OUT) :]
        configs = tuple(dict.fromkeys((*configs, "floor", "lean", *pieces)))
    if args.sampled:
        configs = tuple(c for c in ORDER if c in {*configs, *SAMPLED_OUT})
    if args.child:
        child(args.rounds, args.batch, configs, args.child)
        return
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        parser.error("needs Valgrind on the PATH")
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch)
        phases_file = out / "phases.json"
        dumps = callgrind(
            valgrind,
            out,
            [
                str(Path(__file__).resolve()),
                f"--rounds={args.rounds}",
                f"--batch={args.batch}",
                f"--configs={','.join(configs)}",
                f"--child={phases_file}",
            ],
        )
        measured = per_phase(json.loads(phases_file.read_text()), dumps)
    result = analyse(measured)
    result["batch"] = args.batch
    result["phases"] = measured
    emit(markdown(result), result, args.json)


if __name__ == "__main__":
    main()
