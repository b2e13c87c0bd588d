"""Time and peak memory of ``adk-otel summarize`` and ``adk-otel compare`` at scale.

Writes two directories of JSON Lines trace files, ``--runs`` synthetic runs a
side (one invocation, one agent, four or five model calls and their tool
calls: about 10 spans a run, 100 spans an export batch; the candidate's tokens
doubled), then in a fresh process each: ``summarize`` the baseline,
``compare`` the two directories, ``compare`` the summary with the candidate
directory. Reports wall and CPU time and the child's peak RSS, at a tenth of the runs
too, so the growth with runs shows.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))

from compare.synth import Shape, write_runs

HERE = Path(__file__).parent


def measure(*args: str) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in MB, exit code) of one ``adk-otel``
    run in a fresh process. The peak is the child's own ``VmHWM`` (a fresh
    address space after exec; ``ru_maxrss`` would carry this parent's over)."""
    code = (
        "import sys; from adk_otel.cli import main; code = main(sys.argv[1:]); "
        "status = open('/proc/self/status').read(); "
        "print(status.split('VmHWM:')[1].split()[0], file=sys.stderr); sys.exit(code)"
    )
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, stderr = child.communicate()
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime - sum(_CPU)
    _CPU.append(cpu)
    if child.returncode not in (0, 1):
        raise SystemExit(f"adk-otel exited with {child.returncode}: {stderr.decode()[-500:]}")
    return seconds, cpu, int(stderr.split()[-1]) / 1024, child.returncode


_CPU: list[float] = []


def one_size(root: Path, runs: int) -> list[dict[str, object]]:
    rng = random.Random(runs)
    sides = {}
    for name, shape in (
        ("baseline", Shape(model_calls=4)),
        ("candidate", Shape(model_calls=4, token_scale=2.0)),
    ):
        folder = root / f"{name}-{runs}"
        folder.mkdir()
        write_runs(folder / "traces.jsonl", rng, runs, shape)
        sides[name] = folder
    spans = (sides["baseline"] / "traces.jsonl").read_text().count('"spanId"')
    summary = root / f"baseline-{runs}.summary.json"
    rows = []
    for label, args in (
        ("summarize baseline", ["summarize", str(sides["baseline"]), "-o", str(summary)]),
        (
            "compare dir vs dir",
            ["compare", str(sides["baseline"]), str(sides["candidate"]), "--fail-on", "any"],
        ),
        (
            "compare summary vs dir",
            ["compare", str(summary), str(sides["candidate"]), "--fail-on", "any"],
        ),
    ):
        seconds, cpu, rss, code = measure(*args)
        rows.append(
            {
                "runs_per_side": runs,
                "spans_per_side": spans,
                "step": label,
                "seconds": round(seconds, 2),
                "cpu_seconds": round(cpu, 2),
                "peak_rss_mb": round(rss, 1),
                "exit_code": code,
            }
        )
    rows.append(
        {"runs_per_side": runs, "step": "summary file bytes", "bytes": summary.stat().st_size}
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = one_size(Path(tmp), args.runs // 10) + one_size(Path(tmp), args.runs)
    for row in rows:
        print(json.dumps(row))
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "compare_scale.json").write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
