"""The tail-sampling setup keeps every trace with an ERROR span for agent runs
that take minutes, including an ERROR that arrives last (the invocation span
ends after all its children), as docs/collector.md states.

No tail-sampling collector runs here (no Docker; rotel does not sample), so
these check the configuration against the processor's documented semantics:
a trace is decided ``decision_wait`` after its first span, or
``decision_wait_after_root_received`` after its root span, whichever is first;
a late span of a kept trace follows the decision (sampled cache), a late span
of a dropped trace is decided afresh when there is no non-sampled cache."""

from __future__ import annotations

import re
from typing import Any

from .conftest import REPO

AGENT_RUN_BOUND_S = 300  # the bound docs/collector.md promises


def seconds(value: str) -> float:
    match = re.fullmatch(r"(\d+)(ms|s|m|h)", value)
    assert match, value
    number, unit = int(match.group(1)), match.group(2)
    return number * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]


def sampling(collector_config: dict[str, Any]) -> dict[str, Any]:
    return collector_config["processors"]["tail_sampling"]


def test_a_run_of_minutes_is_decided_after_its_errors_arrive(collector_config) -> None:
    ts = sampling(collector_config)
    # Without a root, the decision waits as long as the promised run length.
    assert seconds(ts["decision_wait"]) >= AGENT_RUN_BOUND_S
    # With the root (the last span of a run) in, it is decided soon after.
    after_root = seconds(ts["decision_wait_after_root_received"])
    assert 0 < after_root <= 30


def test_late_spans_of_dropped_traces_are_decided_afresh(collector_config) -> None:
    cache = sampling(collector_config).get("decision_cache", {})
    assert cache.get("non_sampled_cache_size", 0) == 0
    assert cache["sampled_cache_size"] >= sampling(collector_config)["num_traces"]


def test_errors_are_kept_whatever_the_sample_share(collector_config) -> None:
    policies = sampling(collector_config)["policies"]
    errors = [p for p in policies if p["type"] == "status_code"]
    assert errors and errors[0]["status_code"]["status_codes"] == ["ERROR"]
    assert "sample_on_first_match" not in sampling(collector_config), "policies stay OR-ed"


def test_memory_bound_is_sized_for_the_wait(collector_config) -> None:
    ts = sampling(collector_config)
    held_s = seconds(ts["decision_wait_after_root_received"])
    # A run of typical length (a minute) plus the wait, at the expected rate, fits.
    assert ts["num_traces"] >= ts["expected_new_traces_per_sec"] * (60 + held_s)


def test_the_docs_state_the_bound() -> None:
    docs = (REPO / "docs" / "collector.md").read_text(encoding="utf-8")
    assert "5 minutes" in docs and "decision_wait" in docs
