"""CI guard on adk-otel's own work per invocation, counted in function calls
(deterministic, unlike timers on a shared machine): see benchmarks/calls.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "calls.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "ignore", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_adk_otel_stays_within_its_call_budget():
    done = _run("--check")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_guard_fails_over_budget(tmp_path):
    from importlib.metadata import version

    release = ".".join(version("google-adk").split(".")[:2])
    budget = tmp_path / "budget.json"
    budget.write_text(json.dumps({release: {"single": 10, "tool": 10, "sequential": 10}}))
    done = _run("--check", "--budget", str(budget))
    assert done.returncode == 1
    assert "single: adk-otel makes" in done.stderr
    assert "--update-budget" in done.stderr


@pytest.mark.timeout(360)  # slow: 10-40 s on a loaded 2-core machine
def test_the_guard_fails_when_open_spans_hold_more_memory(tmp_path):
    """Calls within budget, but the blocks the open spans hold are not."""
    from importlib.metadata import version

    release = ".".join(version("google-adk").split(".")[:2])
    roomy = {name: 100_000 for name in ("single", "tool", "sequential")}
    budget = tmp_path / "budget.json"
    budget.write_text(json.dumps({release: {**roomy, "tool/blocks": 10}}))
    done = _run("--check", "--budget", str(budget))
    assert done.returncode == 1
    assert "tool: adk-otel makes" in done.stderr
    assert "memory blocks held by its open spans per invocation, budget 10" in done.stderr
    assert "single" not in done.stderr and "sequential" not in done.stderr


@pytest.mark.timeout(360)  # slow: 10-40 s on a loaded 2-core machine
def test_the_guard_fails_when_a_sampled_out_run_costs_more(tmp_path):
    """The recorded run within budget, the sampled-out run (``sampled_0``) not:
    a change that costs a dropped trace more fails the guard too."""
    from importlib.metadata import version

    release = ".".join(version("google-adk").split(".")[:2])
    roomy = {name: 100_000 for name in ("single", "tool", "sequential")}
    budget = tmp_path / "budget.json"
    budget.write_text(json.dumps({release: {**roomy, "sequential/sampled_0": 10}}))
    done = _run("--check", "--budget", str(budget))
    assert done.returncode == 1
    assert "sequential: adk-otel makes" in done.stderr
    assert "calls (sampled_0) per invocation, budget 10" in done.stderr
    assert "single" not in done.stderr and "tool:" not in done.stderr


def test_the_budget_holds_the_sampled_out_run_on_every_workload():
    """Each release's entry guards the sampled-out run as well as the recorded one."""
    budget = json.loads((SCRIPT.parent / "results" / "call_budget.json").read_text())
    for release, entry in budget.items():
        for name in ("single", "tool", "sequential"):
            assert f"{name}/sampled_0" in entry, release


@pytest.mark.timeout(360)  # slow: 10-40 s on a loaded 2-core machine
def test_the_guard_fails_without_a_budget_for_this_release(tmp_path):
    budget = tmp_path / "budget.json"
    budget.write_text("{}")
    done = _run("--check", "--budget", str(budget))
    assert done.returncode == 1
    assert "no call budget for google-adk" in done.stderr


def _in_bench(body: str) -> Any:
    """Run ``body`` in a fresh process with ``bench`` (a ``calls.Bench``) and
    ``loop`` made; what it prints last, as JSON."""
    program = f"""
import asyncio, json, sys
sys.path.insert(0, {str(SCRIPT.parent)!r})
import calls
bench = calls.Bench()
loop = asyncio.new_event_loop()
found = {{}}
{body}
loop.close()
bench.close()
print(json.dumps(found))
"""
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", program],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=SCRIPT.parent,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_trace_lists_every_own_call_and_the_shared_ones_alike():
    """``--trace``: one line per call the counter counts as adk-otel's own, and
    the calls it marks shared are made alike by adk-otel and ``lean`` (what the
    call-by-call comparison in benchmarks/README.md leaves aside)."""
    found = _in_bench(
        """
for config in ("adk_otel", "lean"):
    counted = bench.count(loop, "single", config, invocations_counted=1)
    tracer = calls.CallTracer(bench.package_dir, bench.files)
    bench.count(loop, "single", config, invocations_counted=1, counter=tracer)
    found[config] = {"own": counted.own, "calls": tracer.calls}
"""
    )
    shared = {}
    for config, row in found.items():
        assert len(row["calls"]) == row["own"] > 0
        # The callers, not the callees: the runner wrapper calls each tracer's own closer.
        shared[config] = sorted(
            c.partition(" -> ")[0] for c in row["calls"] if c.startswith("shared ")
        )
        assert shared[config], config
    assert shared["adk_otel"] == shared["lean"]
    own_hooks = [c for c in found["adk_otel"]["calls"] if c.startswith("plugin.py:")]
    assert any("before_run_callback ->" in c for c in own_hooks)


def test_the_trace_refuses_an_unknown_workload_or_configuration():
    done = _run("--trace", "single:nope")
    assert done.returncode == 2
    assert "--trace takes WORKLOAD:CONFIG" in done.stderr
    assert "Traceback" not in done.stderr


def test_by_hook_puts_every_own_call_under_one_row_and_each_hook_under_its_own():
    """``--by-hook``: the rows add up to the own calls ``calls.py`` counts, and
    a hook's calls (its helpers' included) land on that hook's row."""
    found = _in_bench(
        """
for config in ("adk_otel", "lean"):
    counter = calls.HookCounter(bench.package_dir, bench.files)
    bench.count(loop, "tool", config, invocations_counted=1, counter=counter)
    found[config] = {"own": counter.own, "rows": counter.rows}
"""
    )
    for config, row in found.items():
        rows = row["rows"]
        assert sum(rows.values()) == row["own"] > 0, config
        for hook in ("before_run_callback", "before_tool_callback", "after_tool_callback"):
            assert rows[hook] > 0, (config, hook)
        assert rows["after_tool_callback"] < rows["before_tool_callback"], config
        assert rows["elsewhere"] == 0, config
    # The code every tracer shares is counted alike.
    assert found["adk_otel"]["rows"]["shared code"] == found["lean"]["rows"]["shared code"]
