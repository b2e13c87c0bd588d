"""Spans keep their shape over real OTLP (gRPC and HTTP/protobuf), end to end."""

from __future__ import annotations

import pytest

from adk_otel.testing.receiver import OtlpReceiver

from .conftest import PROTOCOLS, export_through
from .spantree import assert_tree_intact, make_tree


@pytest.mark.parametrize("batch", [False, True], ids=["simple", "batch"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_span_tree_survives_the_wire(
    stack_receiver: OtlpReceiver, protocol: str, batch: bool
) -> None:
    provider = export_through(stack_receiver, protocol, batch=batch)
    root = make_tree(provider)
    provider.force_flush()  # its return value proves nothing: the receiver is the witness
    try:
        assert_tree_intact(stack_receiver, root)
    finally:
        provider.shutdown()
