"""Fixtures and guards shared by every test package.

Time limits: every test has one (pytest-timeout, ``timeout`` in pyproject.toml),
tighter for the directories in ``TIGHTER_LIMITS``, so a deadlock or a generator
nobody closes fails as one named test with its stack instead of hanging the run.
No skips in CI: with ``CI`` set (GitHub Actions and .ci/run set it), a skipped
test fails the session, whatever made it skip (a missing package, the order of
tests). Children: every Python a test starts runs this checkout's ``src/``
(tests/checkout.py).
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from checkout import python_path

HERE = Path(__file__).resolve().parent

# Seconds per test (setup, call and teardown) in these directories, where each test takes
# well under 5 s on a loaded 2-core machine: a lifecycle change that deadlocks or leaves
# ADK's generator open fails tests/lifecycle in seconds, not at the suite's default.
TIGHTER_LIMITS = {"lifecycle": 20.0}

_TIMER_SETTINGS = pytest.StashKey[Any]()


def pytest_configure(config: pytest.Config) -> None:
    """Every child Python the tests start runs this checkout's ``src/``
    (tests/checkout.py), whichever copy the environment installed."""
    os.environ["PYTHONPATH"] = python_path()


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


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false")


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int) -> None:
    if not _in_ci():
        return
    skipped = terminalreporter.stats.get("skipped", [])
    if skipped:
        terminalreporter.section("skipped in CI", sep="=", red=True, bold=True)
        for report in skipped:
            terminalreporter.line(f"{report.nodeid}: {report.longrepr}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """No test is skipped in CI (CONTRIBUTING.md): one that skipped there,
    for a missing package or an order of tests, fails the run."""
    if not _in_ci():
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and reporter.stats.get("skipped") and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(wrapper=True)
def pytest_report_to_serializable(config: pytest.Config, report: Any) -> Any:
    """Make every report crossable to a pytest-xdist controller: a lone surrogate
    (a test's hostile input, echoed in a log record, captured output or an
    exception message) cannot be encoded as UTF-8 on the way and would end the
    whole run. It is escaped instead (``\\udcff``), the report otherwise as it was."""
    return _escape_lone_surrogates((yield))


def _escape_lone_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, dict):
        return {key: _escape_lone_surrogates(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_escape_lone_surrogates(item) for item in value)
    return value


_SHARED_FIXTURE = re.compile(r"""scope\s*=\s*["'](?:module|class|package)["']""")


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's ``load`` (its default with ``-n``), each test to the next free
    worker, except that the tests of a file that shares a fixture between its tests
    (module- or class-scoped, in the file or a conftest.py above it: often a set of
    processes) go to one worker together, so it is built once. (``xdist_group``
    marks would say the same, but pytest-xdist 3.8 loses them under pytest 9.2.)"""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    root = config.rootpath

    @functools.cache
    def shares_a_fixture(path: str) -> bool:
        file = root / path
        sources = [file, *(d / "conftest.py" for d in file.parents if d.is_relative_to(HERE))]
        return any(
            _SHARED_FIXTURE.search(source.read_text(encoding="utf-8"))
            for source in sources
            if source.is_file()
        )

    class SharedFixturesTogether(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return path if shares_a_fixture(path) else nodeid

    return SharedFixturesTogether(config, log)


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
