"""ADK's dev UI in a real browser for a ``Workflow`` app (``adk web
--extra_plugins adk_otel.AdkOtelPlugin``): the run's node spans in its Traces
tab. A module of its own: one browser at a time (Playwright's sync API), and
test_dev_ui_browser.py holds its page open for the whole of its module."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import expect

from .servers import WORKFLOW
from .test_dev_ui_browser import TIMEOUT_MS, dev_ui_after_one_run


def test_a_workflow_apps_run_in_the_dev_ui(tmp_path: Path) -> None:
    """A Workflow app: its Traces tab shows the run with the workflow's nodes,
    the application's span inside the function node, and the agent node's
    model call."""
    with dev_ui_after_one_run(tmp_path, WORKFLOW) as page:
        page.get_by_text("Traces", exact=True).first.click()
        labels = page.locator(".trace-label")
        expect(labels.filter(has_text="application work")).to_be_visible(timeout=TIMEOUT_MS)
        names = [n.strip() for n in labels.all_inner_texts()]
    names = [n for n in names if not n.startswith(("fastapi.", "POST "))]
    # The UI labels a node span by the node's name.
    layers = ["prepare", "application", "clerk", "generate_content"]
    assert [n.split(" ")[0] for n in names][-4:] == layers, names
