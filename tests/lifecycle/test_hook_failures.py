"""A failure inside one of adk-otel's hooks never reaches the agent run: the
run goes on, every span still ends, and the failure is counted always and
logged once per hook and plugin, with its traceback."""

from __future__ import annotations

import logging
from typing import Any

import adk_otel
from adk_otel.testing.model import call, reply

from .agents import clerk, runner_for
from .harness import APP, assert_clean, drive, shape

INV = f"invocation {APP}"


class BrokenCapture:
    """Content capture with a bug in every method: adk-otel's own code
    failing in the middle of a hook, after the hook opened its span."""

    def __getattr__(self, name: str) -> Any:
        def broken(*args: Any, **kwargs: Any) -> None:
            raise RuntimeError(f"capture bug in {name}")

        return broken


def hook_warnings(records: list[logging.LogRecord]) -> list[str]:
    return [
        r.getMessage()
        for r in records
        if r.name == "adk_otel.hook_guard" and "failed; tracing continues" in r.getMessage()
    ]


async def test_a_failing_hook_is_counted_logged_once_and_the_run_goes_on(recorder, caplog):
    caplog.set_level(logging.WARNING, logger="adk_otel")
    runner = runner_for(clerk(call("lookup", {"sku": "A1"}), reply("3 left")))
    plugin = adk_otel.plugin_of(runner)
    assert plugin is not None
    plugin._capture = BrokenCapture()  # type: ignore[assignment]

    result = await drive(runner)

    assert result.error is None
    assert result.events[-1].content.parts[0].text == "3 left"
    assert_clean(recorder, caplog.records)
    # The model and tool hooks failed before deciding their outcome: their
    # spans are ended by the next closer, as incomplete; the rest are ok.
    assert shape(recorder) == [
        (0, INV, "OK", "ok"),
        (1, "invoke_agent clerk", "OK", "ok"),
        (2, "generate_content scripted-model", "UNSET", "incomplete"),
        (2, "execute_tool lookup", "UNSET", "incomplete"),
        (2, "generate_content scripted-model", "UNSET", "incomplete"),
    ]
    # before_run, before_agent, before_model and after_model twice each
    # model call, before_tool and after_tool; the final-response capture
    # runs for every event.
    failed_hooks = 1 + 1 + 2 * 2 + 2
    assert plugin.internal_errors == failed_hooks + len(result.events)
    warnings = hook_warnings(caplog.records)
    layers = ("run", "agent", "model", "tool")
    failed = [f"before_{layer}_callback" for layer in layers]
    failed += ["after_model_callback", "after_tool_callback", "_capture_final_response"]
    assert sorted(warnings) == sorted(f"adk-otel: {h} failed; tracing continues" for h in failed)
    tracebacks = [r.exc_text or "" for r in caplog.records if r.name == "adk_otel.hook_guard"]
    assert all("capture bug in" in text for text in tracebacks)

    # Another run on the same plugin: counted again, not logged again.
    caplog.clear()
    again = await drive(runner)
    assert again.error is None
    assert plugin.internal_errors == 2 * (failed_hooks + len(result.events))
    assert hook_warnings(caplog.records) == []

    # Another plugin logs its own first failures.
    other = runner_for(clerk(reply("hello")))
    other_plugin = adk_otel.plugin_of(other)
    assert other_plugin is not None
    other_plugin._capture = BrokenCapture()  # type: ignore[assignment]
    await drive(other)
    assert "adk-otel: before_run_callback failed; tracing continues" in hook_warnings(
        caplog.records
    )


class RaisingFilter(logging.Filter):
    """A logging set-up that raises on every record (a broken handler or filter)."""

    def filter(self, record: logging.LogRecord) -> bool:
        raise RuntimeError("logging is broken too")


async def test_a_logging_set_up_that_raises_does_not_reach_the_run(recorder, caplog):
    guard_logger = logging.getLogger("adk_otel.hook_guard")
    broken = RaisingFilter()
    guard_logger.addFilter(broken)
    try:
        runner = runner_for(clerk(reply("hello")))
        plugin = adk_otel.plugin_of(runner)
        assert plugin is not None
        plugin._capture = BrokenCapture()  # type: ignore[assignment]
        result = await drive(runner)
    finally:
        guard_logger.removeFilter(broken)

    assert result.error is None
    assert result.events[-1].content.parts[0].text == "hello"
    assert plugin.internal_errors > 0
    assert_clean(recorder, caplog.records)
