"""The same span tree through a real collector process between the SDK and the receiver.

The OpenTelemetry Collector itself (otelcol-contrib) is not on PyPI. `rotel`, a
lightweight OTLP collector shipped as a wheel with its binary, is: it receives OTLP
gRPC/HTTP, batches, and re-exports OTLP, which is the hop this test proves. It cannot
read collector-config/otel-collector.yaml; that file is checked statically.
Install with ``pip install "rotel==0.0.1a15"``; the test is skipped without it.
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from adk_otel.testing.receiver import OtlpReceiver, poll_until

from .conftest import PROTOCOLS, provider_for
from .spantree import assert_tree_intact, make_tree

rotel = pytest.importorskip(
    "rotel", reason='needs the rotel collector: pip install "rotel==0.0.1a15"'
)
AGENT = Path(rotel.__file__).parent / "rotel-agent"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def accepting(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except OSError:
        return False
    return True


@pytest.fixture
def collector(stack_receiver: OtlpReceiver, tmp_path: Path) -> Iterator[dict[str, str]]:
    """A rotel process on loopback forwarding OTLP gRPC to ``stack_receiver``."""
    if not AGENT.is_file():
        pytest.skip(f"rotel is installed without its agent binary ({AGENT.name})")
    grpc_port, http_port = free_port(), free_port()
    output = (tmp_path / "rotel.out").open("wb")
    process = subprocess.Popen(
        [
            AGENT, "start",
            "--otlp-grpc-endpoint", f"127.0.0.1:{grpc_port}",
            "--otlp-http-endpoint", f"127.0.0.1:{http_port}",
            "--exporter", "otlp",
            "--otlp-exporter-endpoint", stack_receiver.grpc_endpoint,
            "--otlp-exporter-protocol", "grpc",
            "--batch-timeout", "50ms",
            "--pid-file", tmp_path / "rotel.pid",
            "--log-file", tmp_path / "rotel.log",
        ],
        stdout=output,
        stderr=subprocess.STDOUT,
    )  # fmt: skip

    def ready() -> bool:
        if process.poll() is not None:
            log = (tmp_path / "rotel.out").read_text(errors="replace")
            raise RuntimeError(f"rotel exited with {process.returncode}:\n{log[-2000:]}")
        return accepting(grpc_port) and accepting(http_port)

    try:
        poll_until(ready, timeout=15, what="rotel to listen on its OTLP ports")
        yield {
            "grpc": f"http://127.0.0.1:{grpc_port}",
            "http/protobuf": f"http://127.0.0.1:{http_port}/v1/traces",
        }
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        output.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_span_tree_survives_a_collector_hop(
    stack_receiver: OtlpReceiver, collector: dict[str, str], protocol: str
) -> None:
    provider = provider_for(protocol, collector[protocol])
    root = make_tree(provider)
    try:
        assert_tree_intact(stack_receiver, root, timeout=15)
    finally:
        provider.shutdown()
