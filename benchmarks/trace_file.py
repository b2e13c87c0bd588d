"""Time and peak memory of ``adk-otel tree`` on a large collector trace file.

Writes a JSON Lines file of about ``--megabytes`` MB (export batches of 100
spans: the shop trace, 25 times per line with fresh trace ids), then runs
``adk-otel tree`` on it in a subprocess, once keeping every span, once
with ``--trace-id`` keeping one trace and once with ``--service`` keeping the
25 traces of the one line written as another service (the file is read
twice), and reports wall time and the child's peak RSS
(``resource.getrusage``). ``--src`` runs another checkout's
``src`` directory instead (e.g. the code before streaming).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))

from testing.builders import build_shop

from adk_otel.traces.io.otlp_json import spans_to_line

SERVICE, OTHER_SERVICE = "unknown_service", "billing"


def write_file(path: Path, megabytes: int) -> tuple[int, str]:
    """The file; returns (spans written, one trace id in it)."""
    spans = [span for _ in range(25) for span in build_shop().finished()]
    line = spans_to_line(spans)
    document = json.loads(line)
    trace_ids = sorted(
        {
            span["traceId"]
            for rs in document["resourceSpans"]
            for ss in rs["scopeSpans"]
            for span in ss["spans"]
        }
    )
    lines = 0
    with open(path, "w", encoding="utf-8") as handle:
        while handle.tell() < megabytes * 1024 * 1024:
            out = line
            for index, trace_id in enumerate(trace_ids):
                out = out.replace(trace_id, f"{lines:016x}{index:016x}")
            if lines == 0:
                out = out.replace(f'"{SERVICE}"', f'"{OTHER_SERVICE}"')
            handle.write(out + "\n")
            lines += 1
    return lines * len(spans), f"{lines // 2:016x}{3:016x}"


def measure(src: str | None, *args: str) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one ``adk-otel`` run in a fresh process."""
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    code = "import sys; from adk_otel.cli import main; sys.exit(main(sys.argv[1:]))"
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", code, *args], env=env, stdout=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(child.pid, 0)  # this child's own rusage
    seconds = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"adk-otel exited with {child.returncode}")
    return seconds, usage.ru_maxrss / 1024  # kB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--src", help="PYTHONPATH of the adk_otel to measure (before: old code)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "traces.jsonl"
        spans, trace_id = write_file(path, args.megabytes)
        size = path.stat().st_size / 1024 / 1024
        print(f"{path.name}: {size:.0f} MB, {spans} spans")
        seconds, peak = measure(args.src, "tree", str(path))
        print(f"tree, every span kept:     {seconds:6.1f} s  peak RSS {peak:6.0f} MB")
        if not args.src:  # older versions have no --trace-id
            seconds, peak = measure(None, "tree", str(path), "--trace-id", trace_id)
            print(f"tree --trace-id (1 trace): {seconds:6.1f} s  peak RSS {peak:6.0f} MB")
        seconds, peak = measure(args.src, "tree", str(path), "--service", OTHER_SERVICE)
        print(f"tree --service (25 traces): {seconds:5.1f} s  peak RSS {peak:6.0f} MB")


if __name__ == "__main__":
    main()
