"""Captured content read back: GenAI-convention JSON as ``google.genai`` JSON.

Content capture writes messages, tool arguments and results as the GenAI
conventions' JSON (docs/telemetry.md#content-capture), on the span or, in
the EVENT modes, in its ``adk.content`` event. An eval case needs them as
``google.genai`` ``Content``, ``FunctionCall`` and ``FunctionResponse`` JSON.
What capture cannot give back (binary data, a value cut to
``content_max_length``, a value the redact hook replaced by something that is
not JSON) is never guessed at: it is kept as captured and named in a note for
the person who reviews the case. Redacted text stays redacted, since only the
redacted form was ever recorded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ... import semconv as sc
from ..io.model import SpanRecord


@dataclass(frozen=True)
class Captured:
    """One captured value: ``value`` is the parsed JSON when ``parsed``, else
    the text as recorded; ``truncated`` when it was cut to the maximum length."""

    value: Any
    parsed: bool
    truncated: bool


def captured(record: SpanRecord, key: str) -> Captured | None:
    """The value captured under ``key`` on the span or in its content event;
    None when it was not captured (capture off, or dropped by the redact hook)."""
    raw = record.attributes.get(key)
    if raw is None:
        for event in record.events:
            if event.name == sc.ADK_CONTENT_EVENT and key in event.attributes:
                raw = event.attributes[key]
                break
    if raw is None:
        return None
    if not isinstance(raw, str):
        return Captured(value=raw, parsed=True, truncated=False)
    if raw.endswith(sc.CONTENT_TRUNCATION_MARKER):
        return Captured(value=raw, parsed=False, truncated=True)
    try:
        return Captured(value=json.loads(raw), parsed=True, truncated=False)
    except (ValueError, RecursionError):
        return Captured(value=raw, parsed=False, truncated=False)


@dataclass(frozen=True)
class Content:
    """A ``google.genai`` ``Content`` as JSON, and what could not be carried over."""

    json: dict[str, Any]
    lost: tuple[str, ...] = ()


def content(value: Captured, role: str) -> Content:
    """The parts of captured messages (the last message's, as the invocation
    span records one) as one ``Content`` of ``role``. A value that is not the
    conventions' JSON (redacted whole, or cut) becomes one text part, as recorded."""
    messages = value.value if value.parsed else None
    if isinstance(messages, list) and messages and isinstance(messages[-1], Mapping):
        parts, lost = [], []
        for part in messages[-1].get("parts") or ():
            converted = genai_part(part)
            if converted is None:
                lost.append(_describe(part))
            else:
                parts.append(converted)
        return Content({"role": role, "parts": parts}, tuple(lost))
    text = value.value if isinstance(value.value, str) else json.dumps(value.value)
    return Content({"role": role, "parts": [{"text": text}]})


def genai_part(part: Any) -> dict[str, Any] | None:
    """One convention message part as a ``google.genai`` ``Part``; None for what
    a trace holds only the outline of (a blob: its type and size, never its data)."""
    if not isinstance(part, Mapping):
        return None
    kind = part.get("type")
    if kind in ("text", "reasoning") and isinstance(part.get("content"), str):
        text: dict[str, Any] = {"text": part["content"]}
        return {**text, "thought": True} if kind == "reasoning" else text
    if kind == "tool_call" and isinstance(part.get("name"), str):
        return {"function_call": function_call(part.get("id"), part["name"], part.get("arguments"))}
    if kind == "tool_call_response":
        response = {"id": part.get("id"), "response": as_response(part.get("response"))}
        return {"function_response": _without_none(response)}
    if kind == "uri" and isinstance(part.get("uri"), str):
        uri = {"file_uri": part["uri"], "mime_type": part.get("mime_type")}
        return {"file_data": _without_none(uri)}
    if kind == "executable_code" and isinstance(part.get("content"), str):
        return {"executable_code": {"code": part["content"], "language": "PYTHON"}}
    if kind == "code_execution_result" and isinstance(part.get("content"), str):
        return {"code_execution_result": {"outcome": "OUTCOME_OK", "output": part["content"]}}
    return None


def function_call(call_id: Any, name: str, arguments: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name}
    if isinstance(call_id, str) and call_id:
        call["id"] = call_id
    if isinstance(arguments, Mapping):
        call["args"] = dict(arguments)
    return call


def as_response(result: Any) -> dict[str, Any]:
    """A tool's result as a ``FunctionResponse.response``: an object as it is,
    anything else under ``result``, as ADK wraps a function tool's return value."""
    return dict(result) if isinstance(result, Mapping) else {"result": result}


def _describe(part: Any) -> str:
    if isinstance(part, Mapping) and part.get("type") == "blob":
        mime = part.get("mime_type") or "binary"
        return f"a {mime} part of {part.get('size', '?')} bytes (traces never hold binary data)"
    kind = part.get("type") if isinstance(part, Mapping) else None
    return f"a part of type {kind!r} that has no google.genai form here"


def _without_none(mapping: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in mapping.items() if value is not None}
