"""pytest plugin (auto-loaded when adk-otel is installed): trace fixtures.

* ``adk_trace``: a :class:`~adk_otel.testing.capture.TraceCapture` with a
  fresh tracer provider per test. ``adk_trace.instrument(runner)`` sends the
  runner's spans there; ``query()``, ``tree()``, ``assert_tree()`` and
  ``snapshot(name)`` read them; ``save(path)`` writes them for the
  ``adk-otel`` command. The test fails at teardown if any span it started
  was never ended.
* ``otlp_receiver``: an OTLP receiver (gRPC and HTTP) on loopback ports, for
  apps that export from another process.
* ``--adk-otel-update-snapshots``: write or refresh golden files under
  ``__snapshots__/<test module>/`` next to the test file.

pytest imports this module in every run of every project that installed
adk-otel, so it imports nothing heavy; the fixtures import what they use.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .capture import TraceCapture

UPDATE_OPTION = "--adk-otel-update-snapshots"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("adk-otel")
    group.addoption(
        UPDATE_OPTION,
        action="store_true",
        default=False,
        help="write or update adk_trace.snapshot() golden files instead of comparing",
    )


@pytest.fixture
def adk_trace(request: pytest.FixtureRequest) -> Iterator[TraceCapture]:
    """Spans of this test only; fails the test if one is left unended."""
    from .capture import TraceCapture

    path = request.path
    capture = TraceCapture(
        snapshot_dir=path.parent / "__snapshots__" / path.stem,
        update_snapshots=bool(request.config.getoption(UPDATE_OPTION)),
    )
    try:
        yield capture
        unended = capture.unended
        if unended:
            names = ", ".join(repr(record.name) for record in unended)
            pytest.fail(
                f"adk_trace: {len(unended)} span(s) started and never ended: {names}\n\n"
                f"{capture.tree()}",
                pytrace=False,
            )
    finally:
        capture.shutdown()


@pytest.fixture
def otlp_receiver() -> Iterator[Any]:
    """An ``OtlpReceiver`` listening on 127.0.0.1 (``grpc_endpoint``, ``http_endpoint``)."""
    from .receiver import OtlpReceiver

    with OtlpReceiver() as receiver:
        yield receiver
