"""A graceful stop (SIGTERM) of an ADK server loses no span of a finished run,
and ends and exports the runs it cut off: real server processes exporting
over OTLP/HTTP to a receiver that outlives them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adk_otel.testing.receiver import OtlpReceiver

from .harness import (
    SPANS_PER_RUN,
    adk_otel_spans,
    api_server,
    by_trace,
    invocations,
    orphans,
    run_many,
    start_runs,
    uvicorn,
)

RUNS = 12


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as rx:
        yield rx


def _assert_every_run_complete(receiver: OtlpReceiver, runs: int) -> None:
    spans = adk_otel_spans(receiver)
    traces = by_trace(spans)
    assert len(spans) == runs * SPANS_PER_RUN, sorted(s.name for s in spans)
    assert len(traces) == runs
    assert not orphans(spans, receiver)
    assert {s.outcome for s in spans} == {"ok"}


def test_uvicorn_sigterm_after_the_responses_loses_nothing(receiver):
    server = uvicorn(receiver)
    try:
        run_many(server, RUNS, concurrency=4)
        assert server.stop() in (0, -15)
    finally:
        server.kill()
    _assert_every_run_complete(receiver, RUNS)
    assert "Failed to detach context" not in server.output


@pytest.mark.parametrize("command", ["api_server", "web"])
def test_adk_server_sigterm_after_the_responses_loses_nothing(receiver, command):
    server = api_server(receiver, command=command)
    try:
        run_many(server, RUNS, concurrency=4)
        assert server.stop() in (0, -15)
    finally:
        server.kill()
    _assert_every_run_complete(receiver, RUNS)
    assert "Failed to detach context" not in server.output


def test_runs_in_flight_finish_within_the_grace_period_and_are_exported(receiver):
    """uvicorn waits for requests in flight before it shuts the app down: they
    finish, and every span of theirs is exported."""
    server = uvicorn(receiver, SERVING_MODEL_DELAY="1.5")
    try:
        pool = start_runs(server, 4)
        server.wait_for_line("RUN STARTED", count=4)
        assert server.stop() in (0, -15)
        pool.shutdown(wait=True)
    finally:
        server.kill()
    _assert_every_run_complete(receiver, 4)


def test_runs_cut_off_by_the_shutdown_end_with_their_whole_tree(receiver):
    """With a graceful-shutdown limit shorter than the runs, uvicorn cancels
    them: each run's invocation span still arrives, ended ``cancelled`` or
    ``incomplete``, with every child parented."""
    server = uvicorn(receiver, "--timeout-graceful-shutdown", "1", SERVING_MODEL_DELAY="60")
    try:
        pool = start_runs(server, 3)
        server.wait_for_line("RUN STARTED", count=3)
        assert server.stop() in (0, -15)
        pool.shutdown(wait=True)
    finally:
        server.kill()
    spans = adk_otel_spans(receiver)
    roots = invocations(spans)
    assert len(roots) == 3, server.output
    assert {s.outcome for s in spans} <= {"cancelled", "incomplete"}, spans
    assert not orphans(spans, receiver)
    for trace in by_trace(spans).values():
        assert {s.name.split(" ")[0] for s in trace} >= {"invocation", "invoke_agent"}
    assert "Failed to detach context" not in server.output
