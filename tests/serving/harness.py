"""Real server processes for the serving tests: ADK's FastAPI app (``main.py``
under uvicorn, or ``adk api_server``) with adk-otel as an extra plugin,
exporting over OTLP/HTTP to an :class:`OtlpReceiver` in the test process
(which outlives the server), driven over loopback HTTP and stopped by SIGTERM."""

from __future__ import annotations

import http.client
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checkout import python_path
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans

from adk_otel.testing.receiver import OtlpReceiver

HERE = Path(__file__).resolve().parent
AGENTS = HERE / "agents"
START_LIMIT = 90.0
"""Seconds a server may take to start (importing ADK takes seconds on a busy machine)."""
STOP_LIMIT = 30.0
"""Seconds a server may take from SIGTERM to exit."""
SPANS_PER_RUN = 5
"""invocation, invoke_agent, two model calls, one tool call."""


@dataclass
class Server:
    process: subprocess.Popen[str]
    url: str
    lines: queue.Queue[str] = field(default_factory=queue.Queue)
    log: list[str] = field(default_factory=list)

    def wait_for_line(self, text: str, count: int = 1, timeout: float = START_LIMIT) -> None:
        """Block until ``text`` appeared in ``count`` stderr lines (no sleeping)."""
        seen = sum(text in line for line in self.log)
        deadline = time.monotonic() + timeout
        while seen < count:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(
                    f"server: {seen} of {count} {text!r} line(s) within {timeout}s:\n"
                    + "\n".join(self.log[-40:])
                ) from None
            self.log.append(line)
            seen += text in line
            if self.process.poll() is not None and self.lines.empty():
                break
        if seen < count:
            raise RuntimeError("server exited early:\n" + "\n".join(self.log[-40:]))

    def stop(self) -> int:
        """SIGTERM, then wait for the exit; everything it printed is in ``log``."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(STOP_LIMIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
            raise AssertionError(
                f"server still running {STOP_LIMIT}s after SIGTERM:\n" + "\n".join(self.log[-40:])
            ) from None
        self._drain()
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def _drain(self) -> None:
        assert self.process.stderr is not None
        reader = getattr(self, "_reader", None)
        if reader is not None:
            reader.join(10)
        while not self.lines.empty():
            self.log.append(self.lines.get_nowait())

    @property
    def output(self) -> str:
        return "\n".join(self.log)


def server_env(receiver: OtlpReceiver, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ADK_OTEL_"))}
    return {
        **base,
        "PYTHONPATH": python_path(HERE),
        "SERVING_AGENTS": str(AGENTS),
        "OTEL_SERVICE_NAME": "shop-server",
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.http_endpoint.removesuffix("/v1/traces"),
        "ADK_OTEL_KEEP_ADK_SPANS": "false",
        "PYTHONUNBUFFERED": "1",
        **extra,
    }


def _start(argv: list[str], env: dict[str, str], url: str, **popen: Any) -> Server:
    process = subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=HERE,
        **popen,
    )
    server = Server(process, url)

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            server.lines.put(line.rstrip("\n"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    server._reader = reader  # type: ignore[attr-defined]
    return server


def uvicorn(receiver: OtlpReceiver, *options: str, **extra_env: str) -> Server:
    """``main.py`` under uvicorn on a loopback socket it inherits (``--fd``)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    try:
        server = _start(
            [sys.executable, "-m", "uvicorn", "main:app", "--fd", str(sock.fileno()), *options],
            server_env(receiver, **extra_env),
            f"http://127.0.0.1:{port}",
            pass_fds=(sock.fileno(),),
        )
    finally:
        sock.close()
    workers = int(options[options.index("--workers") + 1]) if "--workers" in options else 1
    server.wait_for_line("Application startup complete", count=workers)
    return server


def gunicorn(receiver: OtlpReceiver, workers: int, **extra_env: str) -> Server:
    """``main.py`` under gunicorn with uvicorn workers, on an inherited loopback socket."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    try:
        server = _start(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "main:app",
                "--worker-class",
                "uvicorn.workers.UvicornWorker",
                "--workers",
                str(workers),
                "--bind",
                f"fd://{sock.fileno()}",
                "--graceful-timeout",
                "20",
            ],
            server_env(receiver, **extra_env),
            f"http://127.0.0.1:{port}",
            pass_fds=(sock.fileno(),),
        )
    finally:
        sock.close()
    server.wait_for_line("Application startup complete", count=workers)
    return server


def api_server(
    receiver: OtlpReceiver, *options: str, command: str = "api_server", **extra_env: str
) -> Server:
    """``adk api_server`` (or ``adk web``) ``--extra_plugins adk_otel.AdkOtelPlugin``
    on a free loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    adk = [sys.executable, "-m", "google.adk.cli"]
    server = _start(
        [
            *adk,
            command,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--extra_plugins",
            "adk_otel.AdkOtelPlugin",
            "--no_use_local_storage",
            *options,
            str(AGENTS),
        ],
        server_env(receiver, **extra_env),
        f"http://127.0.0.1:{port}",
    )
    server.wait_for_line("Uvicorn running on")
    return server


