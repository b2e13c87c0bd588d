"""The TraceQL examples in docs/collector.md name things the demo produces, so
a user who runs the demo and pastes an example finds a trace."""

from __future__ import annotations

import re

from adk_otel import demo

from .conftest import REPO


def test_tool_names_in_the_examples_are_demo_tools() -> None:
    docs = (REPO / "docs" / "collector.md").read_text(encoding="utf-8")
    named = set(re.findall(r'gen_ai\.tool\.name = "([^"]+)"', docs))
    assert named, "the docs show a tool query"
    assert named <= {demo.lookup_item.__name__, demo.charge_card.__name__}
