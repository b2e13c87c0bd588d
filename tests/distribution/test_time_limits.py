"""The suite's time limits hold where pytest-timeout alone would not: a test
that fails and then hangs in its teardown (as a run that leaves ADK's generator
open hangs in the event loop's close) fails at the limit, and the run goes on."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

HANGS_AFTER_FAILING = textwrap.dedent(
    """
    import threading

    import pytest


    @pytest.fixture
    def never_released():
        yield
        threading.Event().wait()  # a teardown that never returns


    def test_fails_then_hangs(never_released):
        assert False, "failed first"


    def test_runs_after():
        pass
    """
)


def test_a_failed_tests_hanging_teardown_fails_at_the_limit(tmp_path: Path) -> None:
    for name in ("conftest.py", "checkout.py"):  # the suite's conftest and what it imports
        shutil.copy(TESTS / name, tmp_path / name)
    (tmp_path / "test_hang.py").write_text(HANGS_AFTER_FAILING, encoding="utf-8")
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--timeout", "2"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    elapsed = time.monotonic() - started
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert "Timeout (>2.0s) from pytest-timeout" in out, out
    assert "ERROR test_hang.py::test_fails_then_hangs" in out, out
    summary = result.stdout.strip().splitlines()[-1]  # a warning may sit among the counts
    assert all(count in summary for count in ("1 failed", "1 passed", "1 error")), out
    assert elapsed < 30, out
