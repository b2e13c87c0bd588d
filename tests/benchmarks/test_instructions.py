"""``instructions.py`` reads callgrind's dumps as its phases: the pairing of
dumps to phases, the refusal of a count that does not match, and the overheads
and ratios taken round by round."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .scripts import BENCHMARKS, load

instructions = load("instructions")

PER_INVOCATION = {
    # (config, round) -> instructions per invocation
    ("bare", 0): 1000.0,
    ("floor", 0): 1100.0,
    ("adk_otel", 0): 1160.0,
    ("bare", 1): 2000.0,  # a round where everything costs more: the differences stay
    ("floor", 1): 2100.0,
    ("adk_otel", 1): 2180.0,
}
BATCH = 10


def _write_dumps(directory: Path) -> list[dict[str, object]]:
    """Callgrind's files for a child that ran each phase above, with a
    noisy stretch between phases (dumped at the start marker)."""
    phases: list[dict[str, object]] = []
    number = 0
    for (config, round_), value in PER_INVOCATION.items():
        for instructions_in_dump in (999_999, value * BATCH):  # before the phase, the phase
            number += 1
            header = f"desc: Trigger: --dump-before={instructions.MARKER}\n"
            (directory / f"cg.{number}-01").write_text(
                f"{header}summary: {int(instructions_in_dump)}\n"
            )
            # Another thread's dump of the same number is not the agent's.
            (directory / f"cg.{number}-02").write_text("summary: 5\n")
        phases.append({"workload": "single", "config": config, "round": round_, "count": BATCH})
    (directory / "cg-01").write_text("summary: 123\n")  # the dump at exit
    return phases


def test_each_phase_is_read_from_the_dump_at_its_end_marker(tmp_path: Path) -> None:
    phases = _write_dumps(tmp_path)
    measured = instructions.per_phase(phases, instructions.read_dumps(tmp_path, "cg"))
    assert [(m["config"], m["round"], m["per_invocation"]) for m in measured] == [
        (config, round_, value) for (config, round_), value in PER_INVOCATION.items()
    ]


def test_a_dump_count_that_does_not_match_the_phases_is_refused(tmp_path: Path) -> None:
    phases = _write_dumps(tmp_path)
    (tmp_path / "cg.13-01").write_text("summary: 1\n")  # something else hit the marker
    with pytest.raises(SystemExit, match="13 dumps for 6 phases"):
        instructions.per_phase(phases, instructions.read_dumps(tmp_path, "cg"))


def test_overheads_and_ratios_are_taken_within_each_round(tmp_path: Path) -> None:
    phases = _write_dumps(tmp_path)
    measured = instructions.per_phase(phases, instructions.read_dumps(tmp_path, "cg"))
    row = instructions.analyse(measured)["workloads"]["single"]
    assert row["overhead_by_round"]["floor"] == [100.0, 100.0]
    assert row["overhead_by_round"]["adk_otel"] == [160.0, 180.0]
    assert row["adk_otel_x_by_round"]["floor"] == [1.6, 1.8]
    assert row["adk_otel_x"]["floor"] == pytest.approx(1.7)
    assert "adk-otel 1.700x floor, target 1.5x: missed" in instructions.markdown(
        {"workloads": {"single": row}}
    )


@pytest.mark.parametrize(
    ("ratio", "verdict"),
    [(1.42, "met"), (1.43, "at the bound"), (1.57, "at the bound"), (1.58, "missed")],
)
def test_a_ratio_within_the_spread_of_runs_is_neither_met_nor_missed(
    ratio: float, verdict: str
) -> None:
    assert instructions.verdict_on(ratio).startswith(verdict)


def test_the_pieces_are_leans() -> None:
    assert instructions.PIECES == load("lean").PIECES


def test_the_marker_dumps_the_instructions_run_since_the_last_one(tmp_path: Path) -> None:
    """Under real callgrind: two phases, a short and a long one, each between
    two markers, come out as four dumps, the long phase's the large one."""
    script = tmp_path / "phases.py"
    script.write_text(
        "import os\n"
        "os.getloadavg()\n"
        "sum(range(10))\n"
        "os.getloadavg()\n"
        "os.getloadavg()\n"
        "sum(range(200_000))\n"
        "os.getloadavg()\n"
    )
    valgrind = shutil.which("valgrind")
    assert valgrind is not None, "the benchmarks' instruction counts need Valgrind"
    dumps = instructions.callgrind(valgrind, tmp_path, [str(script)])
    assert sorted(dumps) == [1, 2, 3, 4]
    assert dumps[2] < 100_000 < 1_000_000 < dumps[4]


def test_the_child_runs_every_phase_of_every_configuration(tmp_path: Path) -> None:
    """What runs under callgrind, run here without it (the markers are then
    plain calls): warm-up and measured phases of each configuration, a
    piece of ``lean`` switched off among them, in the order they ran."""
    phases_file = tmp_path / "phases.json"
    done = subprocess.run(
        [
            sys.executable,
            "-W",
            "ignore",
            str(BENCHMARKS / "instructions.py"),
            "--rounds=1",
            "--batch=1",
            "--configs=floor,lean-attach",
            f"--child={phases_file}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    phases = json.loads(phases_file.read_text())
    configs = ("bare", "adk_otel", "floor", "lean-attach")
    assert [(p["workload"], p["round"]) for p in phases] == [
        (workload, round_)
        for round_ in (-1, 0)
        for workload in ("single", "tool", "sequential")
        for _ in configs
    ]
    assert {p["config"] for p in phases} == set(configs)
