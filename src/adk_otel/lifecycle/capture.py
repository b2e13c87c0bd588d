"""Content capture wired to the hooks (off by default; the policy is reading/content.py).

The plugin holds a :class:`Capture` only while capture is on, so with it off
no hook does any content work. Each value is built only for a span that
records, and a failure to build or write one is logged and dropped: content
is never worth a hook.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from .. import semconv as sc
from ..ledger.spans import Entry
from ..ledger.telemetry import TelemetryLedger
from ..reading import attributes as attrs
from ..reading.content import ContentCapture
from ..util.redact import guarded
from .runs import Run

logger: logging.Logger = guarded(logging.getLogger(__name__))


class Capture:
    """The active content policy and the ledger whose span events carry it."""

    __slots__ = ("content", "ledger")

    def __init__(self, content: ContentCapture, ledger: TelemetryLedger) -> None:
        self.content: ContentCapture = content
        self.ledger: TelemetryLedger = ledger

    def put(
        self,
        entry: Entry,
        key: str,
        build: Callable[[Any], Any],
        source: Any,
        event: str = sc.ADK_CONTENT_EVENT,
    ) -> None:
        """Record ``build(source)`` as ``key``; built only for a recorded span."""
        if not entry.span.is_recording():
            return
        try:
            self.content.record(self.ledger, entry, key, build(source), event)
        except Exception:
            logger.debug("adk-otel: content capture failed for %s", key, exc_info=True)

    def model_request(self, entry: Entry, llm_request: Any) -> None:
        """A model call's input: messages, system instructions, tool definitions."""
        event = sc.GEN_AI_INFERENCE_DETAILS_EVENT
        self.put(entry, sc.GEN_AI_INPUT_MESSAGES, attrs.model_input_messages, llm_request, event)
        self.put(
            entry,
            sc.GEN_AI_SYSTEM_INSTRUCTIONS,
            attrs.model_system_instructions,
            llm_request,
            event,
        )
        self.put(
            entry, sc.GEN_AI_TOOL_DEFINITIONS, attrs.model_tool_definitions, llm_request, event
        )

    def model_response(self, entry: Entry, llm_response: Any) -> None:
        """A model call's output messages."""
        event = sc.GEN_AI_INFERENCE_DETAILS_EVENT
        self.put(entry, sc.GEN_AI_OUTPUT_MESSAGES, attrs.model_output_messages, llm_response, event)

    def final_response(self, run: Run | None, event: Any) -> None:
        """An event's final response, on its run's span and on the span of
        the agent that wrote it; a model call's details wait for the tool
        calls the event links (pipeline/details.py)."""
        if run is not None and not run.entry.ended:
            self.put(run.entry, sc.GEN_AI_OUTPUT_MESSAGES, attrs.final_output_messages, event)
        agent = run.innermost_agent(getattr(event, "author", None)) if run is not None else None
        if agent is not None:
            self.put(agent, sc.GEN_AI_OUTPUT_MESSAGES, attrs.final_output_messages, event)
        log = self.ledger.details
        if log is not None and not getattr(event, "partial", False):
            calls = attrs.function_call_ids(event)
            if calls:
                log.link(
                    getattr(event, "invocation_id", None), getattr(event, "author", None), calls
                )


def for_content(content: ContentCapture | None, ledger: TelemetryLedger) -> Capture | None:
    """The capture the hooks use: None while content capture is off."""
    return Capture(content, ledger) if content is not None else None


def same(value: Any) -> Any:
    """The value as it is (a tool's arguments and result are content already)."""
    return value
