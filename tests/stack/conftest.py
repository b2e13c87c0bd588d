"""Shared helpers for the stack tests: repository files and real OTLP export paths."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpSpanExporter,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter

from adk_otel.testing.receiver import OtlpReceiver

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker-compose.yml"
CONFIG_DIR = REPO / "collector-config"
PROTOCOLS = ("grpc", "http/protobuf")
SERVICE_NAME = "adk-otel-stack-test"


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


_VAR = re.compile(r"\$\$|\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::?-(?P<default>[^}]*))?\}")


def interpolate(value: str, env: Mapping[str, str] | None = None) -> str:
    """Compose-style ``${VAR}`` / ``${VAR:-default}`` expansion, as `docker compose` does it."""
    env = env or {}

    def expand(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group("name")) or (match.group("default") or "")

    return _VAR.sub(expand, value)


@pytest.fixture(scope="session")
def compose() -> dict[str, Any]:
    return load_yaml(COMPOSE_FILE)


@pytest.fixture(scope="session")
def collector_config() -> dict[str, Any]:
    return load_yaml(CONFIG_DIR / "otel-collector.yaml")


@pytest.fixture
def stack_receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as receiver:
        yield receiver


def otlp_exporter(protocol: str, endpoint: str, timeout: float = 10.0) -> SpanExporter:
    """The SDK's own OTLP exporter for ``protocol``, gzip-compressed like a production setup.

    ``endpoint`` is a gRPC target (``http://host:port``) or a full HTTP traces URL.
    """
    if protocol == "grpc":
        return GrpcSpanExporter(endpoint=endpoint, insecure=True, timeout=timeout)
    if protocol == "http/protobuf":
        return HttpSpanExporter(endpoint=endpoint, timeout=timeout, compression=Compression.Gzip)
    raise ValueError(f"unknown OTLP protocol {protocol!r}")


def provider_for(
    protocol: str, endpoint: str, *, batch: bool = False, timeout: float = 10.0
) -> TracerProvider:
    """A TracerProvider exporting over real OTLP to ``endpoint``; shut it down when done."""
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
    exporter = otlp_exporter(protocol, endpoint, timeout)
    processor = (
        BatchSpanProcessor(exporter, schedule_delay_millis=50)
        if batch
        else SimpleSpanProcessor(exporter)
    )
    provider.add_span_processor(processor)
    return provider


def export_through(receiver: OtlpReceiver, protocol: str, *, batch: bool = False) -> TracerProvider:
    """A TracerProvider whose spans reach ``receiver`` over the wire with ``protocol``.

    Hand it to the code under test (e.g. ``instrument(tracer_provider=...)``), then
    read what arrived with ``receiver.wait_for(...)``, not ``force_flush()``'s result.
    """
    endpoint = receiver.grpc_endpoint if protocol == "grpc" else receiver.http_endpoint
    return provider_for(protocol, endpoint, batch=batch)
