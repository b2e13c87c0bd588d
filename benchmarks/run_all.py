"""Run every benchmark once, in sequence, and keep the results.

``python benchmarks/run_all.py``: overhead (interleaved configurations), hooks
(where the time goes), span_path (one model span, stage by stage), run_path
(one whole run's hooks, replayed against the yardsticks), lean_profile
(what each of the lean reference's guarantees costs), model_reads (an
agent's model read, named by string or held as an object), calls
(adk-otel's own work, counted),
export under load, memory over 10,000 invocations, propagation across one A2A
call (two processes). Each writes its table to
stdout and its raw numbers to ``benchmarks/results/<name>.json``. A few
minutes on a 2-core machine; nothing else should be running meanwhile.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS = (
    "overhead",
    "hooks",
    "span_path",
    "run_path",
    "lean_profile",
    "model_reads",
    "calls",
    "export_load",
    "memory",
    "propagation",
)


def main() -> int:
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    started = time.perf_counter()
    for name in BENCHMARKS:
        print(f"## {name}\n", flush=True)
        command = [sys.executable, "-W", "ignore", str(HERE / f"{name}.py")]
        done = subprocess.run([*command, "--json", str(results / f"{name}.json")], check=False)
        if done.returncode != 0:
            return done.returncode
        print(flush=True)
    print(f"all benchmarks: {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
