"""Several workers are told apart and each flushes at its own shutdown; a slow
collector costs no request its latency, and what it makes the server drop is
counted in what the server prints."""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib.metadata import version

import pytest

from adk_otel.testing.receiver import OtlpReceiver

from .harness import (
    SPANS_PER_RUN,
    adk_otel_spans,
    api_server,
    by_trace,
    gunicorn,
    instances_by_trace,
    orphans,
    run_many,
    uvicorn,
)

ADK_VERSION = tuple(int(part) for part in version("google-adk").split(".")[:2])

LOSS = re.compile(r"adk-otel: shutdown: (\d+) of (\d+) span\(s\) were not exported")


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as rx:
        yield rx


def test_two_workers_each_flush_and_carry_their_own_instance_id(receiver):
    runs = 16
    server = uvicorn(receiver, "--workers", "2", SERVING_MODEL_DELAY="0.2")
    try:
        run_many(server, runs, concurrency=8)
        assert server.stop() in (0, -15)
    finally:
        server.kill()
    spans = adk_otel_spans(receiver)
    assert len(spans) == runs * SPANS_PER_RUN
    assert len(by_trace(spans)) == runs
    assert not orphans(spans, receiver)
    instances = {span.instance for span in spans}
    assert "" not in instances
    assert len(instances) == 2, instances
    # every span of a run comes from one process
    for trace in by_trace(spans).values():
        assert len({span.instance for span in trace}) == 1


def test_gunicorn_with_uvicorn_workers_loses_nothing_at_stop(receiver):
    runs = 12
    server = gunicorn(receiver, 2, SERVING_MODEL_DELAY="0.2")
    try:
        run_many(server, runs, concurrency=6)
        assert server.stop() == 0
    finally:
        server.kill()
    spans = adk_otel_spans(receiver)
    assert len(spans) == runs * SPANS_PER_RUN
    assert not orphans(spans, receiver)
    assert "" not in {span.instance for span in spans}
    assert "Failed to detach context" not in server.output


def test_the_http_spans_of_a_run_carry_the_instance_id_too(receiver):
    """FastAPI's tracer was made before adk-otel took over ADK's provider (at
    the worker's first run); the spans it starts from then on carry the id.
    Only the request that started that first run began without it."""
    server = uvicorn(receiver)
    try:
        run_many(server, 4, concurrency=1)
        assert server.stop() in (0, -15)
    finally:
        server.kill()
    [instance] = {span.instance for span in adk_otel_spans(receiver)}
    runs = set(by_trace(adk_otel_spans(receiver)))
    http = {t: ids for t, ids in instances_by_trace(receiver, "fastapi").items() if t in runs}
    if ADK_VERSION < (2, 13):
        # ADK 2.5's server instruments no FastAPI app: no HTTP spans to carry it.
        assert http == {}
        return
    assert len(http) == 4
    without = [t for t, ids in http.items() if ids != {instance}]
    assert len(without) <= 1, http


def test_a_user_set_instance_id_is_kept(receiver):
    server = uvicorn(receiver, OTEL_RESOURCE_ATTRIBUTES="service.instance.id=shop-7")
    try:
        run_many(server, 2, concurrency=1)
        assert server.stop() in (0, -15)
    finally:
        server.kill()
    assert {span.instance for span in adk_otel_spans(receiver)} == {"shop-7"}


@pytest.mark.parametrize("start", [uvicorn, api_server], ids=["uvicorn", "api_server"])
def test_a_slow_collector_makes_the_server_drop_and_say_how_many(receiver, start):
    """A queue of 20 spans and a collector taking 1 s per export: spans are
    dropped, the server answers all the same, and at shutdown it prints how
    many spans it could not deliver; with what arrived, they add up."""
    receiver.delay = 1.0
    server = start(
        receiver,
        OTEL_BSP_MAX_QUEUE_SIZE="20",
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE="10",
        OTEL_BSP_SCHEDULE_DELAY="50",
    )
    try:
        answers = run_many(server, 10, concurrency=5)
        assert all(answers)  # every request answered: the collector costs no request
        assert server.stop() in (0, -15)
    finally:
        server.kill()
    found = LOSS.search(server.output)
    assert found, server.output
    lost, ended = int(found.group(1)), int(found.group(2))
    assert "dropped because the export queue was full" in server.output
    received = len(receiver.spans())
    assert 0 < lost <= ended
    # an export under way when the process died may still have arrived
    assert ended - lost <= received <= ended
    assert "Queue full, dropping" not in server.output


SDK_DROPS = re.compile(
    r"adk-otel: shutdown: (\d+) adk-otel span\(s\) ended in this process; "
    r"(\d+) span\(s\) were dropped because a batch queue was full"
)


def test_under_adks_own_export_the_sdks_drops_are_counted(receiver):
    """Left on ADK's own batch processor (``ADK_OTEL_ADOPT_ADK_PROVIDER=false``),
    the SDK's per-span "Queue full" lines are replaced by adk-otel's count."""
    receiver.delay = 1.0
    server = uvicorn(
        receiver,
        ADK_OTEL_ADOPT_ADK_PROVIDER="false",
        OTEL_BSP_MAX_QUEUE_SIZE="20",
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE="10",
        OTEL_BSP_SCHEDULE_DELAY="50",
    )
    try:
        run_many(server, 10, concurrency=5)
        assert server.stop() in (0, -15)
    finally:
        server.kill()
    found = SDK_DROPS.search(server.output)
    assert found, server.output
    assert int(found.group(1)) == 10 * SPANS_PER_RUN
    assert int(found.group(2)) > 0
    assert "Queue full, dropping" not in server.output
    assert {span.instance for span in adk_otel_spans(receiver)} == {""}  # ADK's resource, as is
