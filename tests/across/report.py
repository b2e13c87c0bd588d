"""What a calling process reports after its run (caller.py, mcp_caller.py)."""

from __future__ import annotations

from typing import Any

from opentelemetry import trace

import adk_otel


def after_run(runner: Any, report: dict[str, object]) -> dict[str, object]:
    """``report`` plus the plugin's open spans and internal errors, and whether
    a span was left current in the caller's context."""
    plugin = adk_otel.plugin_of(runner)
    report["open_spans"] = plugin.open_spans if plugin else None
    report["internal_errors"] = plugin.internal_errors if plugin else None
    report["current_span_left"] = trace.get_current_span().get_span_context().is_valid
    return report
