"""The server path: ``clickhouse://`` sources through clickhouse-connect, to a
loopback server speaking ClickHouse's HTTP interface over the real engine;
and a server that cannot be used (unreachable, wrong credentials) is one
line, exit 2, with no secret in it."""

from __future__ import annotations

import json
import random
import socket
from pathlib import Path

import pytest
from compare.synth import Shape, write_runs

from .clickhouse_http import PASSWORD, USER, clickhouse_server
from .test_store import run, strip_sources


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CLICKHOUSE_USER", USER)
    monkeypatch.setenv("CLICKHOUSE_PASSWORD", PASSWORD)
    with clickhouse_server(tmp_path / "server-data") as port:
        yield f"clickhouse://127.0.0.1:{port}/otel"


def test_load_and_compare_through_a_server_as_through_files(server, tmp_path, capsys) -> None:
    base = write_runs(tmp_path / "base.jsonl", random.Random(11), 200)
    cand = write_runs(tmp_path / "cand.jsonl", random.Random(12), 200, Shape(error_rate=0.25))
    code, out, err = run(capsys, "load", str(base), "--into", server + "?table=base")
    assert (code, err) == (0, ""), err
    assert "spans into otel.base" in out
    assert run(capsys, "load", str(cand), "--into", server + "?table=cand")[0] == 0
    files = run(capsys, "compare", str(base), str(cand), "--fail-on", "errors")
    served = run(
        capsys, "compare", server + "?table=base", server + "?table=cand", "--fail-on", "errors"
    )
    assert files[0] == served[0] == 1
    assert strip_sources(served[1]) == strip_sources(files[1])
    summary = run(capsys, "summarize", server + "?table=cand", "--format", "json")
    assert json.loads(summary[1])["runs"] == 200
    tree = run(capsys, "tree", server + "?table=base", "--format", "json", "--max-spans", "100000")
    assert tree[0] == 0, tree[2]
    assert len(json.loads(tree[1])["traces"]) == 200


def test_wrong_credentials_are_one_line_without_the_password(server, monkeypatch, capsys) -> None:
    monkeypatch.setenv("CLICKHOUSE_PASSWORD", "not-" + PASSWORD)
    code, out, err = run(capsys, "summarize", server)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "refused the credentials" in err
    assert PASSWORD not in err


def test_a_missing_table_on_a_server_is_named(server, capsys) -> None:
    code, _, err = run(capsys, "compare", server, "--baseline", "a=1", "--candidate", "a=2")
    assert code == 2 and "no table otel.otel_traces" in err and err.count("\n") == 1


def test_an_unreachable_server_is_one_line(monkeypatch, capsys) -> None:
    monkeypatch.setenv("CLICKHOUSE_PASSWORD", PASSWORD)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code, out, err = run(capsys, "summarize", f"clickhouse://127.0.0.1:{port}/otel")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "cannot reach the server" in err and PASSWORD not in err


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("clickhouse://user:pw@127.0.0.1:8123/otel", "put no credentials in the URL"),
        ("clickhouse://127.0.0.1:8123/otel;drop", "is not a plain name"),
        ("clickhouse://127.0.0.1:8123/otel?table=a.b", "is not a plain name"),
        ("clickhouse://127.0.0.1:port/otel", "the port is not a number"),
    ],
)
def test_a_malformed_source_is_one_line(source: str, message: str, capsys) -> None:
    code, out, err = run(capsys, "summarize", source)
    assert (code, out) == (2, "") and message in err and "pw" not in err.replace(message, "")


def test_tls_to_a_plain_port_is_one_line_from_a_real_process(tmp_path: Path) -> None:
    """In a process of its own (no test logging capture): the client's own
    log lines must not reach stderr beside the one line."""
    import os
    import subprocess
    import sys

    from .clickhouse_http import clickhouse_server as served

    with served(tmp_path / "data") as port:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "adk_otel.cli",
                "summarize",
                f"clickhouses://127.0.0.1:{port}/otel",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "CLICKHOUSE_USER": USER, "CLICKHOUSE_PASSWORD": PASSWORD},
        )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.count("\n") == 1 and "TLS handshake failed" in done.stderr, done.stderr
    assert PASSWORD not in done.stderr
