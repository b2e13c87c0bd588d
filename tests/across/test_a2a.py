"""One trace across an A2A call: a calling process whose ``payments`` agent is
a ``RemoteA2aAgent``, and the payments agent served by ``to_a2a`` under
uvicorn in another process, both ``adk_otel.instrument()``-ed, both exporting
over OTLP to one receiver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from adk_otel import semconv as sc
from adk_otel.cli.demo_remote import Service, start_service
from adk_otel.traces.io.model import SpanRecord, as_records

from .conftest import HERE, Call, otlp_env, run_caller

CHAIN = [
    ("invocation shop", "INTERNAL", "shop"),
    ("invoke_agent checkout", "INTERNAL", "shop"),
    ("invoke_agent payments", "CLIENT", "shop"),
    ("invocation payments-service", "SERVER", "payments-service"),
    ("invoke_agent payments", "INTERNAL", "payments-service"),
]


def service_of(span: SpanRecord) -> str:
    return str(span.resource.get("service.name"))


def by_id(spans: list[SpanRecord]) -> dict[str, SpanRecord]:
    return {s.span_id: s for s in spans}


def chain_to(span: SpanRecord, spans: list[SpanRecord]) -> list[SpanRecord]:
    """``span`` and its ancestors, root first."""
    index, chain = by_id(spans), [span]
    while chain[-1].parent_id is not None:
        chain.append(index[chain[-1].parent_id])
    return chain[::-1]


def assert_one_clean_trace(call: Call) -> None:
    spans = call.spans
    assert len({s.trace_id for s in spans}) == 1, "one trace across both processes"
    roots = [s for s in spans if s.parent_id is None]
    assert [r.name for r in roots] == ["invocation shop"], "no orphan roots"
    ids = [s.span_id for s in spans]
    assert len(ids) == len(set(ids)), "every span exported (ended) exactly once"
    assert all(s.end_ns is not None for s in spans)
    assert {s.scope for s in spans} == {sc.INSTRUMENTATION_SCOPE}, "A2A SDK spans are off"
    assert call.report["open_spans"] == 0
    assert call.report["internal_errors"] == 0
    assert call.report["current_span_left"] is False
    assert "Failed to detach context" not in call.stderr


def assert_chain(call: Call, leaf: str) -> list[SpanRecord]:
    (tool,) = [s for s in call.spans if s.name == leaf]
    chain = chain_to(tool, call.spans)
    assert [(s.name, s.kind, service_of(s)) for s in chain[:-1]] == CHAIN
    assert service_of(tool) == "payments-service"
    return chain


@pytest.mark.parametrize("stream", ["stream", "no-stream"])
def test_a_remote_agent_call_is_one_trace(receiver, payments, stream) -> None:
    args = ["--no-stream"] if stream == "no-stream" else []
    call = run_caller(receiver, payments.url, "charge 19.90 EUR", *args)
    assert call.report["error"] is None
    assert_one_clean_trace(call)
    chain = assert_chain(call, "execute_tool charge_card")
    assert all(s.status_code == "OK" for s in call.spans)
    client = chain[2]
    assert client.attributes[sc.A2A_TASK_STATE] == "completed"
    assert client.attributes[sc.A2A_TASK_ID]
    served = [s for s in call.spans if service_of(s) == "payments-service"]
    assert {s.name for s in served} >= {"generate_content scripted-model"}


@pytest.mark.parametrize("stream", ["stream", "no-stream"])
def test_a_remote_failure_is_an_error_on_both_sides(
    receiver, payments, service_log, stream
) -> None:
    args = ["--no-stream"] if stream == "no-stream" else []
    call = run_caller(receiver, payments.url, "charge 5000 EUR", *args)
    assert_one_clean_trace(call)
    chain = assert_chain(call, "execute_tool charge_card")
    tool = chain[-1]
    assert tool.status_code == "ERROR"
    assert tool.attributes[sc.ERROR_TYPE] == "adk_otel.cli.demo_remote.PaymentDeclined"
    served_invocation, served_agent = chain[3], chain[4]
    assert served_invocation.status_code == served_agent.status_code == "ERROR"
    client = chain[2]
    assert client.status_code == "ERROR", "the caller's span of a failed remote task"
    assert client.attributes[sc.A2A_TASK_STATE] == "failed"
    assert client.attributes[sc.ERROR_TYPE] == sc.A2A_TASK_FAILED
    said = client.status_description or ""
    assert said.startswith("remote task failed: "), said
    # The cause, on the serving side's spans of the same trace.
    assert "card declined" in (served_agent.status_description or "")
    if "card declined" not in said:
        # The serving side sent an id for its log instead of the exception's text
        # (ADK >= 2.15): the caller's span has the id, the log the exception under it.
        error_id = client.attributes[sc.ADK_REMOTE_ERROR_ID]
        assert f"(error_id: {error_id})" in said
        logged = service_log.read_text()
        assert f"error_id={error_id}" in logged and "card declined" in logged
    else:
        assert sc.ADK_REMOTE_ERROR_ID not in client.attributes


def test_a2a_sdk_spans_can_be_kept_and_nest_under_the_agent(receiver, payments) -> None:
    """With the A2A SDK's spans kept, the client's spans (made in the remote
    agent's own body, not in a tool or model call) are children of that
    agent's span: agent spans are current while the agent runs."""
    call = run_caller(
        receiver,
        payments.url,
        "charge 19.90 EUR",
        env={"ADK_OTEL_KEEP_A2A_SPANS": "true"},
    )
    sdk = [s for s in call.spans if s.scope == sc.A2A_SDK_SCOPE and service_of(s) == "shop"]
    assert sdk, "the A2A client's own spans were kept"
    assert len({s.trace_id for s in call.spans}) == 1
    assert [s.name for s in call.spans if s.parent_id is None] == ["invocation shop"]
    for span in sdk:
        names = [(a.name, a.kind) for a in chain_to(span, call.spans)]
        assert ("invoke_agent payments", "CLIENT") in names, names


HOSTILE = {
    "malformed": {"traceparent": "not-a-traceparent"},
    "oversized": {"traceparent": "00-" + "a" * 32 + "-" + "b" * 16 + "-01" + "0" * 5000},
    "wrong version": {"traceparent": "ff-" + "a" * 32 + "-" + "b" * 16 + "-01"},
    "zero trace id": {"traceparent": "00-" + "0" * 32 + "-" + "b" * 16 + "-01"},
    "not a string": {"traceparent": 42, "tracestate": ["x"]},
    "huge tracestate": {"traceparent": "00-" + "c" * 32 + "-" + "d" * 16 + "-01"}
    | {"tracestate": "k=" + "v" * 100_000},
}


@pytest.mark.parametrize("metadata", list(HOSTILE.values()), ids=list(HOSTILE))
def test_hostile_trace_headers_start_a_fresh_trace(receiver, payments, metadata) -> None:
    """The served run gets only the metadata a caller's provider made up: it
    never fails because of it, and starts a fresh trace unless the header is
    valid (the huge tracestate is dropped, the valid traceparent kept)."""
    call = run_caller(
        receiver, payments.url, "charge 19.90 EUR", "--metadata", json.dumps(metadata)
    )
    assert call.report["error"] is None
    assert call.report["open_spans"] == 0
    (served,) = [s for s in call.spans if s.name == "invocation payments-service"]
    assert served.status_code == "OK"
    if metadata is HOSTILE["huge tracestate"]:
        assert served.trace_id == "c" * 32 and served.kind == "SERVER"
    else:
        assert served.parent_id is None and served.kind == "INTERNAL"
        shop = next(s for s in call.spans if s.name == "invocation shop")
        assert served.trace_id != shop.trace_id


def test_a_meta_provider_wrapped_with_trace_context_keeps_one_trace(receiver, payments) -> None:
    call = run_caller(
        receiver,
        payments.url,
        "charge 19.90 EUR",
        "--metadata",
        json.dumps({"tenant": "t-1"}),
        "--keep-trace",
    )
    assert_one_clean_trace(call)
    assert_chain(call, "execute_tool charge_card")


def test_an_unwrapped_meta_provider_is_named_in_a_warning(receiver, payments) -> None:
    call = run_caller(
        receiver, payments.url, "charge 19.90 EUR", "--metadata", json.dumps({"tenant": "t-1"})
    )
    assert "with_trace_context" in call.stderr


@pytest.fixture(scope="module")
def recording_payments(receiver, tmp_path_factory) -> Iterator[Service]:
    """The payments agent recording every run it serves (``always_on``), so a
    sampled-out caller's trace context is seen arriving."""
    log_path = tmp_path_factory.mktemp("recording") / "stderr.log"
    env = {**otlp_env(receiver, "payments-service"), "OTEL_TRACES_SAMPLER": "always_on"}
    with log_path.open("w") as log:
        service = start_service(env, stderr=log)
    yield service
    assert service.stop() in (0, -15)
    assert "Failed to detach context" not in log_path.read_text()


def test_a_sampled_out_caller_still_carries_its_trace(receiver, recording_payments) -> None:
    """A caller whose sampler drops the run (its agent hooks do nothing then)
    still sends its trace context with the A2A request: the served run
    continues the caller's trace under the caller's (unrecorded) span."""
    receiver.clear()
    done = subprocess.run(
        [sys.executable, str(HERE / "caller.py"), recording_payments.url, "charge 19.90 EUR"],
        env={
            **os.environ,
            **otlp_env(receiver, "shop"),
            "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
            "OTEL_TRACES_SAMPLER_ARG": "0",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["error"] is None
    assert report["open_spans"] == 0 and report["internal_errors"] == 0
    assert report["current_span_left"] is False
    assert "Failed to detach context" not in done.stderr

    served = "invocation payments-service"
    receiver.wait_for(lambda spans: served in {s.name for s in spans}, timeout=30)
    spans = as_records(receiver.requests)
    assert {service_of(s) for s in spans} == {"payments-service"}, "the caller records nothing"
    (root,) = [s for s in spans if s.name == served]
    assert root.kind == "SERVER"
    assert root.parent_id is not None, "the served run continues the caller's trace"
    assert root.parent_id not in {s.span_id for s in spans}
    assert len({s.trace_id for s in spans}) == 1
