from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from adk_otel.testing.receiver import OtlpReceiver

CHILD = Path(__file__).resolve().parent / "child.py"
EXIT_LIMIT = 40.0
"""Seconds a child may take from start to exit. Generous for a loaded CI
machine (importing ADK alone takes seconds); without adk-otel's bounded
shutdown a child with its collector down or hanging takes 30 s and more."""


@dataclass
class ChildResult:
    returncode: int
    report: dict[str, Any]
    stderr: str

    def log_lines(self, level: str | None = None) -> list[str]:
        prefix = f"LOG {level} " if level else "LOG "
        return [line for line in self.stderr.splitlines() if line.startswith(prefix)]

    def problems(self) -> list[str]:
        """Warning and error lines: what a user would see."""
        return self.log_lines("WARNING") + self.log_lines("ERROR") + self.log_lines("CRITICAL")


def run_child(runs: int, env: dict[str, str]) -> ChildResult:
    """Run the child application with ``env`` on top of a clean OTEL_* environment."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    base.pop("ADK_OTEL_KEEP_ADK_SPANS", None)
    proc = subprocess.run(
        [sys.executable, "-W", "ignore", str(CHILD), str(runs)],
        env={**base, "OTEL_SERVICE_NAME": "resilience-child", **env},
        capture_output=True,
        text=True,
        timeout=EXIT_LIMIT,
    )
    lines = proc.stdout.strip().splitlines()
    report = json.loads(lines[-1]) if lines else {}
    return ChildResult(proc.returncode, report, proc.stderr)


def endpoint_env(protocol: str, url: str) -> dict[str, str]:
    """OTLP settings for ``protocol`` pointing at ``url`` (a base URL for gRPC,
    the full /v1/traces URL for HTTP)."""
    name = (
        "OTEL_EXPORTER_OTLP_ENDPOINT"
        if protocol == "grpc"
        else "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    )
    return {"OTEL_EXPORTER_OTLP_PROTOCOL": protocol, name: url}


def refused_url(protocol: str) -> str:
    """A loopback URL nothing listens on (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}" + ("" if protocol == "grpc" else "/v1/traces")


@pytest.fixture
def silent_port() -> Iterator[str]:
    """A loopback port that accepts connections and never reads from them."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as started:
        yield started
