"""OTLP JSON writing and reading, checked against the collector file-exporter format."""

from __future__ import annotations

import io
import json
import re

import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult

from adk_otel.traces.io.files import read_spans
from adk_otel.traces.io.model import SpanRecord
from adk_otel.traces.io.otlp_json import (
    OtlpJsonError,
    OtlpJsonFileExporter,
    loads_spans,
    request_to_dict,
    spans_to_line,
    write_requests,
    write_spans,
)

from .builders import TraceBuilder, build_shop


def sdk_records(spans: list) -> list[SpanRecord]:
    return sorted((SpanRecord.from_readable(s) for s in spans), key=lambda r: r.span_id)


def by_id(records: list[SpanRecord]) -> list[SpanRecord]:
    return sorted(records, key=lambda r: r.span_id)


def test_line_has_the_file_exporter_shape() -> None:
    spans = build_shop().finished()
    line = spans_to_line(spans)
    assert "\n" not in line
    document = json.loads(line)
    assert list(document) == ["resourceSpans"]
    (resource_spans,) = document["resourceSpans"]
    assert set(resource_spans) >= {"resource", "scopeSpans"}
    span = next(
        s
        for s in resource_spans["scopeSpans"][0]["spans"]
        if s["name"] == "generate_content scripted-model"
    )
    assert re.fullmatch(r"[0-9a-f]{32}", span["traceId"])
    assert re.fullmatch(r"[0-9a-f]{16}", span["spanId"])
    assert re.fullmatch(r"[0-9a-f]{16}", span["parentSpanId"])
    assert span["kind"] == 3  # CLIENT, as an integer
    assert span["status"] == {"code": 1}
    assert isinstance(span["startTimeUnixNano"], str)  # int64 as string
    tokens = next(a for a in span["attributes"] if a["key"] == "gen_ai.usage.input_tokens")
    assert tokens["value"] == {"intValue": "12"}
    reasons = next(a for a in span["attributes"] if a["key"] == "gen_ai.response.finish_reasons")
    assert reasons["value"] == {"arrayValue": {"values": [{"stringValue": "stop"}]}}


def test_written_spans_read_back_equal() -> None:
    spans = build_shop().finished()
    assert by_id(loads_spans(spans_to_line(spans))) == sdk_records(spans)


def test_write_spans_appends_one_line_per_call(tmp_path) -> None:
    path = tmp_path / "traces.jsonl"
    first, second = build_shop().finished(), build_shop().finished()
    write_spans(path, first)
    write_spans(path, second)
    assert len(path.read_text().splitlines()) == 2
    assert by_id(read_spans(path)) == sdk_records(first + second)


def test_write_requests_from_protobuf(tmp_path) -> None:
    spans = build_shop().finished()
    buffer = io.StringIO()
    write_requests(buffer, [encode_spans(spans[:2]), encode_spans(spans[2:])])
    assert buffer.getvalue().count("\n") == 2
    assert by_id(loads_spans(buffer.getvalue())) == sdk_records(spans)


def test_file_exporter_writes_a_line_per_export(tmp_path) -> None:
    path = tmp_path / "out.jsonl"
    exporter = OtlpJsonFileExporter(path)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    build_shop(TraceBuilder(provider))
    provider.shutdown()
    assert len(path.read_text().splitlines()) == 4  # SimpleSpanProcessor: one span per export
    assert sorted(r.name for r in read_spans(path)) == [
        "execute_tool lookup",
        "generate_content scripted-model",
        "invocation shop",
        "invoke_agent root",
    ]
    assert exporter.export([]) is SpanExportResult.FAILURE


def test_pretty_printed_single_document_is_accepted() -> None:
    spans = build_shop().finished()
    pretty = json.dumps(json.loads(spans_to_line(spans)), indent=2)
    assert by_id(loads_spans(pretty)) == sdk_records(spans)


def test_protobuf_json_with_base64_ids_and_enum_names_is_accepted() -> None:
    spans = build_shop().finished()
    document = json_format.MessageToDict(encode_spans(spans))  # base64 ids, enum names
    assert "SPAN_KIND" in json.dumps(document)
    assert by_id(loads_spans(json.dumps(document))) == sdk_records(spans)


