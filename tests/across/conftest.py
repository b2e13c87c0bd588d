"""Real services for the cross-service tests: an OTLP receiver every process
exports to, the payments agent served over A2A, and a runner for the calling
process. Every process has its own SDK provider, built by adk-otel from the
standard ``OTEL_*`` variables, as in production."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from adk_otel.cli.demo_remote import Service, start_listening, start_service, stop
from adk_otel.testing.receiver import OtlpReceiver
from adk_otel.traces.io.model import SpanRecord, as_records

HERE = Path(__file__).resolve().parent


def otlp_env(receiver: OtlpReceiver, service: str) -> dict[str, str]:
    return {
        "OTEL_SERVICE_NAME": service,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.http_endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "20",
    }


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as rx:
        yield rx


@pytest.fixture(scope="module")
def service_log(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("service") / "stderr.log"


@pytest.fixture(scope="module")
def payments(receiver, service_log) -> Iterator[Service]:
    with service_log.open("w") as log:
        service = start_service(otlp_env(receiver, "payments-service"), stderr=log)
    yield service
    assert service.stop() in (0, -15)
    assert "Failed to detach context" not in service_log.read_text()


@pytest.fixture(scope="module")
def mcp_url(receiver, tmp_path_factory) -> Iterator[str]:
    """A real MCP server process (tests/across/mcp_server.py), streamable HTTP."""
    log_path = tmp_path_factory.mktemp("mcp") / "stderr.log"
    with log_path.open("w") as log:
        process, port = start_listening(
            [str(HERE / "mcp_server.py")], otlp_env(receiver, "stock-service"), log
        )
    yield f"http://127.0.0.1:{port}/mcp"
    assert stop(process) in (0, -15)


@dataclass
class Call:
    report: dict
    stderr: str
    spans: list[SpanRecord]


def run_caller(
    receiver: OtlpReceiver, url: str, message: str, *args: str, env: dict | None = None
) -> Call:
    """Run one invocation in a calling process and collect both sides' spans."""
    return run_process(
        receiver, ["caller.py", url, message, *args], "invocation payments-service", env
    )


def run_process(
    receiver: OtlpReceiver, argv: list[str], served: str, env: dict | None = None
) -> Call:
    """Run ``tests/across/ARGV`` as the calling service; wait for its spans
    and the served side's span named ``served``."""
    receiver.clear()
    done = subprocess.run(
        [sys.executable, str(HERE / argv[0]), *argv[1:]],
        env={**os.environ, **otlp_env(receiver, "shop"), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])

    def both_sides(spans) -> bool:
        names = {s.name for s in spans}
        return {"invocation shop", served} <= names

    receiver.wait_for(both_sides, timeout=30)
    return Call(report, done.stderr, as_records(receiver.requests))
