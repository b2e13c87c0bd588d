"""A run started by an HTTP request that carries ``traceparent`` is a child
of the caller's span: ``adk api_server`` with ``--extra_plugins
adk_otel.AdkOtelPlugin`` (``/run`` and ``/run_sse``), and a user's own FastAPI
app with one line. Real server processes; the client is this process, with
its own provider; both export over OTLP to one receiver."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from opentelemetry import propagate, trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from adk_otel.cli.demo_remote import start_listening, stop
from adk_otel.traces.io.model import SpanRecord, as_records

from .conftest import HERE, otlp_env
from .test_a2a import chain_to, service_of

AGENT = textwrap.dedent(
    """
    from google.adk.agents import LlmAgent
    from adk_otel.testing.model import ScriptedModel, reply

    root_agent = LlmAgent(name="clerk", model=ScriptedModel(script=[reply("ok")]))
    """
)
FASTAPI_HAS_TELEMETRY = importlib.util.find_spec("fastapi.telemetry") is not None
"""FastAPI releases with built-in telemetry continue ``traceparent`` themselves
(they need opentelemetry-api >= 1.44: ADK 2.13's pins allow it, 2.5's do not);
older ones are instrumented by running the server under ``opentelemetry-instrument``."""


def adk_api_server_command(agents_dir: Path) -> list[str]:
    bin_dir = Path(sys.executable).parent
    command = [
        str(bin_dir / "adk"),
        "api_server",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--extra_plugins",
        "adk_otel.AdkOtelPlugin",
        str(agents_dir),
    ]
    if FASTAPI_HAS_TELEMETRY:
        return command
    return [str(bin_dir / "opentelemetry-instrument"), *command]


@pytest.fixture(scope="module")
def api_server(receiver, tmp_path_factory) -> Iterator[str]:
    """``adk api_server`` serving one agent, configured only by ``OTEL_*``."""
    agents = tmp_path_factory.mktemp("agents")
    (agents / "shop").mkdir()
    (agents / "shop" / "__init__.py").write_text("from . import agent\n")
    (agents / "shop" / "agent.py").write_text(AGENT)
    env = otlp_env(receiver, "api-server")
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = env.pop("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").removesuffix(
        "/v1/traces"
    )
    process = subprocess.Popen(
        adk_api_server_command(agents),
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    log: list[str] = []
    for line in process.stderr:  # uvicorn names the port it bound once it listens
        log.append(line)
        if match := re.search(r"Uvicorn running on http://[\d.]+:(\d+)", line):
            break
    else:
        pytest.fail(f"adk api_server did not start: {''.join(log)[-3000:]}")
    drain = threading.Thread(target=lambda: log.extend(process.stderr), daemon=True)
    drain.start()
    yield f"http://127.0.0.1:{match.group(1)}"
    stop(process)
    drain.join(timeout=30)
    assert "Failed to detach context" not in "".join(log)


@pytest.fixture(scope="module")
def user_app(receiver) -> Iterator[str]:
    process, port = start_listening([str(HERE / "http_app.py")], otlp_env(receiver, "user-app"))
    yield f"http://127.0.0.1:{port}"
    stop(process)


@pytest.fixture(scope="module")
def client_tracer(receiver) -> Iterator[trace.Tracer]:
    provider = TracerProvider(resource=Resource.create({"service.name": "http-client"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(receiver.http_endpoint)))
    yield provider.get_tracer("http-client")
    provider.shutdown()


def post_traced(tracer: trace.Tracer, url: str, body: dict) -> tuple[str, httpx.Response]:
    """POST with the client span's ``traceparent``; the client span's id."""
    with tracer.start_as_current_span("POST", kind=trace.SpanKind.CLIENT) as span:
        headers: dict[str, str] = {}
        propagate.inject(headers)
        response = httpx.post(url, json=body, headers=headers, timeout=60)
    return format(span.get_span_context().span_id, "016x"), response


def run_of(receiver, client_span_id: str) -> tuple[SpanRecord, list[SpanRecord]]:
    """The invocation span under the client span, once both arrived."""

    def arrived(spans) -> bool:
        records = as_records(spans)
        ids = {r.span_id: r for r in records}
        for record in records:
            if record.name == "invocation shop":
                node = record
                while node.parent_id in ids:
                    node = ids[node.parent_id]
                if node.span_id == client_span_id:
                    return True
        return False

    receiver.wait_for(lambda _: arrived(receiver.requests), timeout=30)
    records = as_records(receiver.requests)
    mine = [r for r in records if r.name == "invocation shop"]
    for invocation in mine:
        if chain_to(invocation, records)[0].span_id == client_span_id:
            return invocation, records
    raise AssertionError("unreachable: waited for it")


@pytest.mark.parametrize("path", ["/run", "/run_sse"])
def test_adk_api_server_continues_the_callers_trace(
    receiver, api_server, client_tracer, path
) -> None:
    with httpx.Client(base_url=api_server) as http:
        session = http.post("/apps/shop/users/u/sessions", json={}).json()["id"]
    body = {
        "appName": "shop",
        "userId": "u",
        "sessionId": session,
        "newMessage": {"role": "user", "parts": [{"text": "hi"}]},
    }
    client_span, response = post_traced(client_tracer, api_server + path, body)
    assert response.status_code == 200
    invocation, records = run_of(receiver, client_span)
    chain = chain_to(invocation, records)
    assert chain[0].span_id == client_span and service_of(chain[0]) == "http-client"
    assert any(s.kind == "SERVER" and service_of(s) == "api-server" for s in chain)
    assert invocation.attributes["adk.outcome"] == "ok"
    # The server's own "http send" spans of a streamed response may sit under the
    # invocation too (spans others start during a run land in it); the agent is one.
    agent = [r for r in records if r.parent_id == invocation.span_id]
    assert [a.name for a in agent if not a.name.endswith(" http send")] == ["invoke_agent clerk"]


def test_a_users_fastapi_app_continues_the_callers_trace(receiver, user_app, client_tracer):
    client_span, response = post_traced(client_tracer, user_app + "/chat", {"message": "hi"})
    assert response.json() == {"texts": ["ok"]}
    invocation, records = run_of(receiver, client_span)
    chain = chain_to(invocation, records)
    assert [s.kind for s in chain] == ["CLIENT", "SERVER", "INTERNAL"]
    assert {s.trace_id for s in chain} == {chain[0].trace_id}
    assert [service_of(s) for s in chain] == ["http-client", "user-app", "user-app"]
