"""A bound is a bound: a cut string, its "...[N characters cut]" marker and
any escapes included, is at most the documented number of characters
(``ADK_OTEL_MAX_TEXT_LENGTH``, ``ADK_OTEL_MAX_STACKTRACE_LENGTH``,
``content_max_length``), on every layer a huge failure reaches."""

from __future__ import annotations

import os

import pytest
from opentelemetry.trace import StatusCode

from adk_otel.testing.model import call
from adk_otel.util import sanitize

from .agents import clerk, runner_for
from .harness import assert_clean, drive

UNDECODABLE = os.fsdecode(b"\xff") * 3000  # each lone surrogate is written as 6 characters


def huge_failure(sku: str) -> dict:
    """A tool failing with a 1 MB message."""
    raise RuntimeError("x" * 1_000_000)


def escaped_failure(sku: str) -> dict:
    """A tool failing with a message that grows when escaped."""
    raise RuntimeError(UNDECODABLE)


@pytest.mark.parametrize("tool", [huge_failure, escaped_failure])
async def test_every_written_text_is_within_its_documented_bound(recorder, caplog, tool):
    await drive(runner_for(clerk(call(tool.__name__, {"sku": "A1"}), tools=[tool])))

    assert_clean(recorder, caplog.records)
    failed = [s for s in recorder.spans if s.status.status_code is StatusCode.ERROR]
    assert len(failed) >= 3  # tool, agent, invocation
    for span in failed:
        event = next(e for e in span.events if e.name == "exception")
        message = event.attributes["exception.message"]
        assert len(span.status.description) <= sanitize.TEXT_LENGTH
        assert len(message) == sanitize.TEXT_LENGTH  # cut right at the bound
        assert message.endswith(" characters cut]")
        assert len(event.attributes["exception.stacktrace"]) <= sanitize.STACKTRACE_LENGTH


@pytest.mark.parametrize("limit", [1, 5, 20, 21, 22, 30, 100, 4096])
@pytest.mark.parametrize("length", [4096, 4097, 9_999, 10_000, 10_001, 1_000_000])
def test_a_cut_string_fits_its_limit_marker_included(limit: int, length: int) -> None:
    value = "y" * length
    result = sanitize.clean(value, limit)
    assert len(result) <= limit
    if len(value) > limit and limit >= 40:
        kept = result.index("...[")
        assert result == f"{'y' * kept}...[{length - kept} characters cut]"


def test_captured_content_fits_its_limit_escapes_included() -> None:
    from adk_otel.reading.content import TRUNCATION_MARKER, ContentCapture

    capture = ContentCapture(on_span=True, on_event=False, max_length=64)
    value = capture.value("gen_ai.input.messages", os.fsdecode(b"\xff") * 60)
    assert value is not None
    assert len(value) == 64 and value.endswith(TRUNCATION_MARKER)
    value.encode("utf-8")  # valid UTF-8: the escapes were made before the cut
