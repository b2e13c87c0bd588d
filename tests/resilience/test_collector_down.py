"""The collector is down or hangs: agent runs are unaffected, the user gets
one clear warning with a count (no flood), nothing is buffered without bound,
and the process still exits promptly (bounded by ``EXIT_LIMIT``)."""

from __future__ import annotations

import pytest

from .conftest import endpoint_env, refused_url, run_child

PROTOCOLS = ("http/protobuf", "grpc")
RUNS = 3
SPANS_PER_RUN = 8


def assert_runs_unaffected(result) -> None:
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.report["errors"] == []
    assert result.report["runs_ok"] == RUNS
    assert result.report["open_spans"] == 0


def assert_nothing_exported_one_warning(result) -> None:
    report = result.report
    assert report["ended"] == RUNS * SPANS_PER_RUN
    assert report["exported"] == 0
    problems = result.problems()
    # One line, from adk-otel, with the count; nothing from the exporters.
    assert len(problems) == 1, "\n".join(problems)
    [line] = problems
    assert "adk_otel" in line
    assert f"{RUNS * SPANS_PER_RUN} of {RUNS * SPANS_PER_RUN} span(s) were not exported" in line


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_connection_refused(protocol):
    result = run_child(RUNS, endpoint_env(protocol, refused_url(protocol)))
    assert_runs_unaffected(result)
    assert_nothing_exported_one_warning(result)
    assert result.report["failed"] == RUNS * SPANS_PER_RUN


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_collector_that_never_answers(protocol, receiver):
    receiver.set_behaviour("hang")
    url = receiver.grpc_endpoint if protocol == "grpc" else receiver.http_endpoint
    result = run_child(RUNS, {**endpoint_env(protocol, url), "OTEL_BSP_EXPORT_TIMEOUT": "1000"})
    assert_runs_unaffected(result)
    assert_nothing_exported_one_warning(result)
    assert "still being exported when shutdown stopped waiting" in result.problems()[0]
    assert receiver.attempts >= 1


def test_port_that_accepts_and_never_reads(silent_port):
    result = run_child(
        RUNS,
        {
            **endpoint_env("http/protobuf", f"http://{silent_port}/v1/traces"),
            "OTEL_BSP_EXPORT_TIMEOUT": "1000",
        },
    )
    assert_runs_unaffected(result)
    assert_nothing_exported_one_warning(result)


def test_collector_down_for_a_long_run_bounded_queue_and_few_lines(receiver):
    """Many batches fail and the queue overflows: a bounded queue, spans
    counted (nothing silently lost), and a handful of lines, not one per batch."""
    receiver.set_behaviour("unavailable")
    runs = 60
    result = run_child(
        runs,
        {
            **endpoint_env("http/protobuf", receiver.http_endpoint),
            "OTEL_BSP_MAX_QUEUE_SIZE": "64",
            "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "16",
            "OTEL_BSP_SCHEDULE_DELAY": "20",
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "1",
        },
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = result.report
    assert report["runs_ok"] == runs and report["errors"] == []
    assert report["ended"] == runs * SPANS_PER_RUN
    assert report["exported"] == 0
    # Every span is accounted for, and the queue never held more than 64.
    assert report["dropped"] + report["failed"] + report["unsent"] == report["ended"]
    assert report["dropped"] >= report["ended"] - 64 - 16 * receiver.attempts
    problems = result.problems()
    assert all("adk_otel" in line for line in problems), "\n".join(problems)
    # First export failure, first drop, the summary at exit.
    assert len(problems) <= 3, "\n".join(problems)
    assert f"of {runs * SPANS_PER_RUN} span(s) were not exported" in problems[-1]
    assert f"{report['dropped']} dropped because the export queue was full" in problems[-1]
