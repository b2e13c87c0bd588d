"""Hostile trace files: bounded memory and time, one line, exit 2.

Each input runs the real command in a child process whose address space is
capped (RLIMIT_AS) below what the input would inflate to, with a timeout, so
a reader that gathers a payload whole, decompresses without an output cap or
loops over endless empty input fails here instead of passing slowly. The
bombs are built small and fast: sparse files by truncate, gzip and zstd by
repeating one compressed member or block.
"""

from __future__ import annotations

import gzip
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import pytest
import zstandard

from .collector_files import as_lines, json_messages, length_prefixed, proto_messages
from .conftest import Exported

MEMORY = 512 << 20  # the child's address space: far below every bomb's payload
TIMEOUT = 60
GIB = 1 << 30


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def run_bounded(
    *argv: str, stdin: IO[bytes] | int | None = None, env: dict[str, str] | None = None
) -> tuple[int, str, str, float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "adk_otel.cli", *argv],
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
        preexec_fn=_cap_memory,
        env={**os.environ, **(env or {})},
    )
    took = time.monotonic() - started
    return done.returncode, done.stdout.decode(), done.stderr.decode(), took


def one_line_exit_2(result: tuple[int, str, str, float], message: str) -> None:
    code, out, err, _ = result
    assert (code, out) == (2, ""), err
    assert err.startswith("adk-otel: error: ") and err.count("\n") == 1, err
    assert message in err, err


def gzip_bomb(piece: bytes, copies: int) -> bytes:
    """``piece * copies`` inflated: one gzip member repeated (a valid multi-member file)."""
    return gzip.compress(piece, 9) * copies


def zstd_frame_bomb(piece: bytes, copies: int) -> bytes:
    """One zstd frame inflating to ``piece * copies``."""
    compressor = zstandard.ZstdCompressor(level=1).compressobj()
    return b"".join([*(compressor.compress(piece) for _ in range(copies)), compressor.flush()])


def zstd_stream_bomb(piece: bytes, copies: int) -> bytes:
    """A zstd stream of ``copies`` frames, each inflating to ``piece``."""
    return zstandard.ZstdCompressor(level=19).compress(piece) * copies


def sparse(path: Path, head: bytes, size: int) -> Path:
    with open(path, "wb") as handle:
        handle.write(head)
        handle.truncate(size)
    return path


MIB8 = 8 << 20
LIMIT = "raise it with"


def test_dev_zero_as_a_file_and_on_stdin() -> None:
    zero = "message 1: a length prefix of 0, an empty message"
    one_line_exit_2(run_bounded("tree", "/dev/zero"), f"/dev/zero: {zero}")
    with open("/dev/zero", "rb") as stdin:
        one_line_exit_2(run_bounded("tree", "-", stdin=stdin), f"<stdin>: {zero}")


def test_a_sparse_gigabyte_of_zeros(tmp_path) -> None:
    path = sparse(tmp_path / "zeros.bin", b"", GIB)
    one_line_exit_2(run_bounded("tree", str(path)), "a length prefix of 0")


def test_length_prefixes_claiming_gigabytes(exported: Exported, tmp_path) -> None:
    valid = length_prefixed(proto_messages(exported.requests[:1]))
    after = tmp_path / "after-valid.bin"
    after.write_bytes(valid + b"\xff\xff\xff\xff" + b"x" * 100)
    one_line_exit_2(
        run_bounded("tree", str(after)),
        "message 2: the length prefix says 4294967295 bytes (the limit for one protobuf"
        " message is 64 MiB; raise it with --max-message-mb or ADK_OTEL_MAX_MESSAGE_MB)",
    )
    # 4 GB claimed at the start of a 4 GB sparse file: not even a length prefix
    # (those start below 0x09), and binary: refused at its first bytes.
    big = sparse(tmp_path / "claims-4g.bin", b"\xff\xff\xff\xff", 4 * GIB)
    one_line_exit_2(run_bounded("tree", str(big)), "not a text file")
    # A prefix at the limit over a sparse file: read (64 MiB), then refused.
    at_limit = sparse(tmp_path / "at-limit.bin", (64 << 20).to_bytes(4, "big"), 4 * GIB)
    one_line_exit_2(run_bounded("tree", str(at_limit)), "message 1: not OTLP protobuf traces")


