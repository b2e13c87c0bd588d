"""ADK's dev UI (``adk web``) drawn from adk-otel's spans.

ADK's web server keeps the spans it is sent in memory and its bundled UI
builds the Traces tab and each event's trace from them: a span joins an event
by ``gcp.vertex.agent.event_id`` (model and tool spans), an invocation by
``gcp.vertex.agent.invocation_id``, and the UI rejects the whole session's
trace when a ``generate_content`` span lacks either. ADK writes those on its
own spans; with ADK's spans off (the default) adk-otel writes them on its own,
and only where ADK's server installed its in-memory span exporters, so no
other export carries them.

The id of the event a model call or tool call produced is made by ADK after
the call, and reaches a plugin only with that event (``on_event_callback``).
A model or tool span is concluded at its after hook (outcome decided, still
open: see ``Ledger.conclude``) and normally ends at that same event; under
the dev server it is also held here, so the event's id is written on it
first, and when its agent or run ends without the event it is settled then
with the outcome its hooks decided.

Request and response panes: ADK 2.13's server attaches its own in-memory
inference records to adk-otel's model spans, so they show without any
content on adk-otel's spans. Older servers (2.5) read the request and
response from span attributes (``gcp.vertex.agent.llm_request`` /
``llm_response``): they are written only when adk-otel's content capture on
spans is on, so content never reaches an export unasked.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from opentelemetry.util.types import AttributeValue

from ..ledger.spans import Entry
from ..reading.content import ContentCapture
from ..util.redact import guarded

logger: logging.Logger = guarded(logging.getLogger(__name__))

EVENT_ID = "gcp.vertex.agent.event_id"
INVOCATION_ID = "gcp.vertex.agent.invocation_id"
LLM_REQUEST = "gcp.vertex.agent.llm_request"
LLM_RESPONSE = "gcp.vertex.agent.llm_response"
_DEV_EXPORTER = ("google.adk.cli.api_server", "ApiServerSpanExporter")


def served(provider: Any) -> bool:
    """Whether ADK's web server reads spans from ``provider``: its per-event
    span exporter is among the provider's span processors."""
    active = getattr(provider, "_active_span_processor", None)
    for processor in getattr(active, "_span_processors", ()):
        exporter = getattr(processor, "span_exporter", None)
        kind = type(exporter)
        if (kind.__module__, kind.__name__) == _DEV_EXPORTER:
            return True
    return False


_Held = tuple[Entry, Callable[[], None]]
_Key = tuple[str, str | None]
"""An invocation id and what a held span is found by within it."""


class DevUi:
    """The dev UI's attributes, and the model and tool spans waiting for
    their event's id."""

    def __init__(self, annotate: Callable[[Entry, str, AttributeValue], None]) -> None:
        self._annotate = annotate
        """Writes an attribute of adk-otel's own (``Ledger.annotate``): kept at
        the span's end where ADK 2.5's late tool telemetry is dropped."""
        self._models: dict[_Key, _Held] = {}
        """(invocation id, agent name) -> a model span and how it ends."""
        self._tools: dict[_Key, _Held] = {}
        """(invocation id, function call id) -> a tool span and how it ends (a
        tool call without an id is held until its run ends)."""

    def model_request(
        self, entry: Entry, invocation_id: str, llm_request: Any, content: ContentCapture | None
    ) -> None:
        entry.span.set_attribute(INVOCATION_ID, invocation_id)
        if content is not None and content.on_span:
            _set(entry, content, LLM_REQUEST, _request, llm_request)

    def hold_model(
        self,
        entry: Entry,
        invocation_id: str,
        agent_name: str,
        llm_response: Any,
        content: ContentCapture | None,
        end: Callable[[], None],
    ) -> None:
        """Keep the model span open until its response event arrives."""
        if content is not None and content.on_span:
            _set(entry, content, LLM_RESPONSE, _response, llm_response)
        earlier = self._models.pop((invocation_id, agent_name), None)
        if earlier is not None:
            earlier[1]()  # its event never came
        self._models[(invocation_id, agent_name)] = (entry, end)

    def hold_tool(
        self, entry: Entry, invocation_id: str, call_id: str | None, end: Callable[[], None]
    ) -> None:
        """Keep the tool span open until the event with its response arrives."""
        self._tools[(invocation_id, call_id)] = (entry, end)

    def on_event(self, event: Any) -> None:
        """The event a held span produced: its id on the span, then the end."""
        if getattr(event, "partial", False) or not (self._models or self._tools):
            return
        event_id = getattr(event, "id", None)
        invocation_id = getattr(event, "invocation_id", None) or ""
        responses = event.get_function_responses()
        if responses:
            for response in responses:
                self._release(self._tools.pop((invocation_id, response.id or ""), None), event_id)
        else:
            key = (invocation_id, getattr(event, "author", None) or "")
            self._release(self._models.pop(key, None), event_id)

    def release_under(self, parent: Entry | None) -> None:
        """End the held spans under ``parent`` (ending, or None: all), with
        the outcome their hooks decided, without an event id."""
        for held in (self._models, self._tools):
            for key, (entry, _) in list(held.items()):
                if parent is None or _under(entry, parent):
                    self._release(held.pop(key, None), None)

    def _release(self, held: _Held | None, event_id: str | None) -> None:
        if held is None:
            return
        entry, end = held
        try:
            if event_id:
                self._annotate(entry, EVENT_ID, event_id)
        finally:
            end()


def _under(entry: Entry, parent: Entry) -> bool:
    node = entry.parent
    while node is not None:
        if node is parent:
            return True
        node = node.parent
    return False


def _set(
    entry: Entry, content: ContentCapture, key: str, build: Callable[[Any], Any], source: Any
) -> None:
    """``build(source)`` as ``key``, redacted and cut as all content is."""
    try:
        text = content.value(key, build(source))
    except Exception:
        logger.debug("adk-otel: the dev UI's %s could not be built", key, exc_info=True)
        return
    if text is not None:
        entry.span.set_attribute(key, text)


def _request(llm_request: Any) -> dict[str, Any]:
    """The request as ADK's own spans recorded it (model, config, contents),
    inline bytes left out."""
    config = getattr(llm_request, "config", None)
    contents = []
    for content in getattr(llm_request, "contents", None) or ():
        parts = [p for p in content.parts or () if getattr(p, "inline_data", None) is None]
        contents.append(
            content.model_copy(update={"parts": parts}).model_dump(mode="json", exclude_none=True)
        )
    return {
        "model": getattr(llm_request, "model", None),
        "config": config.model_dump(
            mode="json", exclude_none=True, exclude={"response_schema", "http_options"}
        )
        if config is not None
        else {},
        "contents": contents,
    }


def _response(llm_response: Any) -> Any:
    dump = getattr(llm_response, "model_dump", None)
    return dump(mode="json", exclude_none=True) if callable(dump) else llm_response
