"""Remote A2A failures the caller's ``RemoteA2aAgent`` reports as events, not
exceptions, end the remote agent's CLIENT span ERROR with a category: a failed
remote task (``remote_failed``), an unreachable card URL (``connection``), a
served process that dies mid-stream (``connection``), a response stream that
ends before the task reached a terminal state (``connection``). The calling
run carries on and counts the failure. A remote task that ends ``canceled`` is
the ``cancelled`` outcome, not a failure."""

from __future__ import annotations

import socket
from importlib.metadata import version
from pathlib import Path

import pytest

from adk_otel import semconv as sc
from adk_otel.cli.demo_remote import start_listening, stop
from adk_otel.traces.io.model import SpanRecord

from .conftest import Call, run_caller, run_process

HERE = Path(__file__).resolve().parent
ADK_VERSION = tuple(int(part) for part in version("google-adk").split(".")[:2])


def client_span(call: Call) -> SpanRecord:
    (client,) = [s for s in call.spans if s.kind == "CLIENT" and s.name == "invoke_agent payments"]
    return client


def assert_clean(call: Call) -> None:
    # Every span ended, and once: exported once, never ended (or changed) again.
    assert all(s.end_ns is not None for s in call.spans)
    assert len({s.key for s in call.spans}) == len(call.spans)
    assert "on an ended span" not in call.stderr
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


def call_served(receiver, tmp_path, server: list[str]) -> tuple[Call, int]:
    """Start ``tests/across/SERVER`` (a served A2A agent that exports nothing),
    call it once from the calling service, stop it: the call and its exit code."""
    with (tmp_path / "stderr.log").open("w") as log:
        process, port = start_listening([str(HERE / server[0]), *server[1:]], None, log)
    try:
        call = run_process(
            receiver, ["caller.py", f"http://127.0.0.1:{port}", "charge"], "invocation shop"
        )
    finally:
        code = stop(process)
    return call, code


def test_a_served_process_dying_mid_stream_is_connection(receiver, tmp_path) -> None:
    call, _ = call_served(receiver, tmp_path, ["a2a_dying_server.py"])
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


def test_a_stream_ending_before_a_terminal_state_is_connection(receiver, tmp_path) -> None:
    """The served task goes ``working`` and its executor returns: the stream
    closes cleanly with the task unfinished."""
    call, code = call_served(receiver, tmp_path, ["a2a_task_server.py", "unfinished"])
    assert code in (0, -15)
    assert_clean(call)
    assert call.report["error"] is None
    client = client_span(call)
    (checkout,) = [s for s in call.spans if s.name == "invoke_agent checkout"]
    (invocation,) = [s for s in call.spans if s.name == "invocation shop"]
    assert client.attributes[sc.A2A_TASK_STATE] == "working"
    assert invocation.status_code == checkout.status_code == "OK"
    if call.report["error_messages"]:
        # ADK 2.13 logs it and yields an event with error_message (no error_code).
        (message,) = call.report["error_messages"]
        assert message.startswith("A2A response stream ended before task ")
        assert message.endswith(" reached a terminal state.")
        assert "stream ended before task" in call.stderr
        assert client.status_code == "ERROR"
        assert client.status_description == message
        assert client.attributes[sc.ADK_OUTCOME] == "error"
        assert client.attributes[sc.ADK_CLOSE_REASON] == "a2a_request_failed"
        assert client.attributes[sc.ERROR_TYPE] == "a2a_request_failed"
        assert client.attributes[sc.ADK_ERROR_CATEGORY] == "connection"
        assert client.attributes[sc.ADK_ERROR_RETRYABLE] is True
        for parent in (checkout, invocation):
            assert parent.attributes[sc.ADK_ERROR_COUNT] == 1
            assert list(parent.attributes[sc.ADK_ERROR_CATEGORIES]) == ["connection"]
    else:
        # ADK 2.5 does not notice: no event, nothing logged. adk-otel sees only
        # the responses ADK turns into events, so the span ends OK; the task's
        # last state (``working``) is the one trace of it.
        assert ADK_VERSION < (2, 13), "the newest ADK reports an unfinished stream"
        assert client.status_code == "OK"
        assert client.attributes[sc.ADK_OUTCOME] == "ok"
        assert sc.ADK_ERROR_CATEGORY not in client.attributes
        assert invocation.attributes[sc.ADK_ERROR_COUNT] == 0


@pytest.mark.parametrize("ending", ["canceled", "canceled-bare"])
def test_a_remote_task_ending_canceled_is_cancelled(receiver, tmp_path, ending) -> None:
    """The served task goes ``working``, then ``canceled`` (final), with a
    status message or without one."""
    call, code = call_served(receiver, tmp_path, ["a2a_task_server.py", ending])
    assert code in (0, -15)
    assert_clean(call)
    assert call.report["error"] is None
    assert call.report["error_messages"] == []
    client = client_span(call)
    # The caller's run carries on: a remote cancellation fails nothing above it.
    for name in ("invoke_agent checkout", "invocation shop"):
        (parent,) = [s for s in call.spans if s.name == name]
        assert parent.status_code == "OK"
        assert parent.attributes[sc.ADK_ERROR_COUNT] == 0
        assert list(parent.attributes[sc.ADK_ERROR_CATEGORIES]) == []
    if ending == "canceled" or client.attributes[sc.A2A_TASK_STATE] == "canceled":
        # As a local cancellation: an outcome, not an error, so the status is left UNSET.
        assert client.status_code == "UNSET"
        assert client.attributes[sc.A2A_TASK_STATE] == "canceled"
        assert client.attributes[sc.ADK_OUTCOME] == "cancelled"
        assert client.attributes[sc.ADK_CLOSE_REASON] == "remote_canceled"
        for absent in (sc.ERROR_TYPE, sc.ADK_ERROR_CATEGORY, sc.ADK_ERROR_RETRYABLE):
            assert absent not in client.attributes
    else:
        # ADK 2.5 makes no event of a status update without a message, so the
        # final ``canceled`` never reaches adk-otel: the last state it saw stands.
        assert ADK_VERSION < (2, 13), "the newest ADK reports a bare canceled status"
        assert client.status_code == "OK"
        assert client.attributes[sc.A2A_TASK_STATE] == "working"
        assert client.attributes[sc.ADK_OUTCOME] == "ok"


def test_a_task_completed_without_a_status_message_is_ok(receiver, tmp_path) -> None:
    """The control for the two above: the same server, its task completed (an
    artifact, then a final ``completed`` status without a message)."""
    call, code = call_served(receiver, tmp_path, ["a2a_task_server.py", "completed-bare"])
    assert code in (0, -15)
    assert_clean(call)
    assert call.report["error"] is None
    assert call.report["error_messages"] == []
    assert "payment taken" in call.report["texts"]
    assert all(s.status_code == "OK" for s in call.spans)
    client = client_span(call)
    assert client.attributes[sc.ADK_OUTCOME] == "ok"
    if ADK_VERSION >= (2, 13):
        assert client.attributes[sc.A2A_TASK_STATE] == "completed"
    else:
        # ADK 2.5 makes no event of the bare final status: the artifact's
        # event, taken while the task was working, is the last adk-otel saw.
        assert client.attributes[sc.A2A_TASK_STATE] == "working"
