"""Remote A2A failures the caller's ``RemoteA2aAgent`` reports as events, not
exceptions, end the remote agent's CLIENT span ERROR with a category: a failed
remote task (``remote_failed``), an unreachable card URL (``connection``), a
served process that dies mid-stream (``connection``). The calling run carries
on and counts the failure."""

from __future__ import annotations

import socket
from pathlib import Path

from adk_otel import semconv as sc
from adk_otel.demo_remote import start_listening, stop
from adk_otel.traces.model import SpanRecord

from .conftest import Call, run_caller, run_process

HERE = Path(__file__).resolve().parent


def client_span(call: Call) -> SpanRecord:
    (client,) = [s for s in call.spans if s.kind == "CLIENT" and s.name == "invoke_agent payments"]
    return client


def assert_clean(call: Call) -> None:
    assert all(s.end_ns is not None for s in call.spans)
    assert call.report["open_spans"] == 0
    assert call.report["internal_errors"] == 0
    assert call.report["current_span_left"] is False
    assert "Failed to detach context" not in call.stderr
    for span in call.spans:
        if span.status_code == "ERROR":
            assert span.attributes.get(sc.ADK_ERROR_CATEGORY), span.name


def test_a_failed_remote_task_is_remote_failed(receiver, payments) -> None:
    call = run_caller(receiver, payments.url, "charge 5000 EUR")
    assert_clean(call)
    client = client_span(call)
    assert client.status_code == "ERROR"
    assert client.attributes[sc.ADK_ERROR_CATEGORY] == "remote_failed"
    (invocation,) = [s for s in call.spans if s.name == "invocation shop"]
    assert "remote_failed" in invocation.attributes[sc.ADK_ERROR_CATEGORIES]


def test_an_unreachable_card_url_is_connection(receiver) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    call = run_process(receiver, ["caller.py", url, "charge 19.90 EUR"], "invocation shop")
    assert_clean(call)
    client = client_span(call)
    assert client.status_code == "ERROR", client.attributes
    assert client.attributes[sc.ADK_ERROR_CATEGORY] == "connection"
    assert client.attributes[sc.ADK_ERROR_RETRYABLE] is True


def test_a_served_process_dying_mid_stream_is_connection(receiver, tmp_path) -> None:
    with (tmp_path / "stderr.log").open("w") as log:
        process, port = start_listening([str(HERE / "a2a_dying_server.py")], None, log)
    try:
        call = run_process(
            receiver, ["caller.py", f"http://127.0.0.1:{port}", "charge"], "invocation shop"
        )
    finally:
        stop(process)
    assert_clean(call)
    client = client_span(call)
    assert client.status_code == "ERROR", client.attributes
    assert client.attributes[sc.ADK_ERROR_CATEGORY] == "connection"
    (invocation,) = [s for s in call.spans if s.name == "invocation shop"]
    if call.report["error"] is None:
        # ADK 2.13 reports the broken stream as an event; the run carries on.
        assert invocation.status_code == "OK"
        assert invocation.attributes[sc.ADK_ERROR_COUNT] >= 1
    else:
        # ADK 2.5 trips over the A2A client's error (an AttributeError raised
        # while handling it): the cause names the failure on every layer.
        assert "AttributeError" in call.report["error"]
        assert invocation.attributes[sc.ADK_ERROR_CATEGORY] == "connection"
