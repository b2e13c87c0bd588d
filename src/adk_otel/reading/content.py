"""Opt-in capture of prompts, outputs, tool arguments and results.

Content is off by default: it is where personal data lives. It is switched on
with the ``capture_content`` keyword or ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
(the variable other GenAI instrumentations read), with their values:

* ``NO_CONTENT`` (or ``false``): nothing is captured;
* ``SPAN_ONLY`` (or ``true``): content as span attributes;
* ``EVENT_ONLY``: content as events: a model call's details event (a log
  record, or a span event: see ``pipeline/details.py``), one span event on other spans;
* ``SPAN_AND_EVENT``: both.

Each value is serialized as the GenAI conventions' JSON, passed through the
``redact(key, value)`` hook (which may rewrite it, or drop it by returning
``None``), then cut to ``content_max_length`` characters
(``ADK_OTEL_CONTENT_MAX_LENGTH``, default 8192). A cut value ends with
:data:`TRUNCATION_MARKER`, so it is no longer valid JSON. Redaction runs first,
so a secret is never half-kept by the cut; a hook that raises drops the value.
Binary data (images, audio) is never captured: a blob part records its MIME
type, modality and size only.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .. import semconv as sc
from .. import settings
from ..settings import CAPTURE_CONTENT, CONTENT_MAX_LENGTH, load
from ..util import sanitize
from ..util.redact import guarded

logger: logging.Logger = guarded(logging.getLogger(__name__))

CAPTURE_ENV = settings.CAPTURE_CONTENT.env[0]
MAX_LENGTH_ENV = settings.CONTENT_MAX_LENGTH.env[0]
DEFAULT_MAX_LENGTH = settings.CONTENT_MAX_LENGTH.default
TRUNCATION_MARKER = sc.CONTENT_TRUNCATION_MARKER

Redactor = settings.Redactor
_warned: set[str] = set()


class CaptureMode(StrEnum):
    """Where captured content goes."""

    NO_CONTENT = "NO_CONTENT"
    SPAN_ONLY = "SPAN_ONLY"
    EVENT_ONLY = "EVENT_ONLY"
    SPAN_AND_EVENT = "SPAN_AND_EVENT"


_ALIASES = {"TRUE": CaptureMode.SPAN_ONLY, "FALSE": CaptureMode.NO_CONTENT}


def _warn_once(message: str, *args: Any) -> None:
    key = message % args
    if key not in _warned:
        _warned.add(key)
        logger.warning(message, *args)


def parse_mode(value: bool | str | CaptureMode | None, source: str) -> CaptureMode:
    """A capture mode from a bool or one of the accepted names (any case)."""
    if value is None:
        return CaptureMode.NO_CONTENT
    if isinstance(value, bool):
        return CaptureMode.SPAN_ONLY if value else CaptureMode.NO_CONTENT
    name = str(value).strip().upper()
    if not name:
        return CaptureMode.NO_CONTENT
    if name in _ALIASES:
        return _ALIASES[name]
    try:
        return CaptureMode(name)
    except ValueError:
        _warn_once(
            "adk-otel: %s=%r is not one of %s (or true/false); content capture stays off",
            source,
            value,
            ", ".join(m.value for m in CaptureMode),
        )
        return CaptureMode.NO_CONTENT


@dataclass(frozen=True)
class ContentSettings:
    """What the user asked for; resolved against the environment by :func:`resolve`."""

    capture: bool | str | None = None
    max_length: int | None = None
    redact: Redactor | None = None


@dataclass(frozen=True, slots=True)
class ContentCapture:
    """An active capture policy (there is none when capture is off)."""

    on_span: bool
    on_event: bool
    max_length: int = DEFAULT_MAX_LENGTH
    redact: Redactor | None = None

    def value(self, key: str, payload: Any) -> str | None:
        """``payload`` as the string recorded under ``key``: serialized,
        redacted, then cut to size; ``None`` when redaction dropped it."""
        text = payload if isinstance(payload, str) else to_json(payload)
        if self.redact is not None:
            try:
                redacted = self.redact(key, text)
            except Exception:
                _warn_once("adk-otel: the redact hook failed on %s; the value is dropped", key)
                return None
            if redacted is None:
                return None
            text = str(redacted)
        return truncate(sanitize.utf8(text), self.max_length)  # escapes count too

    def record(self, ledger: Any, entry: Any, key: str, payload: Any, event_name: str) -> None:
        """Put ``payload`` on ``entry``'s span as ``key`` and/or into the span
        event the ledger emits when the span ends."""
        if payload is None or payload == []:
            return
        text = self.value(key, payload)
        if text is None:
            return
        if self.on_span:
            entry.span.set_attribute(key, text)
            self._openinference(entry, key, payload)
        if self.on_event:
            ledger.add_event_attributes(entry, event_name, {key: text})

    def _openinference(self, entry: Any, key: str, payload: Any) -> None:
        """The same content as OpenInference's ``input.value`` / ``output.value``:
        a message's text as plain text, anything else as JSON, redacted and cut
        as ``key`` is."""
        names = _OPENINFERENCE.get(key)
        if names is None:
            return
        plain = message_text(payload) if key in _MESSAGES else None
        text = self.value(key, plain if plain else payload)
        if text is not None:
            entry.span.set_attribute(names[0], text)
            entry.span.set_attribute(names[1], "text/plain" if plain else "application/json")


_IN = (sc.OI_INPUT_VALUE, sc.OI_INPUT_MIME_TYPE)
_OUT = (sc.OI_OUTPUT_VALUE, sc.OI_OUTPUT_MIME_TYPE)
_OPENINFERENCE = {
    sc.GEN_AI_INPUT_MESSAGES: _IN,
    sc.GEN_AI_OUTPUT_MESSAGES: _OUT,
    sc.GEN_AI_TOOL_CALL_ARGUMENTS: _IN,
    sc.GEN_AI_TOOL_CALL_RESULT: _OUT,
}
_MESSAGES = (sc.GEN_AI_INPUT_MESSAGES, sc.GEN_AI_OUTPUT_MESSAGES)


def message_text(payload: Any) -> str | None:
    """The text parts of GenAI-convention messages, one per line (for a model
    call's input: the last message's), or None when they hold no text."""
    if not isinstance(payload, list) or not payload:
        return None
    if len(payload) > 1 and all(isinstance(m, dict) for m in payload):
        payload = payload[-1:]
    texts = [
        p["content"]
        for m in payload
        if isinstance(m, dict)
        for p in m.get("parts") or ()
        if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("content"), str)
    ]
    return "\n".join(texts) or None


def resolve(settings: ContentSettings) -> ContentCapture | None:
    """The active policy, or ``None`` when content capture is off."""
    asked = settings.capture
    mode = parse_mode(load(CAPTURE_CONTENT, asked, warn=_warn_once), CAPTURE_CONTENT.source(asked))
    if mode is CaptureMode.NO_CONTENT:
        return None
    return ContentCapture(
        on_span=mode in (CaptureMode.SPAN_ONLY, CaptureMode.SPAN_AND_EVENT),
        on_event=mode in (CaptureMode.EVENT_ONLY, CaptureMode.SPAN_AND_EVENT),
        max_length=load(CONTENT_MAX_LENGTH, settings.max_length, warn=_warn_once),
        redact=settings.redact,
    )


def truncate(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the marker included."""
    if len(text) <= limit:
        return text
    if limit <= len(TRUNCATION_MARKER):
        return text[:limit]
    return text[: limit - len(TRUNCATION_MARKER)] + TRUNCATION_MARKER


