"""The complete test file in docs/testing.md, run as a user would run it: it
must pass once its golden file is written, and its snapshot must then hold."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def documented_test_file() -> str:
    section = GUIDE.read_text().split("## A complete test file", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found, "docs/testing.md lost its complete test file"
    return found.group(1)


@pytest.mark.timeout(360)  # slow: 10-40 s on a loaded 2-core machine
def test_the_documented_test_file_passes(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_shop_traces=documented_test_file())

    # As the guide says: the first run writes the golden file...
    first = pytester.runpytest_subprocess("--adk-otel-update-snapshots", "-p", "no:cacheprovider")
    first.assert_outcomes(passed=3)
    snapshots = list(pytester.path.rglob("lookup_then_answer*"))
    assert snapshots, "no golden file written"

    # ...and from then on the test compares against it.
    second = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    second.assert_outcomes(passed=3)
