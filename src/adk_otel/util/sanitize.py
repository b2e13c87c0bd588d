"""Text adk-otel writes is valid UTF-8 and bounded, whatever it came from.

Span names, attribute values, status descriptions and exception events are
built from user objects: agent and tool names, model responses, exception
messages. One of them can be anything: an exception whose ``__str__`` raises,
a file name decoded with lone surrogates (``os.fsdecode(b"report-\\xff.csv")``),
a 1 MB message. The OTLP encoder cannot encode a lone surrogate (it drops such
an attribute, and fails the whole batch for a name or a description), and a
collector refuses an oversized request. So every string goes through here:

* :func:`text` never raises: ``str()``, else ``repr()``, else the type's name;
* characters UTF-8 cannot carry are written as backslash escapes (``\\udcff``),
  so the value stays readable and the span stays encodable;
* strings longer than the limit are cut, saying how much was cut.

Limits (characters): ``ADK_OTEL_MAX_TEXT_LENGTH`` (default 4096) for names,
attribute values, descriptions and exception messages;
``ADK_OTEL_MAX_STACKTRACE_LENGTH`` (default 16384) for exception stack traces,
which keep their beginning and their end. Captured content has its own limit
(``ADK_OTEL_CONTENT_MAX_LENGTH``) and is made valid UTF-8 here as well.
"""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Mapping

from opentelemetry.util.types import AttributeValue

from .. import settings
from .redact import guarded

logger: logging.Logger = guarded(logging.getLogger(__name__))

TEXT_LENGTH = settings.load(settings.MAX_TEXT_LENGTH, warn=logger.warning)
STACKTRACE_LENGTH = settings.load(settings.MAX_STACKTRACE_LENGTH, warn=logger.warning)


def utf8(value: str) -> str:
    """``value`` with every character UTF-8 cannot encode (lone surrogates)
    written as a backslash escape; the same object when it needs nothing."""
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def cut(value: str, limit: int) -> str:
    """``value`` cut to at most ``limit`` characters, the marker saying how
    many were cut included (a limit too small for the marker cuts bare)."""
    if len(value) <= limit:
        return value
    keep = limit
    while keep > 0:
        marker = f"...[{len(value) - keep} characters cut]"
        if keep + len(marker) <= limit:
            return value[:keep] + marker
        keep = min(keep - 1, limit - len(marker))
    return value[:limit]


def clean(value: str, limit: int = TEXT_LENGTH) -> str:
    """A string as adk-otel writes it: valid UTF-8, at most ``limit`` long
    (escaped first, so the escapes count too)."""
    if len(value) > limit or not value.isascii():
        value = utf8(value)
        if len(value) > limit:
            value = cut(value, limit)
    return value


def text(value: object, limit: int = TEXT_LENGTH) -> str:
    """``str(value)`` made safe to write; never raises."""
    try:
        raw = value if isinstance(value, str) else str(value)
    except Exception:
        try:
            raw = repr(value)
        except Exception:
            raw = f"<unprintable {type_name(value)}>"
    if not isinstance(raw, str):  # a __str__ returning a str subclass or worse
        raw = f"<unprintable {type_name(value)}>"
    return clean(raw, limit)


def type_name(value: object) -> str:
    try:
        return clean(type(value).__qualname__, 256)
    except Exception:
        return "object"


def attribute(value: AttributeValue) -> AttributeValue:
    """An attribute value with its strings cleaned."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, list | tuple):
        return [clean(v) if isinstance(v, str) else v for v in value]
    return value


def attributes(values: Mapping[str, AttributeValue] | None) -> Mapping[str, AttributeValue] | None:
    """Attribute values cleaned; the same mapping, not a copy, when all are
    clean (the common case, checked with as few calls as possible: this runs
    for every span). Keys are adk-otel's own names and are left as they are."""
    if not values:
        return values
    limit = TEXT_LENGTH
    for value in values.values():
        kind = value.__class__
        if kind is str:
            if value.isascii() and len(value) <= limit:  # type: ignore[union-attr, arg-type]
                continue
        elif kind is list or kind is tuple:
            if _clean_sequence(value, limit):  # type: ignore[arg-type]
                continue
        else:
            continue  # bool, int, float
        return {key: attribute(value) for key, value in values.items()}
    return values


def _clean_sequence(values: list[object] | tuple[object, ...], limit: int) -> bool:
    """Whether every string in a sequence value is short plain ASCII already
    (a model's finish reasons, stop sequences): then it is kept as it is."""
    for item in values:
        if item.__class__ is str:
            if not (item.isascii() and len(item) <= limit):
                return False
        elif isinstance(item, str):
            return False  # a str subclass: cleaned by attribute(), as before the fast path
    return True


def description(error: BaseException) -> str:
    """A status description for ``error``: ``Type: message``, safe to write."""
    message = text(error, sys.maxsize)  # cut once, below, so the count is right
    name = type_name(error)
    return clean(f"{name}: {message}") if message else name


def stacktrace(error: BaseException) -> str:
    """The formatted traceback of ``error``, keeping its beginning and end
    within ``ADK_OTEL_MAX_STACKTRACE_LENGTH``; never raises."""
    try:
        formatted = "".join(traceback.format_exception(error))
    except Exception:
        formatted = f"{type_name(error)} (its traceback could not be formatted)"
    formatted = utf8(formatted)
    limit = STACKTRACE_LENGTH
    if len(formatted) <= limit:
        return formatted
    # The marker counts toward the limit: keep what is left, half at each end.
    marker_room = len(f"\n...[{len(formatted)} characters cut]...\n")
    if limit <= marker_room:
        return formatted[:limit]
    head = (limit - marker_room) // 2
    tail = limit - marker_room - head
    skipped = len(formatted) - head - tail
    end = formatted[len(formatted) - tail :]
    return f"{formatted[:head]}\n...[{skipped} characters cut]...\n{end}"
