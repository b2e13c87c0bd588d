"""The benchmark scripts still run (tiny sizes): numbers are not asserted here,
only that every script works end to end and writes its results."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .scripts import BENCHMARKS

CASES = {
    "overhead": ["--rounds", "2", "--batch", "1"],
    "hooks": ["--rounds", "1", "--batch", "1"],
    "span_path": ["--repeats", "1", "--spans", "5"],
    "run_path": ["--repeats", "1", "--runs", "3"],
    "lean_profile": ["--repeats", "1", "--runs", "3"],
    "model_reads": ["--repeats", "1", "--calls", "10"],
    "export_load": ["--runs", "40"],
    "memory": ["--runs", "64", "--traced-runs", "32", "--checkpoints", "2"],
    "propagation": ["--rounds", "1", "--batch", "1"],
}


@pytest.mark.timeout(360)  # slow: 10-40 s on a loaded 2-core machine
@pytest.mark.parametrize("name", CASES)
def test_benchmark_runs(name, tmp_path):
    results = tmp_path / f"{name}.json"
    script = str(BENCHMARKS / f"{name}.py")
    done = subprocess.run(
        [sys.executable, "-W", "ignore", script, *CASES[name], "--json", str(results)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "|---|" in done.stdout  # its table
    assert json.loads(results.read_text())