def to_json(payload: Any) -> str:
    """Compact JSON; what JSON cannot hold is written as its ``str()``."""
    try:
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=_fallback)
    except (TypeError, ValueError):
        return str(payload)


def _fallback(obj: Any) -> Any:
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        try:
            return dump(mode="json", exclude_none=True)
        except Exception:
            pass
    if isinstance(obj, bytes):
        return base64.b64encode(obj).decode("ascii")
    try:
        return str(obj)
    except Exception:  # a value that cannot print itself is named, not dropped with the rest
        return f"<{type(obj).__name__}>"


# -- google.genai content -> GenAI-convention messages -----------------------


def _modality(mime_type: str | None) -> str:
    major = (mime_type or "").split("/", 1)[0]
    return major if major in ("image", "video", "audio") else "document"


def part(p: Any) -> dict[str, Any] | None:
    """One ``google.genai`` Part as a convention message part."""
    text = getattr(p, "text", None)
    if text is not None:
        kind = "reasoning" if getattr(p, "thought", False) else "text"
        return {"type": kind, "content": text}
    call = getattr(p, "function_call", None)
    if call is not None:
        return {
            "type": "tool_call",
            "id": getattr(call, "id", None),
            "name": getattr(call, "name", None),
            "arguments": getattr(call, "args", None),
        }
    response = getattr(p, "function_response", None)
    if response is not None:
        return {
            "type": "tool_call_response",
            "id": getattr(response, "id", None),
            "response": getattr(response, "response", None),
        }
    blob = getattr(p, "inline_data", None)
    if blob is not None:
        mime = getattr(blob, "mime_type", None)
        data = getattr(blob, "data", None) or b""
        return {"type": "blob", "mime_type": mime, "modality": _modality(mime), "size": len(data)}
    file_data = getattr(p, "file_data", None)
    if file_data is not None:
        mime = getattr(file_data, "mime_type", None)
        return {
            "type": "uri",
            "uri": getattr(file_data, "file_uri", None),
            "mime_type": mime,
            "modality": _modality(mime),
        }
    code = getattr(p, "executable_code", None)
    if code is not None:
        return {"type": "executable_code", "content": getattr(code, "code", None)}
    result = getattr(p, "code_execution_result", None)
    if result is not None:
        return {"type": "code_execution_result", "content": getattr(result, "output", None)}
    return None


