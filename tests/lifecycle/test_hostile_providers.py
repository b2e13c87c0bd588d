"""A provider keyword adk-otel cannot use (``tracer_provider=``,
``meter_provider=``, ``logger_provider=``: a string, an object without the
method, one whose method raises) gets one warning naming the keyword and is
ignored: ``instrument()`` and ``AdkOtelPlugin()`` do not raise, the agent
runs, and the first run's spans, invocation span included, are all there."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from google.adk.apps import App
from google.adk.runners import InMemoryRunner

import adk_otel
from adk_otel import AdkOtelPlugin
from adk_otel.testing.model import call, reply

from .agents import clerk
from .harness import APP, assert_clean, drive, shape

INV = f"invocation {APP}"
KEYWORDS = ("tracer_provider", "meter_provider", "logger_provider")


class Raising:
    """Has every provider method; each raises."""

    def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("provider exploded")

    get_meter = get_logger = get_tracer


HOSTILE = {"string": "oops", "no-method": 42, "raising": Raising()}


def _agent() -> Any:
    return clerk(call("lookup", {"sku": "A1"}), reply("3 left"))


def _warnings(caplog: pytest.LogCaptureFixture, keyword: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("adk_otel") and keyword in r.getMessage()
    ]


@pytest.mark.parametrize("path", ["instrument", "plugin-only"])
@pytest.mark.parametrize("hostile", list(HOSTILE))
@pytest.mark.parametrize("keyword", KEYWORDS)
async def test_unusable_provider_is_ignored_with_one_warning(
    keyword: str, hostile: str, path: str, recorder: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # Content as log events, so the logger provider is actually reached for.
    options: dict[str, Any] = {keyword: HOSTILE[hostile], "capture_content": "EVENT_ONLY"}
    if path == "instrument":
        runner = adk_otel.instrument(InMemoryRunner(agent=_agent(), app_name=APP), **options)
    else:
        app = App(name=APP, root_agent=_agent(), plugins=[AdkOtelPlugin(**options)])
        runner = InMemoryRunner(app=app)

    first = await drive(runner)
    second = await drive(runner)

    assert first.error is None and second.error is None
    assert first.events[-1].content.parts[0].text == "3 left"
    assert_clean(recorder, caplog.records)
    tree = [
        (0, INV, "OK", "ok"),
        (1, "invoke_agent clerk", "OK", "ok"),
        (2, "generate_content scripted-model", "OK", "ok"),
        (2, "execute_tool lookup", "OK", "ok"),
        (2, "generate_content scripted-model", "OK", "ok"),
    ]
    assert shape(recorder) == tree + tree
    warned = _warnings(caplog, keyword)
    assert len(warned) == 1, warned
    assert "ignored" in warned[0], warned
    plugin = next(p for p in runner.plugin_manager.plugins if isinstance(p, AdkOtelPlugin))
    assert plugin.internal_errors == 0


def test_a_usable_provider_gets_no_warning(caplog: pytest.LogCaptureFixture) -> None:
    from opentelemetry.sdk.trace import TracerProvider

    caplog.set_level(logging.WARNING)
    AdkOtelPlugin(tracer_provider=TracerProvider())
    assert not [r for r in caplog.records if r.name.startswith("adk_otel")]


@pytest.mark.parametrize("keyword", KEYWORDS)
async def test_an_unusable_provider_given_again_keeps_the_one_in_use(
    keyword: str, recorder: Any, caplog: pytest.LogCaptureFixture
) -> None:
    runner = adk_otel.instrument(InMemoryRunner(agent=_agent(), app_name=APP))
    adk_otel.instrument(runner, **{keyword: Raising()})  # reconfigures the plugin in place

    result = await drive(runner)

    assert result.error is None
    assert_clean(recorder, caplog.records)
    assert [row[1] for row in shape(recorder)][:2] == [INV, "invoke_agent clerk"]
    assert len(_warnings(caplog, keyword)) == 1
