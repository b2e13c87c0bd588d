from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from testing.builders import TraceBuilder, build_shop

from adk_otel.otlp_json import OtlpJsonFileExporter

DATA = Path(__file__).parent / "data"


@pytest.fixture
def collector_file() -> Path:
    """Written the way the Collector's file exporter writes (hex ids, two batches)."""
    return DATA / "collector_shop.jsonl"


@pytest.fixture
def shop_spec() -> Path:
    return DATA / "shop_spec.yaml"


@pytest.fixture
def exported_file(tmp_path: Path) -> Path:
    """The shop trace exported by an SDK pipeline into an OTLP JSON file."""
    path = tmp_path / "traces.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OtlpJsonFileExporter(path)))
    build_shop(TraceBuilder(provider))
    provider.shutdown()
    return path
