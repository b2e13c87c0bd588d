"""A first run with no collector: the one line at exit says what to do (start
one, keep the spans in a file, or turn export off) without the exporter's
stale retry note, the exit does not wait out a retry on a refused connection,
and the file exporter keeps the spans where the ``adk-otel`` commands read them."""

from __future__ import annotations

import io
from contextlib import redirect_stdout

from adk_otel.cli import main as cli_main
from adk_otel.traces.io.files import read_records

from .conftest import endpoint_env, refused_url, run_child

RUNS = 3
SPANS_PER_RUN = 8
EXIT_WAIT_LIMIT = 0.5
"""Seconds the exit may take with the export retrying (the exporter's first
backoff is 0.8 to 1.2 s: waiting it out shows as more than this)."""


def test_refused_connection_says_what_to_do_and_exit_does_not_wait():
    # A 1 ms schedule delay: the last batch's export is retrying when the app ends.
    env = {**endpoint_env("http/protobuf", refused_url("http/protobuf"))}
    result = run_child(RUNS, {**env, "OTEL_BSP_SCHEDULE_DELAY": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.report["exit_wait_s"] < EXIT_WAIT_LIMIT, result.report
    last = result.problems()[-1]
    assert f"{RUNS * SPANS_PER_RUN} of {RUNS * SPANS_PER_RUN} span(s) were not exported" in last
    assert "connection refused" in last
    assert "docker compose up -d" in last
    assert "OTEL_TRACES_EXPORTER=otlp_json_file" in last
    assert "OTEL_TRACES_EXPORTER=none" in last
    assert not [line for line in result.problems() if "retrying" in line], result.problems()


def test_file_exporter_from_the_environment_is_read_by_the_commands(tmp_path):
    path = tmp_path / "traces.jsonl"
    result = run_child(
        RUNS, {"OTEL_TRACES_EXPORTER": "otlp_json_file", "ADK_OTEL_TRACES_FILE": str(path)}
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.problems() == []
    assert result.report["exported"] == RUNS * SPANS_PER_RUN
    records = read_records([str(path)])
    assert len(records) == RUNS * SPANS_PER_RUN
    assert len({record.trace_id for record in records}) == RUNS
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli_main(["tree", str(path), "--no-color"]) == 0
    assert out.getvalue().count("invocation ") == RUNS


def test_file_exporter_beside_otlp(tmp_path, receiver):
    path = tmp_path / "traces.jsonl"
    env = endpoint_env("http/protobuf", receiver.http_endpoint)
    result = run_child(
        1, {**env, "OTEL_TRACES_EXPORTER": "otlp,otlp_json_file", "ADK_OTEL_TRACES_FILE": str(path)}
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.problems() == []
    assert len(read_records([str(path)])) == SPANS_PER_RUN
    assert result.report["exported"] == SPANS_PER_RUN  # the OTLP processor's count


def test_unknown_exporter_name_is_said_with_the_file_exporter(tmp_path):
    result = run_child(1, {"OTEL_TRACES_EXPORTER": "otlp_jsn_file"})
    assert result.returncode == 0, result.stderr[-3000:]
    said = [line for line in result.problems() if "otlp_jsn_file" in line]
    assert len(said) == 1 and "otlp_json_file" in said[0], result.problems()
