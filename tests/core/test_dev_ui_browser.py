"""ADK's dev UI in a real browser: ``adk web --extra_plugins
adk_otel.AdkOtelPlugin``, a message sent from the page, then the Traces tab
and a model event's request and response, as a developer sees them.

Needs Chromium (the system's, driven by Playwright; no browser download).
CI installs it and sets ``ADK_OTEL_REQUIRE_BROWSER=1``, so there the test
never skips; elsewhere it skips only when no Chromium is found."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from adk_otel.testing.receiver import OtlpReceiver

from .servers import AGENT, serving

ADK_VERSION = tuple(int(p) for p in version("google-adk").split(".")[:2])
CONTENT = (
    {} if ADK_VERSION >= (2, 13) else {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
)
"""ADK 2.13's dev server shows requests and responses from its own in-memory
records; 2.5's reads them from span attributes, written with content capture on."""

CHROMIUM = os.environ.get("ADK_OTEL_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 60_000

if not Path(CHROMIUM).exists() and os.environ.get("ADK_OTEL_REQUIRE_BROWSER") != "1":
    pytest.skip("no Chromium here (CI installs it)", allow_module_level=True)


@contextmanager
def dev_ui_after_one_run(root: Path, agent: str = AGENT) -> Iterator[Page]:
    """The dev UI of ``adk web`` serving ``agent`` with the plugin, after one
    run sent from the page."""
    with (
        OtlpReceiver() as receiver,
        serving("web", root, receiver, agent, **CONTENT) as server,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(f"{server.url}/dev-ui/?app=shop")
            consent = page.get_by_text("No Thanks")  # ADK 2.13 asks once about usage data
            box = page.get_by_placeholder("Type a message...")
            expect(consent.or_(box).first).to_be_visible(timeout=TIMEOUT_MS)
            if consent.is_visible():
                consent.click()
            box.fill("hi")
            box.press("Enter")
            expect(page.get_by_text("ok", exact=True).first).to_be_visible(timeout=TIMEOUT_MS)
            yield page
        finally:
            browser.close()
        assert "Failed to detach context" not in "".join(server.log)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Iterator[Page]:
    with dev_ui_after_one_run(tmp_path_factory.mktemp("web")) as page:
        yield page


def test_the_traces_tab_shows_the_run(page: Page) -> None:
    page.get_by_text("Traces", exact=True).first.click()
    labels = page.locator(".trace-label")
    expect(labels.filter(has_text="lookup")).to_be_visible(timeout=TIMEOUT_MS)
    names = [n.strip() for n in labels.all_inner_texts()]
    names = [n for n in names if not n.startswith(("fastapi.", "POST "))]  # FastAPI's own
    # One row per layer: (invocation, the root, which ADK 2.5's UI leaves out)
    # > agent > model, tool, model; nothing of ADK's own.
    layers = ["clerk", "generate_content", "lookup", "generate_content"]
    assert [n.split(" ")[0] for n in names] in (layers, ["invocation", *layers]), names
    assert "Total latency: 0us" not in page.content()


def test_a_model_events_request_and_response(page: Page) -> None:
    page.get_by_text("Traces", exact=True).first.click()
    page.get_by_text("generate_content sc", exact=False).first.click()
    # The span's panel links its event: the model call that asked for the tool.
    page.locator("text=/^[0-9a-f]{8}-[0-9a-f]{4}-/").first.click()
    page.get_by_text("input", exact=True).first.click()  # the Request pane
    expect(page.get_by_text('"Stock for a SKU."').first).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.get_by_text('"hi"').first).to_be_visible(timeout=TIMEOUT_MS)
    page.get_by_text("output", exact=True).first.click()  # the Response pane
    expect(page.get_by_text('"lookup"').first).to_be_visible(timeout=TIMEOUT_MS)
