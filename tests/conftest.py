"""Fixtures shared by every test package."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


@pytest.fixture
def adk_logs_kept_out() -> Iterator[None]:
    """Keep ADK's own log records (which repeat an exception's message) out of
    the test report: a lone surrogate in them cannot cross to a pytest-xdist
    controller, which would end the whole run."""
    adk = logging.getLogger("google_adk")
    before = adk.level
    adk.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        adk.setLevel(before)