def parts(content: Any) -> list[dict[str, Any]]:
    return [q for p in getattr(content, "parts", None) or () if (q := part(p)) is not None]


def _role(content: Any, converted: list[dict[str, Any]]) -> str:
    role = getattr(content, "role", None) or "user"
    if role == "model":
        return "assistant"
    if converted and all(p["type"] == "tool_call_response" for p in converted):
        return "tool"
    return role


def messages(contents: Iterable[Any]) -> list[dict[str, Any]]:
    """``google.genai`` Contents as ``gen_ai.input.messages``."""
    out = []
    for content in contents:
        converted = parts(content)
        out.append({"role": _role(content, converted), "parts": converted})
    return out


def output_message(content: Any, finish_reason: str | None) -> list[dict[str, Any]]:
    """A response Content as ``gen_ai.output.messages`` (one candidate)."""
    return [
        {"role": "assistant", "parts": parts(content), "finish_reason": finish_reason or "stop"}
    ]


def system_instructions(instruction: Any) -> list[dict[str, Any]]:
    """A request's system instruction (str, Part, Content or a list) as parts."""
    if instruction is None:
        return []
    if isinstance(instruction, str):
        return [{"type": "text", "content": instruction}] if instruction else []
    if getattr(instruction, "parts", None) is not None:
        return parts(instruction)
    if isinstance(instruction, list | tuple):
        out: list[dict[str, Any]] = []
        for item in instruction:
            out.extend(system_instructions(item))
        return out
    converted = part(instruction)
    return [converted] if converted is not None else []


# -- tool definitions offered to the model ------------------------------------


def tool_definitions(tools: Any) -> list[dict[str, Any]]:
    """A request's ``config.tools`` as ``gen_ai.tool.definitions``: a function
    declaration as ``{"type": "function", "name", "description", "parameters"}``
    (a JSON Schema), a built-in tool (Google Search, code execution, ...) as
    ``{"type": <its field>, "name": <its field>}``, as the conventions record a
    provider's own tools."""
    out: list[dict[str, Any]] = []
    for tool in tools or ():
        declarations = getattr(tool, "function_declarations", None)
        for declaration in declarations or ():
            out.append(_function_definition(declaration))
        dump = getattr(tool, "model_dump", None)
        if callable(dump):
            for field_name in dump(exclude_none=True):
                if field_name != "function_declarations":
                    out.append({"type": field_name, "name": field_name})
        elif callable(tool) and (name := getattr(tool, "__name__", None)):
            out.append({"type": "function", "name": name})
    return out


def _function_definition(declaration: Any) -> dict[str, Any]:
    definition: dict[str, Any] = {"type": "function", "name": getattr(declaration, "name", None)}
    description = getattr(declaration, "description", None)
    if description:
        definition["description"] = description
    schema = getattr(declaration, "parameters_json_schema", None)
    if schema is None:
        parameters = getattr(declaration, "parameters", None)
        dump = getattr(parameters, "model_dump", None)
        if callable(dump):
            schema = _json_schema_types(dump(mode="json", exclude_none=True, by_alias=True))
    if schema is not None:
        definition["parameters"] = schema
    return definition


def _json_schema_types(node: Any) -> Any:
    """google-genai's ``Schema`` dump with JSON Schema's lower-case type names
    (``OBJECT`` -> ``object``)."""
    if isinstance(node, dict):
        return {
            k: v.lower() if k == "type" and isinstance(v, str) else _json_schema_types(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_json_schema_types(v) for v in node]
    return node
