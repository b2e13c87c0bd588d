"""``overhead.py``'s sample: each pays for the export of its own spans, on the
clock, and for no other sample's (the process CPU time counts the export
thread, whose work otherwise lands on whichever sample runs when it wakes)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .scripts import BENCHMARKS

PROGRAM = f"""
import asyncio, json, sys
sys.path.insert(0, {str(BENCHMARKS)!r})
import overhead
bench = overhead.Bench(("bare", "adk_otel", "sampled_0"))
loop = asyncio.new_event_loop()
seen = {{}}

def watching(config):
    def clock():
        seen.setdefault(config, []).append(bench.exporter.spans)
        return 0.0
    return clock

for name in ("single", "tool"):
    # A recorded sample leaves nothing queued for the next one to export.
    for config in ("adk_otel", "sampled_0", "bare"):
        loop.run_until_complete(bench.sample(name, config, 2, clock=watching(name + "/" + config)))
loop.close()
bench.provider.shutdown()
print(json.dumps(seen))
"""


@pytest.mark.timeout(360)  # slow: 10-40 s on a loaded 2-core machine
def test_a_sample_exports_its_own_spans_on_the_clock_and_nothing_else():
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", PROGRAM],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=BENCHMARKS,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    for name, spans in (("single", 3), ("tool", 5)):
        # Read at the clock's start and stop: the recorded sample's spans are
        # exported before the clock stops (2 invocations of `spans` each) ...
        start, stop = seen[f"{name}/adk_otel"]
        assert stop - start == 2 * spans, (name, seen)
        # ... and the samples after it export nothing while timed.
        for config in ("sampled_0", "bare"):
            before, after = seen[f"{name}/{config}"]
            assert before == after == stop, (name, config, seen)
