"""Credentials never reach a message: a secret in the endpoint's query, in its
userinfo or in ``OTEL_EXPORTER_OTLP_HEADERS`` stays out of every line adk-otel
prints or logs, the exit summary included, whatever the exporter's failure
(connection refused, timeout, HTTP 401 or 500, TLS error) and whatever the
exporter's own error text quotes. Real child processes, real local servers."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from .conftest import ChildResult, refused_url, run_child

QUERY_SECRET = "QUERYSECRET41"
USER_SECRET = "USERSECRET42"
HEADER_SECRET = "HEADERSECRET43"
SECRETS = (QUERY_SECRET, USER_SECRET, HEADER_SECRET)
RUNS = 1


class _Echoing(http.server.BaseHTTPRequestHandler):
    """Answers every POST with the status the server was given, its body
    quoting the request line and headers back (as some servers do), so the
    exporter's error text carries every secret the request did."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        body = f"refused {self.requestline} {dict(self.headers)}".encode()
        self.send_response(self.server.status)  # type: ignore[attr-defined]
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def answering() -> Iterator[dict[int, str]]:
    """Two loopback HTTP servers answering 401 and 500: ``{status: host:port}``."""
    servers = {}
    for status in (401, 500):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echoing)
        server.status = status  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers[status] = server
    try:
        yield {status: f"127.0.0.1:{s.server_address[1]}" for status, s in servers.items()}
    finally:
        for server in servers.values():
            server.shutdown()
            server.server_close()


def _with_secrets(scheme: str, host_port: str) -> dict[str, str]:
    url = f"{scheme}://user:{USER_SECRET}@{host_port}/v1/traces?token={QUERY_SECRET}&x=1"
    return {
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": url,
        "OTEL_EXPORTER_OTLP_HEADERS": f"authorization={quote('Bearer ' + HEADER_SECRET)},x-k=v",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "2",
        "OTEL_BSP_EXPORT_TIMEOUT": "2000",
    }


def _assert_no_secret(result: ChildResult, reported: str = "were not exported") -> None:
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.report["runs_ok"] == RUNS
    problems = result.problems()
    # The failure was reported (else this test would prove nothing) ...
    assert any(reported in line for line in problems), result.stderr[-3000:]
    # ... and nothing anywhere, warning, log or exit summary, carries a secret.
    everything = result.stderr + "\n" + str(result.report)
    leaked = [s for s in SECRETS if s in everything]
    assert not leaked, f"{leaked} leaked:\n" + "\n".join(
        line for line in everything.splitlines() if any(s in line for s in leaked)
    )


MODES = ("refused", "timeout", "http-401", "http-500", "tls", "grpc-refused", "grpc-userinfo")


@pytest.mark.parametrize("mode", MODES)
def test_no_secret_in_any_message(mode: str, answering: dict[int, str], silent_port: str) -> None:
    if mode == "refused":
        host_port = refused_url("grpc").removeprefix("http://")
        env = _with_secrets("http", host_port)
    elif mode == "timeout":
        env = _with_secrets("http", silent_port)
    elif mode == "grpc-refused":  # the gRPC exporter quotes its target, query and all
        env = _with_secrets("http", refused_url("grpc").removeprefix("http://"))
        url = env.pop("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").replace("/v1/traces", "")
        url = url.replace(f"user:{USER_SECRET}@", "")
        env.update(OTEL_EXPORTER_OTLP_PROTOCOL="grpc", OTEL_EXPORTER_OTLP_ENDPOINT=url)
    elif mode == "grpc-userinfo":  # refused up front: gRPC would take it as the host name
        env = _with_secrets("http", refused_url("grpc").removeprefix("http://"))
        url = env.pop("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").replace("/v1/traces", "")
        env.update(OTEL_EXPORTER_OTLP_PROTOCOL="grpc", OTEL_EXPORTER_OTLP_ENDPOINT=url)
        _assert_no_secret(run_child(RUNS, env), "gRPC takes user:password@")
        return
    elif mode == "tls":
        env = _with_secrets("https", answering[500])  # https to a plain-http port
    else:
        env = _with_secrets("http", answering[int(mode.removeprefix("http-"))])
    _assert_no_secret(run_child(RUNS, env))


def test_no_secret_in_the_warning_while_running(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The first failure is reported during the run (not only at exit): that
    warning, quoting the exporter, is redacted too."""
    from adk_otel.pipeline.provider import build_tracer_provider

    host_port = refused_url("grpc").removeprefix("http://")
    for name, value in _with_secrets("http", host_port).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    provider = build_tracer_provider()
    caplog.set_level("WARNING")
    provider.get_tracer("secrets").start_span("one").end()
    provider.force_flush(10_000)
    running = [r.getMessage() for r in caplog.records]
    provider.shutdown()
    everything = [r.getMessage() for r in caplog.records]
    assert any("could not export 1 span(s)" in m for m in running), running
    assert any("were not exported" in m for m in everything), everything
    assert any("?***" in m for m in running), running  # the query is masked, not dropped
    assert not [m for m in everything if any(s in m for s in SECRETS)], everything
