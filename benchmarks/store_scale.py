"""Time and peak memory of ``adk-otel compare`` on an embedded ClickHouse store at scale.

Fills one chDB store (the Collector exporter's ``otel_traces`` table) with
``--runs`` synthetic runs a side, made by the engine itself (``INSERT ...
SELECT`` over ``numbers()``: one invocation, one agent, two or three model
calls and their tool calls a run, about 5.6 spans; ``service.version`` 1.4
for the baseline and 1.5 for the candidate, whose error rate and tokens are
higher), then in a fresh process ``adk-otel compare chdb:DIR --baseline
service.version=1.4 --candidate service.version=1.5 --fail-on any``: wall and
CPU time and the child's peak RSS (``VmHWM``). ``--files`` also writes the
same number of runs a side as trace files (tests/compare/synth.py) and times
the file path's compare, where it still runs in reasonable time.

    .venv/bin/python benchmarks/store_scale.py --runs 100000 --files
    .venv/bin/python benchmarks/store_scale.py --runs 1000000
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))

from compare_scale import measure

HERE = Path(__file__).parent

_FILL = """
INSERT INTO default.otel_traces (Timestamp, TraceId, SpanId, ParentSpanId, SpanName, SpanKind,
    ServiceName, ResourceAttributes, ScopeName, SpanAttributes, Duration, StatusCode)
SELECT
    fromUnixTimestamp64Nano(toInt64(start + j * 1000000)),
    trace, lower(hex(cityHash64(trace, j))), if(j = 0, '',
        if(j = 1, lower(hex(cityHash64(trace, 0))), lower(hex(cityHash64(trace, 1))))),
    multiIf(j = 0, 'invocation shop', j = 1, 'invoke_agent root',
        j < 2 + models, 'generate_content m', concat('execute_tool ', tool)),
    if(j >= 2 AND j < 2 + models, 'SPAN_KIND_CLIENT', 'SPAN_KIND_INTERNAL'),
    'shop', map('service.name', 'shop', 'service.version', '{version}'), 'adk_otel',
    mapFilter((k, v) -> v != '', map(
        'adk.span.kind', kind,
        'adk.invocation.id', concat('e-', toString(n)),
        'adk.app.name', if(j = 0, 'shop', ''),
        'gen_ai.operation.name', if(j = 0, 'invoke_workflow', ''),
        'gen_ai.agent.name', 'root',
        'gen_ai.request.model', if(kind = 'model', 'm', ''),
        'gen_ai.tool.name', if(kind = 'tool', tool, ''),
        'gen_ai.usage.input_tokens', if(kind = 'model',
            toString(toUInt32(exp(7 + 0.3 * sin(n + j)) * {scale})), ''),
        'gen_ai.usage.output_tokens', if(kind = 'model',
            toString(toUInt32(exp(5 + 0.3 * cos(n * j)) * {scale})), ''),
        'adk.outcome', outcome,
        'error.type', if(outcome = 'error', 'TimeoutError', ''))),
    if(j = 0, latency, toUInt64(latency / (2 + models + tools))),
    if(outcome = 'error', 'STATUS_CODE_ERROR', 'STATUS_CODE_OK')
FROM (
    SELECT n, trace, start, models, tools, failed, latency, j,
        multiIf(j = 0, 'invocation', j = 1, 'agent', j < 2 + models, 'model', 'tool') AS kind,
        if(failed AND (j < 2 OR j = 1 + models + tools), 'error', 'ok') AS outcome,
        if(h % 5 = 0 AND j = 2 + models, 'search', 'lookup') AS tool
    FROM (
        SELECT number + {offset} AS n, cityHash64(n) AS h,
            lower(hex(MD5(toString(n)))) AS trace,
            1700000000000000000 + n * 1000000000 AS start,
            2 + (h % 10 < 3) AS models, models - 1 + {extra_tool} AS tools,
            (h % 1000) < {errors_per_mille} AS failed,
            toUInt64(exp(6.9 + 0.5 * sin(n)) * 1000000) AS latency
        FROM numbers({runs})
    )
    ARRAY JOIN range(toUInt64(2 + models + tools)) AS j
)
"""


def fill(path: Path, runs: int) -> int:
    """Both sides into the store at ``path``, in a child process (chDB opens
    one store per process); the spans written."""
    code = f"""
import sys
from adk_otel.traces.store import engine, spans
with engine.open_store('chdb:{path}', create=True) as store:
    table = spans.create_table(store)
    for sql in sys.stdin.read().split(';;'):
        store.command(sql)
    print(store.rows(f'SELECT count() FROM {{table}}')[0][0])
"""
    statements = [
        _FILL.format(
            version="1.4", scale=1.0, offset=0, extra_tool=0, errors_per_mille=50, runs=runs
        ),
        _FILL.format(
            version="1.5", scale=1.2, offset=runs, extra_tool=1, errors_per_mille=80, runs=runs
        ),
    ]
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=";;".join(statements),
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100_000, help="runs a side")
    parser.add_argument("--files", action="store_true", help="time the file path too")
    parser.add_argument("--keep", metavar="DIR", help="make the store here and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(args.keep or scratch)
        store = root / "store"
        started = time.perf_counter()
        total = fill(store, args.runs)
        filled = time.perf_counter() - started
        rows: list[dict[str, object]] = []
        wall, cpu, rss, code = measure(
            "compare",
            f"chdb:{store}",
            "--baseline",
            "service.version=1.4",
            "--candidate",
            "service.version=1.5",
            "--fail-on",
            "any",
        )
        rows.append(
            {
                "path": "store",
                "runs": args.runs,
                "spans": total,
                "wall_s": round(wall, 2),
                "cpu_s": round(cpu, 2),
                "peak_rss_mb": round(rss, 1),
                "exit": code,
                "fill_s": round(filled, 1),
            }
        )
        if args.files:
            from compare.synth import Shape, write_runs

            base = write_runs(root / "base.jsonl", random.Random(1), args.runs)
            cand = write_runs(
                root / "cand.jsonl",
                random.Random(2),
                args.runs,
                Shape(error_rate=0.08, token_scale=1.2, extra_tool_call=True),
            )
            wall, cpu, rss, code = measure("compare", str(base), str(cand), "--fail-on", "any")
            rows.append(
                {
                    "path": "files",
                    "runs": args.runs,
                    "wall_s": round(wall, 2),
                    "cpu_s": round(cpu, 2),
                    "peak_rss_mb": round(rss, 1),
                    "exit": code,
                }
            )
    for row in rows:
        print(json.dumps(row))
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    (results / f"store_scale-{args.runs}.json").write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
