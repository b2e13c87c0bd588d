"""Fixtures and guards shared by every test package.

Time limits: every test has one (pytest-timeout, ``timeout`` in pyproject.toml),
tighter for the directories in ``TIGHTER_LIMITS``, so a deadlock or a generator
nobody closes fails as one named test with its stack instead of hanging the run.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent

# Seconds per test (setup, call and teardown) in these directories, where each test takes
# well under 5 s on a loaded 2-core machine: a lifecycle change that deadlocks or leaves
# ADK's generator open fails tests/lifecycle in seconds, not at the suite's default.
TIGHTER_LIMITS = {"lifecycle": 20.0}

_TIMER_SETTINGS = pytest.StashKey[Any]()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("timeout") is not None:
            continue
        path = item.path.resolve()
        if path.is_relative_to(HERE):
            limit = TIGHTER_LIMITS.get(path.relative_to(HERE).parts[0])
            if limit is not None:
                item.add_marker(pytest.mark.timeout(limit))


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> None:
    item.stash[_TIMER_SETTINGS] = settings  # for the teardown of a failed test, below


@pytest.hookimpl(trylast=True)
def pytest_exception_interact(node: pytest.Item | pytest.Collector) -> None:
    """Time the teardown of a failed test too. pytest-timeout (2.4) stops its
    timer when a test fails, for a post-mortem debugger; the teardown then ran
    unbounded, and a run that left ADK's generator open hung in the event
    loop's close. Without ``--pdb``, the timer is set again for the rest."""
    if not isinstance(node, pytest.Item) or node.config.getoption("usepdb", False):
        return
    settings = node.stash.get(_TIMER_SETTINGS, None)
    if settings is not None and not settings.func_only:
        node.config.pluginmanager.hook.pytest_timeout_set_timer(item=node, settings=settings)


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