def test_request_to_dict_round_trips_through_parse() -> None:
    request = encode_spans(build_shop().finished())
    document = request_to_dict(request)
    assert all(
        len(span["spanId"]) == 16
        for rs in document["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    )


def test_metrics_lines_are_skipped_but_metrics_only_is_an_error() -> None:
    spans = build_shop().finished()
    metrics = json.dumps({"resourceMetrics": []})
    assert len(loads_spans(metrics + "\n" + spans_to_line(spans))) == 4
    with pytest.raises(OtlpJsonError, match="metrics or logs only, no traces"):
        loads_spans(metrics, source="m.jsonl")


LINE = spans_to_line(build_shop().finished())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"^in\.jsonl: empty, no OTLP JSON in it$"),
        ("  \n\n", r"^in\.jsonl: empty"),
        (LINE + "\n{oops\n", r"^in\.jsonl: line 2: invalid JSON \(Expecting property name"),
        ('{\n  "resourceSpans": [\n    oops\n  ]\n}', r"^in\.jsonl: line 3: invalid JSON"),
        ("[1, 2]", r"^in\.jsonl: line 1: not OTLP JSON \(expected an object, got list\)$"),
        (
            '{"hello": 1}',
            r'^in\.jsonl: line 1: not OTLP JSON traces \(no "resourceSpans"; keys: hello\)$',
        ),
        (
            '{"resourceSpans": "x"}',
            r"^in\.jsonl: line 1: not valid OTLP JSON \(resourceSpans must be a list\)$",
        ),
        (
            '{"resourceSpans":[{"scopeSpans":[{"spans":[{"kind":"SPAN_KIND_NOPE"}]}]}]}',
            r"scopeSpans\[0\]\.spans\[0\]\.kind: 'SPAN_KIND_NOPE' is not a valid value\)$",
        ),
        (
            '{"resourceSpans":[{"scopeSpans":[{"spans":[{"startTimeUnixNano":"soon"}]}]}]}',
            r"spans\[0\]\.startTimeUnixNano must be an integer \(as a string\); got 'soon'\)$",
        ),
        (
            '{"resourceSpans":[{"scopeSpans":[{"spans":[{"attributes":[{"key":"n","value":{"boolValue":"yes"}}]}]}]}]}',
            r"spans\[0\]\.attributes\[n\] boolValue must be true or false\)$",
        ),
        (
            '{"resourceSpans":[{"scopeSpans":[{"spans":[7]}]}]}',
            r"\(resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\] must be an object\)$",
        ),
        (
            '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"abc","spanId":"00f067aa0ba902b7"}]}]}]}',
            r"^in\.jsonl: line 1: not valid OTLP JSON \(traceId 'abc' is not 32 hex digits\)$",
        ),
    ],
)
def test_bad_input_is_one_clear_line(text: str, message: str) -> None:
    with pytest.raises(OtlpJsonError, match=message) as caught:
        loads_spans(text, source="in.jsonl")
    assert "\n" not in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_file_errors_name_the_file(tmp_path) -> None:
    with pytest.raises(OtlpJsonError, match=r"nope\.jsonl: no such file$"):
        read_spans(tmp_path / "nope.jsonl")
    with pytest.raises(OtlpJsonError, match="is a directory"):
        read_spans(tmp_path)
    binary = tmp_path / "b.bin"
    binary.write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(OtlpJsonError, match="not a text file"):
        read_spans(binary)


SPEC_EXAMPLE = (
    '{"resourceSpans":[{"resource":{"attributes":[{"key":"resource-attr","value":{"stringValue":'
    '"resource-attr-val-1"}}]},"scopeSpans":[{"scope":{},"spans":[{"traceId":"","spanId":"",'
    '"parentSpanId":"","name":"operationA","startTimeUnixNano":"1581452772000000321",'
    '"endTimeUnixNano":"1581452773000000789","droppedAttributesCount":1,"events":[{"timeUnixNano":'
    '"1581452773000000123","name":"event-with-attr","attributes":[{"key":"span-event-attr","value":'
    '{"stringValue":"span-event-attr-val"}}],"droppedAttributesCount":2},{"timeUnixNano":'
    '"1581452773000000123","name":"event","droppedAttributesCount":2}],"droppedEventsCount":1,'
    '"status":{"message":"status-cancelled","code":2}},{"traceId":"","spanId":"","parentSpanId":"",'
    '"name":"operationB","startTimeUnixNano":"1581452772000000321","endTimeUnixNano":'
    '"1581452773000000789","links":[{"traceId":"","spanId":"","attributes":[{"key":"span-link-attr",'
    '"value":{"stringValue":"span-link-attr-val"}}],"droppedAttributesCount":4}],'
    '"droppedLinksCount":3,"status":{}}]}]}]}'
)
"""The traces example of the OpenTelemetry file-exporter specification (ids left empty)."""


def test_reads_the_specification_example() -> None:
    a, b = loads_spans(SPEC_EXAMPLE)
    assert (a.name, a.status_code, a.status_description) == (
        "operationA",
        "ERROR",
        "status-cancelled",
    )
    assert (a.start_ns, a.end_ns) == (1581452772000000321, 1581452773000000789)
    assert [e.name for e in a.events] == ["event-with-attr", "event"]
    assert a.events[0].attributes == {"span-event-attr": "span-event-attr-val"}
    assert a.resource == {"resource-attr": "resource-attr-val-1"}
    assert (a.kind, a.scope, a.parent_id) == ("UNSPECIFIED", None, None)
    assert (b.name, b.status_code) == ("operationB", "UNSET")


def test_every_attribute_value_type() -> None:
    values = (
        '{"key":"s","value":{"stringValue":"x"}},{"key":"b","value":{"boolValue":true}},'
        '{"key":"i","value":{"intValue":"-42"}},{"key":"d","value":{"doubleValue":1.5}},'
        '{"key":"inf","value":{"doubleValue":"Infinity"}},{"key":"bytes","value":{"bytesValue":"AQI="}},'
        '{"key":"arr","value":{"arrayValue":{"values":[{"intValue":1},{"stringValue":"y"}]}}},'
        '{"key":"kv","value":{"kvlistValue":{"values":[{"key":"k","value":{"boolValue":false}}]}}},'
        '{"key":"empty","value":{}}'
    )
    text = (
        '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736",'
        '"spanId":"00f067aa0ba902b7","name":"s","kind":"SPAN_KIND_SERVER",'
        '"status":{"code":"STATUS_CODE_OK"},"attributes":[' + values + "]}]}]}]}"
    )
    (record,) = loads_spans(text)
    assert (record.kind, record.status_code) == ("SERVER", "OK")
    assert record.attributes == {
        "s": "x",
        "b": True,
        "i": -42,
        "d": 1.5,
        "inf": float("inf"),
        "bytes": b"\x01\x02",
        "arr": (1, "y"),
        "kv": {"k": False},
        "empty": None,
    }


def test_reads_an_open_text_file(tmp_path) -> None:
    spans = build_shop().finished()
    assert len(read_spans(io.StringIO(spans_to_line(spans)))) == 4
