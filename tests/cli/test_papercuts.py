"""The CLI's small promises: demo --json checked first and replaced, raw
OTLP/HTTP protobuf bodies read, each command's own usage and exit codes."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest

from adk_otel.cli.main import main
from adk_otel.traces.io.files import read_records

from .conftest import Exported


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def by_key(records) -> dict:
    return {record.key: record for record in records}


# -- demo --json ---------------------------------------------------------------------


def test_demo_json_into_a_missing_directory_is_one_line_before_the_run(capsys, tmp_path) -> None:
    target = tmp_path / "no-such-dir" / "x.json"
    code, out, err = run_cli(capsys, "demo", "--json", str(target))
    assert (code, out) == (2, ""), "the demo does not run"
    assert err == (
        f"adk-otel demo: error: --json {target}: cannot write (No such file or directory)\n"
    )
    code, out, err = run_cli(capsys, "demo", "--json", str(tmp_path))
    assert (code, out) == (2, "")
    assert err.startswith(f"adk-otel demo: error: --json {tmp_path}: cannot write (")
    assert err.count("\n") == 1


def test_demo_json_replaces_the_file_unless_append(capsys, tmp_path) -> None:
    target = tmp_path / "trace.json"
    for _ in range(2):
        code, out, _ = run_cli(capsys, "demo", "--json", str(target))
        assert code == 0 and f"trace written to {target}" in out
    assert len({record.trace_id for record in read_records([str(target)])}) == 1
    code, out, _ = run_cli(capsys, "demo", "--json", str(target), "--append")
    assert code == 0 and f"trace added to {target}" in out
    assert len({record.trace_id for record in read_records([str(target)])}) == 2


def test_demo_append_needs_json(capsys) -> None:
    code, out, err = run_cli(capsys, "demo", "--append")
    assert (code, out) == (2, "")
    assert err.endswith("adk-otel demo: error: --append needs --json FILE\n")


def test_demo_help_is_plain_text(capsys) -> None:
    code, out, _ = run_cli(capsys, "demo", "--help")
    assert code == 0
    assert "``" not in out
    assert "adk-otel demo: a small multi-agent shop" in out and "--append" in out


# -- raw OTLP/HTTP protobuf bodies -----------------------------------------------------


def test_a_raw_otlp_http_body_is_read(capsys, exported: Exported, tmp_path) -> None:
    """What an exporter POSTs (an ExportTraceServiceRequest, no length prefix),
    as a receiver may save it: plain, gzip-encoded, several concatenated."""
    bodies = [request.SerializeToString() for request in exported.requests]
    assert all(body[:1] == b"\n" for body in bodies)
    one = tmp_path / "body.bin"
    one.write_bytes(bodies[0])
    first = read_records([str(one)])
    assert first and all(by_key(exported.records)[r.key] == r for r in first)
    every = tmp_path / "bodies.bin"
    every.write_bytes(b"".join(bodies))  # concatenated messages merge: every span
    assert by_key(read_records([str(every)])) == by_key(exported.records)
    zipped = tmp_path / "body.gz"
    zipped.write_bytes(gzip.compress(b"".join(bodies)))
    assert by_key(read_records([str(zipped)])) == by_key(exported.records)
    done = subprocess.run(
        [sys.executable, "-m", "adk_otel.cli", "tree", "-", "--no-color"],
        input=b"".join(bodies),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout.count(b"invocation shop") == 2


def test_json_after_blank_lines_is_still_json(capsys, collector_file: Path, tmp_path) -> None:
    padded = tmp_path / "padded.jsonl"
    padded.write_bytes(b"\n\n  \n" + collector_file.read_bytes())
    assert by_key(read_records([str(padded)])) == by_key(read_records([str(collector_file)]))


def test_binary_that_is_neither_says_what_is_read(capsys, tmp_path) -> None:
    path = tmp_path / "junk.bin"
    path.write_bytes(b"\n\x05\xff\xfe garbage")
    code, out, err = run_cli(capsys, "tree", str(path))
    assert (code, out) == (2, "")
    assert err == f"adk-otel: error: {path}: not OTLP JSON, nor an OTLP protobuf request body\n"
    path.write_bytes(b"\x7fELF\x00\x01")
    code, out, err = run_cli(capsys, "tree", str(path))
    assert (code, out) == (2, "")
    assert "not a text file, so not OTLP JSON (nor OTLP protobuf, which is read" in err


# -- usage ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["tree", "check"])
def test_an_unknown_flag_shows_its_command_usage(
    capsys, collector_file, shop_spec, command
) -> None:
    spec = ["--expect", str(shop_spec)] if command == "check" else []
    code, out, err = run_cli(capsys, command, str(collector_file), "--bogus", *spec)
    assert (code, out) == (2, "")
    assert err.startswith(f"usage: adk-otel {command} ")
    assert err.endswith(f"adk-otel {command}: error: unrecognized arguments: --bogus\n")


def test_an_error_is_one_line_whatever_the_file_is_called(capsys, tmp_path) -> None:
    odd = tmp_path / "two\nlines.json"
    code, out, err = run_cli(capsys, "tree", str(odd))
    assert (code, out) == (2, "")
    assert err == f"adk-otel: error: {tmp_path}/two\\nlines.json: no such file\n"


# -- help ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["tree", "check"])
def test_help_names_every_input_format_and_each_heading_once(capsys, command) -> None:
    code, out, _ = run_cli(capsys, command, "--help")
    assert code == 0
    assert "OTLP JSON file" not in out
    for form in ("JSON Lines", "protobuf", "gzip", "zstd"):
        assert form in out.split("positional arguments:")[0], form
    headings = [line for line in out.splitlines() if line and not line.startswith(" ")]
    assert len(headings) == len(set(headings)), headings
