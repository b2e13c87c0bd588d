"""The receiver's own contract: behaviours, encodings, waiting, and prompt shutdown."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request

import pytest
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult

from adk_otel.testing.receiver import OtlpReceiver, poll_until

from .conftest import PROTOCOLS, otlp_exporter

EXPORT_TIMEOUT = 2.0
SLACK = 3.0  # scheduling headroom on a loaded CI machine; the point is "bounded", not speed


def one_span(name: str = "probe") -> ReadableSpan:
    span = TracerProvider().get_tracer("probe").start_span(name)
    span.end()
    return span  # type: ignore[return-value]


def endpoint(receiver: OtlpReceiver, protocol: str) -> str:
    return receiver.grpc_endpoint if protocol == "grpc" else receiver.http_endpoint


def timed_export(receiver: OtlpReceiver, protocol: str) -> tuple[SpanExportResult, float]:
    exporter = otlp_exporter(protocol, endpoint(receiver, protocol), timeout=EXPORT_TIMEOUT)
    started = time.monotonic()
    try:
        return exporter.export([one_span()]), time.monotonic() - started
    finally:
        exporter.shutdown()


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("behaviour", ["unavailable", "hang"])
def test_failing_backend_fails_the_export_within_its_timeout(
    stack_receiver: OtlpReceiver, protocol: str, behaviour: str
) -> None:
    stack_receiver.set_behaviour(behaviour)  # type: ignore[arg-type]
    result, elapsed = timed_export(stack_receiver, protocol)
    assert result is SpanExportResult.FAILURE
    assert elapsed < EXPORT_TIMEOUT + SLACK
    assert stack_receiver.attempts >= 1
    assert stack_receiver.spans() == []

    stack_receiver.set_behaviour("ok")
    result, _ = timed_export(stack_receiver, protocol)
    assert result is SpanExportResult.SUCCESS
    assert [span.name for span in stack_receiver.wait_for(1)] == ["probe"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_stop_returns_promptly_while_an_export_hangs(protocol: str) -> None:
    receiver = OtlpReceiver().start()
    receiver.set_behaviour("hang")
    outcome: list[SpanExportResult] = []
    exporter = otlp_exporter(protocol, endpoint(receiver, protocol), timeout=EXPORT_TIMEOUT)
    client = threading.Thread(target=lambda: outcome.append(exporter.export([one_span()])))
    client.start()
    try:
        receiver.wait_for_attempts(1)
        started = time.monotonic()
        receiver.stop()
        assert time.monotonic() - started < SLACK
    finally:
        receiver.stop()
        client.join(EXPORT_TIMEOUT + SLACK)
        exporter.shutdown()
    assert not client.is_alive()
    assert outcome == [SpanExportResult.FAILURE]


@pytest.mark.parametrize("compression", list(Compression), ids=lambda c: c.value or "none")
def test_http_bodies_in_every_compression_the_exporter_sends(
    stack_receiver: OtlpReceiver, compression: Compression
) -> None:
    exporter = OTLPSpanExporter(endpoint=stack_receiver.http_endpoint, compression=compression)
    assert exporter.export([one_span("compressed")]) is SpanExportResult.SUCCESS
    assert [span.name for span in stack_receiver.wait_for(1)] == ["compressed"]


@pytest.mark.parametrize(
    ("path", "content_type", "status"),
    [
        ("/v1/traces", "application/json", 415),
        ("/v1/metrics", "application/x-protobuf", 404),
        ("/v1/traces", "application/x-protobuf", 400),
    ],
)
def test_http_rejections_say_why(
    stack_receiver: OtlpReceiver, path: str, content_type: str, status: int
) -> None:
    url = stack_receiver.http_endpoint.replace("/v1/traces", path)
    request = urllib.request.Request(
        url, data=b"\xff not protobuf", headers={"Content-Type": content_type}, method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=5)
    assert raised.value.code == status
    assert raised.value.read()
    assert stack_receiver.requests == []


def test_wait_for_times_out_naming_what_arrived(stack_receiver: OtlpReceiver) -> None:
    with pytest.raises(TimeoutError, match=r"0 span\(s\)"):
        stack_receiver.wait_for(1, timeout=0.1)
    exporter = otlp_exporter("grpc", stack_receiver.grpc_endpoint)
    assert exporter.export([one_span("lonely")]) is SpanExportResult.SUCCESS
    with pytest.raises(TimeoutError, match=r"1 span\(s\).*\[lonely\]"):
        stack_receiver.wait_for(lambda spans: len(spans) > 1, timeout=0.1)
    stack_receiver.clear()
    assert stack_receiver.spans() == [] and stack_receiver.attempts == 0


def test_wait_for_wakes_on_an_export_from_another_thread(stack_receiver: OtlpReceiver) -> None:
    exporter = otlp_exporter("http/protobuf", stack_receiver.http_endpoint)
    sender = threading.Thread(target=lambda: exporter.export([one_span("late")]))
    sender.start()
    spans = stack_receiver.wait_for(lambda spans: any(s.name == "late" for s in spans))
    sender.join(5)
    assert [span.name for span in spans] == ["late"]


def test_unknown_behaviour_is_refused(stack_receiver: OtlpReceiver) -> None:
    with pytest.raises(ValueError, match="behaviour"):
        stack_receiver.set_behaviour("flaky")  # type: ignore[arg-type]


def test_poll_until_returns_the_value_or_names_what_it_waited_for() -> None:
    calls = iter([None, False, "ready"])
    assert poll_until(lambda: next(calls), timeout=5, what="readiness", interval=0.001) == "ready"
    with pytest.raises(TimeoutError, match="the port to open"):
        poll_until(lambda: None, timeout=0.05, what="the port to open", interval=0.01)
