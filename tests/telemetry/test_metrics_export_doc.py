"""The metrics setup of docs/configuration.md, run as written in a fresh process: with it,
adk-otel's metrics reach an OTLP/HTTP endpoint (``/v1/metrics``) next to the
spans; without it, the pipeline adk-otel builds exports spans only."""

from __future__ import annotations

import http.server
import os
import re
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def documented_metrics_snippet() -> str:
    section = DOC.read_text(encoding="utf-8").split("## Metrics", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "docs/configuration.md lost its metrics snippet"
    return found.group(1)


APP = textwrap.dedent(
    """
    import asyncio, sys
    {setup}
    from google.adk.agents import LlmAgent
    from google.adk.runners import InMemoryRunner
    from google.genai import types
    from opentelemetry import metrics
    import adk_otel
    from adk_otel.testing.model import ScriptedModel, reply

    async def main():
        agent = LlmAgent(name="clerk", model=ScriptedModel(script=[reply("ok")]))
        runner = adk_otel.instrument(InMemoryRunner(agent=agent, app_name="shop"))
        session = await runner.session_service.create_session(app_name="shop", user_id="u")
        async for _ in runner.run_async(
            user_id="u", session_id=session.id, new_message=types.UserContent("hi")
        ):
            pass

    asyncio.run(main())
    print("METER_PROVIDER", type(metrics.get_meter_provider()).__name__)
    """
)


class _Collecting(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.received.append((self.path, body))  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[http.server.ThreadingHTTPServer]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Collecting)
    server.received = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _run(setup: str, server: http.server.ThreadingHTTPServer) -> tuple[str, list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{server.server_address[1]}",
        OTEL_SERVICE_NAME="shop",
    )
    proc = subprocess.run(
        [sys.executable, "-c", APP.format(setup=setup)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    names = []
    for path, body in server.received:  # type: ignore[attr-defined]
        if path == "/v1/metrics":
            request = ExportMetricsServiceRequest.FromString(body)
            names += [
                metric.name
                for resource in request.resource_metrics
                for scope in resource.scope_metrics
                if scope.scope.name == "adk_otel"
                for metric in scope.metrics
            ]
    return proc.stdout, names


def test_the_documented_setup_exports_adk_otels_metrics_over_otlp(collector) -> None:
    stdout, names = _run(documented_metrics_snippet(), collector)
    assert "METER_PROVIDER MeterProvider" in stdout
    assert "adk.invocation.count" in names, names
    assert "gen_ai.invoke_agent.duration" in names, names
    paths = {path for path, _ in collector.received}  # type: ignore[attr-defined]
    assert "/v1/traces" in paths


def test_without_it_the_built_pipeline_exports_spans_only(collector) -> None:
    stdout, names = _run("", collector)
    assert "METER_PROVIDER" in stdout and "METER_PROVIDER MeterProvider" not in stdout
    paths = {path for path, _ in collector.received}  # type: ignore[attr-defined]
    assert paths == {"/v1/traces"}, paths
    assert names == []
