from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from .harness import DISPATCH, Recorder, install_global_provider


@pytest.fixture(scope="session")
def global_provider():
    return install_global_provider()


@pytest.fixture
def recorder(global_provider, caplog: pytest.LogCaptureFixture) -> Iterator[Recorder]:
    """Spans of this test only; the global provider is shared by the session."""
    caplog.set_level(logging.WARNING)
    rec = Recorder()
    DISPATCH.target = rec
    try:
        yield rec
    finally:
        DISPATCH.target = None