def _post(connection: http.client.HTTPConnection, path: str, body: dict[str, Any]) -> Any:
    connection.request(
        "POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"}
    )
    response = connection.getresponse()
    payload = response.read()
    if response.status != 200:
        raise RuntimeError(f"POST {path}: {response.status} {payload[:300]!r}")
    return json.loads(payload or b"null")


def run_once(server: Server, user: str) -> Any:
    """Create a session and run the agent once over ``POST /run``, on one
    connection, so both reach the same worker (sessions live in its memory)."""
    host, port = server.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        session = _post(connection, f"/apps/shop/users/{user}/sessions", {})
        return _post(
            connection,
            "/run",
            {
                "appName": "shop",
                "userId": user,
                "sessionId": session["id"],
                "newMessage": {"role": "user", "parts": [{"text": "stock of A1?"}]},
            },
        )
    finally:
        connection.close()


def run_many(server: Server, runs: int, concurrency: int) -> list[Any]:
    """``runs`` runs, ``concurrency`` at a time, after a first one alone (ADK
    2.5 loads the app on first use, and can fail concurrent first requests)."""
    first = [run_once(server, "u0")]
    with ThreadPoolExecutor(concurrency) as pool:
        return first + list(pool.map(lambda i: run_once(server, f"u{i}"), range(1, runs)))


def warm_up(server: Server) -> None:
    """Load the app with one session, so runs started together do not race to load it."""
    host, port = server.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        _post(connection, "/apps/shop/users/warm-up/sessions", {})
    finally:
        connection.close()


def start_runs(server: Server, runs: int) -> ThreadPoolExecutor:
    """Start ``runs`` runs in the background (their outcome is not awaited)."""
    warm_up(server)
    pool = ThreadPoolExecutor(runs)
    for i in range(runs):
        pool.submit(run_once, server, f"inflight{i}")
    return pool


# -- what the receiver got -----------------------------------------------------


@dataclass(frozen=True)
class Received:
    name: str
    trace_id: bytes
    span_id: bytes
    parent: bytes
    outcome: str
    instance: str


def adk_otel_spans(receiver: OtlpReceiver) -> list[Received]:
    """adk-otel's spans (scope ``adk_otel``), with their resource's instance id."""
    found = []
    for resource_spans in receiver.resource_spans():
        instance = _resource_attribute(resource_spans, "service.instance.id")
        for scope_spans in resource_spans.scope_spans:
            if scope_spans.scope.name != "adk_otel":
                continue
            for span in scope_spans.spans:
                outcome = next(
                    (a.value.string_value for a in span.attributes if a.key == "adk.outcome"), ""
                )
                found.append(
                    Received(
                        span.name,
                        span.trace_id,
                        span.span_id,
                        span.parent_span_id,
                        outcome,
                        instance,
                    )
                )
    return found


def instances_by_trace(receiver: OtlpReceiver, scope: str) -> dict[bytes, set[str]]:
    """The ``service.instance.id`` values ("" for none) the spans of ``scope``
    (e.g. FastAPI's instrumentation) carry, per trace."""
    found: dict[bytes, set[str]] = {}
    for resource_spans in receiver.resource_spans():
        instance = _resource_attribute(resource_spans, "service.instance.id")
        for scope_spans in resource_spans.scope_spans:
            if scope_spans.scope.name == scope:
                for span in scope_spans.spans:
                    found.setdefault(span.trace_id, set()).add(instance)
    return found


def _resource_attribute(resource_spans: ResourceSpans, key: str) -> str:
    for attribute in resource_spans.resource.attributes:
        if attribute.key == key:
            return str(attribute.value.string_value)
    return ""


def by_trace(spans: Iterable[Received]) -> dict[bytes, list[Received]]:
    traces: dict[bytes, list[Received]] = {}
    for span in spans:
        traces.setdefault(span.trace_id, []).append(span)
    return traces


def orphans(spans: list[Received], receiver: OtlpReceiver) -> list[Received]:
    """Spans whose parent never arrived (a root has none; the invocation's is
    the HTTP server span of FastAPI's instrumentation, where ADK installs it)."""
    ids = {span.span_id for span in receiver.spans()}
    return [span for span in spans if span.parent and span.parent not in ids]


def invocations(spans: Iterable[Received]) -> list[Received]:
    return [span for span in spans if span.name.startswith("invocation ")]


def outcomes(spans: Iterable[Received]) -> Counter[str]:
    return Counter(span.outcome for span in spans)