def test_zstd_bombs(tmp_path) -> None:
    frame = tmp_path / "frame.zst"  # one frame, 1 GiB of one endless line
    frame.write_bytes(zstd_frame_bomb(b"x" * MIB8, 128))
    assert frame.stat().st_size < 100_000
    one_line_exit_2(run_bounded("tree", str(frame)), "line 1: longer than allowed")
    stream = tmp_path / "stream.zst"  # 128 frames, 1 GiB of blank space
    stream.write_bytes(zstd_stream_bomb(b" " * MIB8, 128))
    one_line_exit_2(run_bounded("tree", str(stream)), "of blank space, no span in it")
    # The exporter's per-message compression: a frame in a message inflating to 1 GiB.
    inner = zstd_frame_bomb(b"{" * MIB8, 128)
    message = tmp_path / "message.bin"
    message.write_bytes(length_prefixed([inner]))
    one_line_exit_2(
        run_bounded("tree", str(message)),
        "message 1: a zstd frame inflating to more than allowed (the limit for one protobuf"
        " message is 64 MiB",
    )


def test_gzip_bombs(tmp_path) -> None:
    line = tmp_path / "line.gz"  # one 1 GiB line
    line.write_bytes(gzip_bomb(b'{"resourceSpans": "' + b"x" * MIB8, 128))
    one_line_exit_2(
        run_bounded("tree", str(line)),
        "line 1: longer than allowed (the limit for one JSON document or line is 64 MiB;"
        " raise it with --max-document-mb or ADK_OTEL_MAX_DOCUMENT_MB)",
    )
    for name, piece in (("blank-lines.gz", b"\n" * MIB8), ("whitespace.gz", b" \t" * (MIB8 // 2))):
        path = tmp_path / name  # 1 GiB of blank lines / JSON whitespace from ~1 MB
        path.write_bytes(gzip_bomb(piece, 128))
        result = run_bounded("tree", str(path))
        one_line_exit_2(
            result,
            "of blank space, no span in it (the limit for input without a span is 64 MiB;"
            " raise it with --max-without-spans-mb or ADK_OTEL_MAX_WITHOUT_SPANS_MB)",
        )
        assert result[3] < 30, "stopped after the limit, not after the gigabyte"


def test_text_that_starts_no_document_is_refused_at_its_first_line(tmp_path) -> None:
    path = tmp_path / "yes.gz"  # `yes | gzip`: 1 GiB of "y" lines
    path.write_bytes(gzip_bomb(b"y\n" * (MIB8 // 2), 128))
    result = run_bounded("tree", str(path))
    one_line_exit_2(result, f"{path}: line 1: invalid JSON (Expecting value)")
    assert result[3] < 30


def test_documents_without_spans_stop_at_the_limit(tmp_path) -> None:
    """Valid, endless, spanless: tiny ones stop by their number (each counts
    1 KiB), larger ones by their bytes; in seconds either way."""
    tiny = tmp_path / "empty-documents.gz"  # 22 bytes each, millions of them
    tiny.write_bytes(gzip_bomb(b'{"resourceSpans": []}\n' * 100_000, 500))
    messages = tmp_path / "empty-messages.gz"  # 6 bytes each, protobuf
    messages.write_bytes(gzip_bomb(b"\x00\x00\x00\x02\x0a\x00" * (1 << 20), 100))
    for path in (tiny, messages):
        result = run_bounded("tree", str(path))
        one_line_exit_2(
            result,
            "no span in 65537 documents or messages in a row from the start (the limit for"
            " input without a span is 64 MiB",
        )
        assert result[3] < 30
    metrics = tmp_path / "metrics-only.gz"  # 4 KiB documents of another signal
    line = b'{"resourceMetrics": [], "padding": "' + b"m" * 4000 + b'"}\n'
    metrics.write_bytes(gzip_bomb(line * 1000, 100))
    one_line_exit_2(
        run_bounded("tree", str(metrics), "--max-without-spans-mb", "8"),
        "no span in more than 8 MiB of input from the start (the limit for input without a"
        " span is 8 MiB",
    )


def test_a_pretty_document_is_capped_whole(collector_file: Path, tmp_path) -> None:
    path = tmp_path / "pretty.json.gz"
    path.write_bytes(gzip_bomb(b'{\n  "resourceSpans": [\n' + b'  "x",\n' * 100_000, 200))
    one_line_exit_2(run_bounded("tree", str(path)), "line 1: a JSON document longer than allowed")


def test_integers_too_long_to_convert(capsys, collector_file: Path, tmp_path) -> None:
    """Python converts integers of at most 4,300 digits: a longer one in a
    trace file or the spec is bad input, not a traceback."""
    from adk_otel.cli.main import main

    huge = "9" * 5000
    span = f'{{"traceId": "{"a" * 32}", "spanId": "{"b" * 16}", "startTimeUnixNano": {huge}}}'
    for name, text in (
        ("top.json", f'{{"resourceSpans": [], "x": {huge}}}\n'),
        ("span.json", f'{{"resourceSpans": [{{"scopeSpans": [{{"spans": [{span}]}}]}}]}}\n'),
    ):
        (tmp_path / name).write_text(text)
        assert main(["tree", str(tmp_path / name)]) == 2
        out, err = capsys.readouterr()
        assert (out, err) == (
            "",
            f"adk-otel: error: {tmp_path / name}: line 1: not OTLP JSON (Exceeds the limit"
            " (4300 digits) for integer string conversion: value has 5000 digits)\n",
        )
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"traces: {huge}\n")
    assert main(["check", str(collector_file), "--expect", str(spec)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"adk-otel: error: {spec}: not a spec (Exceeds the limit")
    assert err.count("\n") == 1


@pytest.mark.timeout(360)  # slow: 10-40 s on a loaded 2-core machine
def test_a_chain_of_50000_spans_prints_in_linear_space(tmp_path) -> None:
    """Each span the child of the one before, all failed with one message: the
    text tree's indentation stops growing past a depth (else 50,000 lines of up
    to 150,000 characters: gigabytes), and the message is shown once, found in
    one pass (else each span searches all below it)."""
    count = 50_000
    spans = [
        {
            "traceId": "a" * 32,
            "spanId": f"{i + 1:016x}",
            **({"parentSpanId": f"{i:016x}"} if i else {}),
            "name": f"s{i}",
            "startTimeUnixNano": str(i + 1),
            "endTimeUnixNano": str(2 * count - i),
            "status": {"code": 2, "message": "boom"},
        }
        for i in range(count)
    ]
    path = tmp_path / "chain.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    for form in ([], ["--normalized"]):
        code, out, err, _ = run_bounded("tree", str(path), "--no-color", *form)
        assert (code, err) == (0, "")
        lines = out.splitlines()
        assert len(lines) == count
        assert max(map(len, lines)) < 250
    # The readable form shows the message once, on the deepest span.
    assert out.count("boom") == count  # the snapshot form: on every span
    code, out, _, _ = run_bounded("tree", str(path), "--no-color")
    assert out.count("boom") == 1
    assert out.splitlines()[-1].endswith(f"[{count - 1}] s{count - 1}  ERROR 0.0ms  [boom]")
    # A spec's ``under`` finds every descendant in one walk, not each span's ancestors.
    spec = tmp_path / "under.yaml"
    entry = f'  - name_matches: "."\n    under: {{name: s0}}\n    count: {count - 1}\n'
    spec.write_text("spans:\n" + entry)
    code, out, err, took = run_bounded("check", str(path), "--expect", str(spec))
    assert (code, err) == (0, ""), out
    assert took < 30


def test_the_spec_is_bounded(collector_file: Path) -> None:
    one_line_exit_2(
        run_bounded("check", str(collector_file), "--expect", "/dev/zero"),
        "/dev/zero: larger than allowed (the limit for a spec is 1 MiB; raise it with"
        " --max-spec-mb or ADK_OTEL_MAX_SPEC_MB)",
    )


def test_symlink_loop_and_closed_streams(collector_file: Path, tmp_path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "loop")
    one_line_exit_2(run_bounded("tree", str(loop)), f"{loop}: cannot read (")
    code, out, err = _shell("tree - <&-")
    assert (code, out, err) == (2, "", "adk-otel: error: -: stdin is closed, nothing to read\n")
    code, out, err = _shell(f"tree {collector_file} >&-")
    assert (code, out, err) == (2, "", "adk-otel: error: stdout is closed, nowhere to write\n")


def _shell(arguments: str) -> tuple[int, str, str]:
    done = subprocess.run(
        ["sh", "-c", f"exec '{sys.executable}' -m adk_otel.cli {arguments}"],
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def test_raised_limits_still_end_in_one_line(tmp_path) -> None:
    """Limits raised past the memory there is: the MemoryError is one line too."""
    path = tmp_path / "line.gz"
    path.write_bytes(gzip_bomb(b"x" * MIB8, 128))
    one_line_exit_2(
        run_bounded("tree", str(path), "--max-document-mb", "100000"),
        "out of memory holding the traces",
    )


def test_limits_are_set_by_flag_or_environment(collector_file: Path, tmp_path) -> None:
    small = "line 1: longer than allowed (the limit for one JSON document or line is 1000 bytes"
    one_line_exit_2(
        run_bounded("tree", str(collector_file), "--max-document-mb", "0.00095367431640625"),
        small,
    )
    env = {"ADK_OTEL_MAX_DOCUMENT_MB": "0.00095367431640625"}
    one_line_exit_2(run_bounded("tree", str(collector_file), env=env), small)
    # The flag wins over the variable.
    assert run_bounded("tree", str(collector_file), "--max-document-mb", "1", env=env)[0] == 0
    one_line_exit_2(
        run_bounded("tree", str(collector_file), env={"ADK_OTEL_MAX_SPEC_MB": "lots"}),
        "ADK_OTEL_MAX_SPEC_MB='lots': a limit is a positive number of MiB",
    )
    gz = tmp_path / "traces.json.gz"
    gz.write_bytes(gzip.compress(collector_file.read_bytes() * 200))
    one_line_exit_2(
        run_bounded("tree", str(gz), "--max-inflated-mb", "0.1"),
        "gzip data inflating to more than allowed (the limit for a decompressed file is"
        " 0.1 MiB; raise it with --max-inflated-mb or ADK_OTEL_MAX_INFLATED_MB)",
    )
    for bad in ("0", "-1", "nan", "inf", "x"):
        code, out, err, _ = run_bounded("tree", str(collector_file), "--max-message-mb", bad)
        assert (code, out) == (2, "")
        assert f"argument --max-message-mb: {bad!r} is not a positive number of MiB" in err


def test_within_the_limits_everything_still_reads(exported: Exported, tmp_path) -> None:
    """The limits bound hostile input only: real files, compressed or not, read as before."""
    data = as_lines(json_messages(exported.requests))
    for name, payload in (("t.json", data), ("t.json.gz", gzip.compress(data))):
        (tmp_path / name).write_bytes(payload)
        code, out, err, _ = run_bounded("tree", str(tmp_path / name), "--no-color")
        assert (code, err) == (0, "")
        assert out.count("invocation shop") == 2


def test_summarize_and_compare_read_within_the_same_bounds(collector_file: Path, tmp_path) -> None:
    # The same readers as tree / check: a gzip of JSON whitespace, the length
    # prefix at the start of /dev/zero, and a raised limit named by flag.
    bomb = tmp_path / "whitespace.gz"
    bomb.write_bytes(gzip_bomb(b" \t" * (MIB8 // 2), 128))
    blank = "of blank space, no span in it"
    one_line_exit_2(run_bounded("compare", str(collector_file), str(bomb)), blank)
    one_line_exit_2(run_bounded("compare", "/dev/zero", str(collector_file)), "a length prefix")
    one_line_exit_2(run_bounded("summarize", str(bomb), "-o", str(tmp_path / "s.json")), blank)
    one_line_exit_2(
        run_bounded("compare", str(collector_file), str(bomb), "--max-without-spans-mb", "1"),
        "the limit for input without a span is 1 MiB",
    )
