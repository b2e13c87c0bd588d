"""What kind of failure: an exception, a tool result or an event -> a category.

An operator's first question about a failed span is what to do: wait and
retry, fix configuration, fix the prompt or a tool's schema, or nothing. So
every span that ends ERROR carries ``adk.error.category`` from one closed set
(:class:`Category`, documented in docs/failures.md), ``adk.error.retryable``
where that is knowable, and, when the provider's error says so,
``http.response.status_code`` and ``adk.error.retry_after`` (seconds).

Only failure paths call this module; a success costs nothing. Provider
libraries' error classes are recognised by name (module and class name along
the MRO), never imported. Nothing here raises: whatever an exception or a
result does when read, the answer falls back to the layer's default category.

Failures reported as results are failures too: ADK's documented tool error
result (``{"status": "error", "error_message": ...}``), ADK's own
argument-check results, MCP ``isError`` and ADK's ``{"error": "MCP tool
execution failed: ..."}``. ``ADK_OTEL_RESULT_FAILURES=false`` (or
``result_failures=False``) switches that detection off. An application's
``error_classifier(subject, layer)`` is asked first; it returns a category of
its own or ``None`` for the built-in rules, and can never break a run.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from opentelemetry.util.types import AttributeValue

from .. import semconv as sc
from .. import settings
from ..util import sanitize
from ..util.redact import guarded
from .attributes import mcp_tool_error

logger: logging.Logger = guarded(logging.getLogger(__name__))


ErrorClassifier = settings.ErrorClassifier


class Category(StrEnum):
    """The value of ``adk.error.category`` (see docs/failures.md)."""

    RATE_LIMITED = "rate_limited"
    AUTH = "auth"
    INVALID_REQUEST = "invalid_request"
    PROVIDER_UNAVAILABLE = "provider_unavailable"
    TIMEOUT = "timeout"
    CONNECTION = "connection"
    CONTENT_BLOCKED = "content_blocked"
    TOOL_NOT_FOUND = "tool_not_found"
    TOOL_INVALID_ARGS = "tool_invalid_args"
    TOOL_EXCEPTION = "tool_exception"
    TOOL_REPORTED_ERROR = "tool_reported_error"
    LIMIT_EXCEEDED = "limit_exceeded"
    REMOTE_FAILED = "remote_failed"
    OTHER = "other"


_RETRYABLE: dict[str, bool] = {
    Category.RATE_LIMITED: True,
    Category.PROVIDER_UNAVAILABLE: True,
    Category.TIMEOUT: True,
    Category.CONNECTION: True,
    Category.AUTH: False,
    Category.INVALID_REQUEST: False,
    Category.CONTENT_BLOCKED: False,
    Category.TOOL_NOT_FOUND: False,
    Category.TOOL_INVALID_ARGS: False,
    Category.LIMIT_EXCEEDED: False,
}

_MAX_CATEGORY = 64


@dataclass(frozen=True, slots=True)
class Failure:
    """One failure's classification; ``attributes`` is what its span gets."""

    category: str
    retryable: bool | None = None
    status_code: int | None = None
    retry_after: float | None = None
    message: str | None = None
    """For a failure reported without an exception: the span's status description."""

    @property
    def attributes(self) -> dict[str, AttributeValue]:
        # A plain str: the SDK refuses str subclasses (an enum) in sequences.
        out: dict[str, AttributeValue] = {sc.ADK_ERROR_CATEGORY: str(self.category)}
        if self.retryable is not None:
            out[sc.ADK_ERROR_RETRYABLE] = self.retryable
        if self.status_code is not None:
            out[sc.HTTP_RESPONSE_STATUS_CODE] = self.status_code
        if self.retry_after is not None:
            out[sc.ADK_ERROR_RETRY_AFTER] = self.retry_after
        return out


OTHER = Failure(Category.OTHER)


# -- exceptions ----------------------------------------------------------------

# Class names (anywhere in the MRO) -> category, checked in this order.
_BY_NAME: tuple[tuple[str, str], ...] = (
    ("LlmCallsLimitExceededError", Category.LIMIT_EXCEEDED),
    ("RateLimitError", Category.RATE_LIMITED),  # openai, anthropic, litellm
    ("_ResourceExhaustedError", Category.RATE_LIMITED),  # ADK's Gemini 429
    ("ResourceExhausted", Category.RATE_LIMITED),  # google.api_core
    ("AuthenticationError", Category.AUTH),
    ("PermissionDeniedError", Category.AUTH),
    ("ContextWindowExceededError", Category.INVALID_REQUEST),  # litellm
    ("BadRequestError", Category.INVALID_REQUEST),
    ("NotFoundError", Category.INVALID_REQUEST),
    ("UnprocessableEntityError", Category.INVALID_REQUEST),
    ("ContentPolicyViolationError", Category.CONTENT_BLOCKED),  # litellm
    ("OverloadedError", Category.PROVIDER_UNAVAILABLE),  # anthropic 529
    ("ServiceUnavailableError", Category.PROVIDER_UNAVAILABLE),
    ("InternalServerError", Category.PROVIDER_UNAVAILABLE),
    ("APITimeoutError", Category.TIMEOUT),  # openai, anthropic
    ("Timeout", Category.TIMEOUT),  # litellm, requests
    ("TimeoutException", Category.TIMEOUT),  # httpx
    ("ServerTimeoutError", Category.TIMEOUT),  # aiohttp
    ("TimeoutError", Category.TIMEOUT),  # builtins, asyncio
    ("APIConnectionError", Category.CONNECTION),  # openai, anthropic, litellm
    ("ConnectError", Category.CONNECTION),  # httpx
    ("NetworkError", Category.CONNECTION),  # httpx
    ("RemoteProtocolError", Category.CONNECTION),  # httpx: the peer broke off
    ("ClientConnectionError", Category.CONNECTION),  # aiohttp
    ("ServerDisconnectedError", Category.CONNECTION),  # aiohttp
    ("ConnectionError", Category.CONNECTION),  # builtins, requests
    ("SSLError", Category.CONNECTION),
    ("gaierror", Category.CONNECTION),  # DNS
    ("ValidationError", Category.TOOL_INVALID_ARGS),  # pydantic (tools only)
    ("A2AClientTimeoutError", Category.TIMEOUT),  # a2a-sdk
)
# Named errors whose message tells the transport failure (a2a-sdk's client).
_BY_TEXT = frozenset({"A2AClientError", "A2AClientHTTPError", "A2AClientJSONError"})
_CHAIN_DEPTH = 5
_CATEGORY_BY_NAME = dict(_BY_NAME)
_NAME_ORDER = {name: i for i, (name, _) in enumerate(_BY_NAME)}
_TOOL_NOT_FOUND = re.compile(r"^Tool '.*' not found\.", re.DOTALL)


def classify_exception(error: BaseException, layer: str) -> Failure:
    """The failure an exception stands for at ``layer``. Never raises."""
    try:
        return _classify_exception(error, layer)
    except Exception:
        return _layer_default(layer)


def _layer_default(layer: str) -> Failure:
    return Failure(Category.TOOL_EXCEPTION) if layer == sc.SpanKind.TOOL else OTHER


def _classify_exception(error: BaseException, layer: str) -> Failure:
    status = _status_code(error)
    by_name = _category_by_name(error)
    if by_name is None and status is None:
        # Raised while handling another error (ADK wrapping or tripping over
        # the original): the first cause that names a failure decides.
        cause, depth = error.__cause__ or error.__context__, 0
        while cause is not None and depth < _CHAIN_DEPTH and by_name is None:
            by_name, status = _category_by_name(cause), _status_code(cause)
            if by_name is None and status is not None:
                by_name = _category_by_status(status)
            if by_name is None and _BY_TEXT.intersection(k.__name__ for k in type(cause).__mro__):
                by_name = _category_by_text(_text(cause)) or Category.CONNECTION
            cause, depth = cause.__cause__ or cause.__context__, depth + 1
    if (
        by_name is None
        and status is None
        and _BY_TEXT.intersection(k.__name__ for k in type(error).__mro__)
    ):
        by_name = _category_by_text(_text(error)) or Category.CONNECTION
    if by_name == Category.TOOL_INVALID_ARGS and layer != sc.SpanKind.TOOL:
        by_name = None
    if by_name is None and isinstance(error, ValueError) and _TOOL_NOT_FOUND.match(_text(error)):
        by_name = Category.TOOL_NOT_FOUND
    category = by_name or (_category_by_status(status) if status is not None else None)
    retry_after = _retry_after(error) if category == Category.RATE_LIMITED or status else None
    if layer == sc.SpanKind.TOOL and category not in (
        Category.TOOL_NOT_FOUND,
        Category.TOOL_INVALID_ARGS,
    ):
        # The tool raised: what it ran into (a 503 from its backend) says
        # whether a retry may help, but the failure is the tool's.
        retryable = _RETRYABLE.get(category) if category is not None else None
        return Failure(Category.TOOL_EXCEPTION, retryable, status, retry_after)
    if category is None:
        return Failure(Category.OTHER, None, status, retry_after)
    return Failure(category, _RETRYABLE.get(category), status, retry_after)


def _category_by_name(error: BaseException) -> str | None:
    best: tuple[int, str] | None = None
    for cls in type(error).__mro__:
        name = cls.__name__
        found = _CATEGORY_BY_NAME.get(name)
        if found is not None:
            rank = _NAME_ORDER[name]
            if best is None or rank < best[0]:
                best = (rank, found)
    return best[1] if best is not None else None


def _category_by_status(status: int) -> str | None:
    if status == 429:
        return Category.RATE_LIMITED
    if status in (401, 403, 407):
        return Category.AUTH
    if status in (408, 504):
        return Category.TIMEOUT
    if 400 <= status < 500:
        return Category.INVALID_REQUEST
    if 500 <= status < 600:
        return Category.PROVIDER_UNAVAILABLE
    return None


def _http_status(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
        return int(value)
    return None


def _status_code(error: BaseException) -> int | None:
    """The HTTP status an error carries: google-genai ``code``, openai /
    anthropic / litellm ``status_code``, aiohttp ``status``, httpx and
    requests ``response.status_code``."""
    for attribute in ("status_code", "code", "status"):
        found = _http_status(getattr(error, attribute, None))
        if found is not None:
            return found
    response = getattr(error, "response", None)
    if response is not None:
        for attribute in ("status_code", "status"):
            found = _http_status(getattr(response, attribute, None))
            if found is not None:
                return found
    return None


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def _retry_after(error: BaseException) -> float | None:
    """Seconds the provider asked to wait: a ``Retry-After`` header (seconds),
    or google.rpc ``RetryInfo.retryDelay`` in the error's details."""
    response = getattr(error, "response", None)
    # The HTTP response's headers; LiteLLM keeps the provider's apart.
    for headers in (
        getattr(error, "litellm_response_headers", None),
        getattr(response, "headers", None),
    ):
        if headers is None:
            continue
        try:
            value = headers.get("retry-after") or headers.get("Retry-After")
        except Exception:
            value = None
        seconds = _seconds(value)
        if seconds is not None:
            return seconds
    details = getattr(error, "details", None)
    if isinstance(details, Mapping):
        inner = details.get("error", details)
        items = inner.get("details") if isinstance(inner, Mapping) else None
        for item in items if isinstance(items, list) else ():
            if isinstance(item, Mapping) and str(item.get("@type", "")).endswith("RetryInfo"):
                match = _DURATION.match(str(item.get("retryDelay", "")))
                if match:
                    return _seconds(match.group(1))
    return None


def _seconds(value: Any) -> float | None:
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _text(value: Any) -> str:
    return sanitize.text(value)


# -- results and responses -------------------------------------------------------

_ARGUMENT_CHECKS = (
    "failed as the following mandatory input parameters are not present",
    "failed due to argument validation errors",
)
_MCP_FAILED = "MCP tool execution failed: "
_MCP_UNEXPECTED = "Unexpected error during MCP tool execution: "


def classify_result(tool: Any, result: Any, mcp_error: str | None) -> Failure | None:
    """The failure a tool result reports, else None. ``mcp_error`` is the text
    of an MCP result marked ``isError`` (attributes.mcp_tool_error). Never raises."""
    try:
        return _classify_result(result, mcp_error)
    except Exception:
        return None


def _classify_result(result: Any, mcp_error: str | None) -> Failure | None:
    if mcp_error is not None:
        return Failure(Category.TOOL_REPORTED_ERROR, message=mcp_error)
    if type(result) is not dict:
        return None
    status = result.get("status")
    if isinstance(status, str) and status.lower() == "error":
        message = result.get("error_message", result.get("error"))
        return Failure(Category.TOOL_REPORTED_ERROR, message=_text(message) if message else None)
    error = result.get("error")
    if not isinstance(error, str):
        return None
    if error.startswith("Invoking `") and any(check in error for check in _ARGUMENT_CHECKS):
        return Failure(Category.TOOL_INVALID_ARGS, False, message=error)
    if error.startswith(_MCP_FAILED):
        category = _category_by_text(error) or Category.TOOL_REPORTED_ERROR
        return Failure(category, _RETRYABLE.get(category), message=error)
    if error.startswith(_MCP_UNEXPECTED):
        return Failure(Category.TOOL_EXCEPTION, message=error)
    return None


_BROKEN_OFF = ("connect", "closed", "broken pipe", "stream ended", "reset by peer")


def _category_by_text(text: str) -> str | None:
    lowered = text.lower()
    if "timed out" in lowered or "timeout" in lowered:
        return Category.TIMEOUT
    if any(word in lowered for word in _BROKEN_OFF):
        return Category.CONNECTION
    return None


_BLOCKED = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "MODEL_ARMOR",
        "JAILBREAK",
        "content_filter",  # openai / litellm finish reason
    }
)


def classify_response_error(error_code: Any) -> Failure:
    """A model response ADK turned into an error code (finish reason or a
    prompt's block reason), not an exception."""
    code = str(error_code).rsplit(".", 1)[-1] if error_code is not None else ""
    if code in _BLOCKED or code.upper() in _BLOCKED:
        return Failure(Category.CONTENT_BLOCKED, False)
    return OTHER


_ERROR_ID = re.compile(r"\(error_id: ([0-9A-Za-z_-]{1,64})\)")


def remote_error_id(message: Any) -> str | None:
    """The correlation id a serving side put in a failure it sent without the
    exception's text (``Agent execution failed. (error_id: ...)``): the key to
    its log entry, where the exception was written in full."""
    found = _ERROR_ID.search(message) if isinstance(message, str) else None
    return found.group(1) if found else None


def classify_remote_event(message: Any, custom_metadata: Any) -> Failure:
    """An error event a remote (A2A) agent yielded instead of raising: a
    transport category for a request that failed or broke off, else
    ``remote_failed``."""
    try:
        text = _text(message)
        if text.startswith("Remote A2A task failed"):
            return Failure(Category.REMOTE_FAILED, message=text)
        status: int | None = None
        if isinstance(custom_metadata, Mapping):
            raw = custom_metadata.get("a2a:status_code")
            status = _http_status(int(raw)) if isinstance(raw, str) and raw.isdigit() else None
        category = _category_by_status(status) if status is not None else None
        if category is None and "stream ended before task" in text:
            category = Category.CONNECTION
        if category is None and text.startswith("A2A request failed"):
            category = _category_by_text(text) or Category.CONNECTION
        if category is None and text.startswith("Failed to initialize remote A2A agent"):
            # The agent card could not be fetched (or the client not built).
            category = _category_by_text(text)
        if category is None and text.startswith("Failed to authenticate remote A2A agent"):
            category = Category.AUTH
        if category is None:
            category = Category.REMOTE_FAILED
        return Failure(category, _RETRYABLE.get(category), status, message=text)
    except Exception:
        return Failure(Category.REMOTE_FAILED)


# -- the application's own classifier ----------------------------------------------

_reported: set[str] = set()


def ask_classifier(classifier: ErrorClassifier | None, subject: Any, layer: str) -> str | None:
    """The application classifier's category for ``subject``, cleaned; None
    when there is none, it declines, raises or answers something unusable
    (then the built-in rules decide; the problem is logged once per kind)."""
    if classifier is None:
        return None
    try:
        found = classifier(subject, layer)
    except Exception as exc:
        _report("raised", exc)
        return None
    if found is None:
        return None
    if isinstance(found, StrEnum):
        found = found.value
    if type(found) is not str or not found.strip():
        _report("returned something other than a category name (a non-empty str)")
        return None
    return sanitize.clean(found.strip(), _MAX_CATEGORY)


CLASSIFIER_SIGNATURE = (
    "error_classifier(subject, layer) -> str | None, where subject is the exception or the "
    "tool result, layer 'invocation', 'agent', 'model' or 'tool', and the answer a category "
    "name or None for the built-in categories"
)


def _report(what: str, exc: Exception | None = None) -> None:
    """Logs a classifier problem once per kind, with the exception (in the
    message too, for logs that drop tracebacks) and what is expected."""
    if what in _reported:
        return
    _reported.add(what)
    if exc is not None:
        what = f"{what} {sanitize.description(exc)}"
    logger.warning(
        "adk-otel: error_classifier %s; using the built-in categories. Expected: %s",
        what,
        CLASSIFIER_SIGNATURE,
        exc_info=exc,
    )


def with_category(failure: Failure, category: str | None) -> Failure:
    """``failure`` under the application's ``category`` (its retryability is
    then unknown unless the category is a built-in one)."""
    if category is None or category == failure.category:
        return failure
    return Failure(
        category,
        _RETRYABLE.get(category),
        failure.status_code,
        failure.retry_after,
        failure.message,
    )


# -- what the plugin calls -----------------------------------------------------------


def classify(
    error: BaseException,
    layer: str,
    seen: dict[int, tuple[BaseException, Failure]] | None,
    classifier: ErrorClassifier | None,
) -> Failure:
    """``error``'s failure at ``layer``: as already classified in ``seen`` (a
    run's exceptions by id, each kept alive there), else the application's
    classifier, else the built-in rules; recorded in ``seen``."""
    if seen is not None and (found := seen.get(id(error))) is not None:
        return found[1]
    failure = with_category(
        classify_exception(error, layer), ask_classifier(classifier, error, layer)
    )
    if seen is not None:
        seen[id(error)] = (error, failure)
    return failure


def tool_result_failure(
    tool: Any, result: Any, classifier: ErrorClassifier | None, enabled: bool
) -> Failure | None:
    """The failure a tool's result reports, else None: the application's
    classifier first, then (when ``enabled``) the built-in result shapes."""
    if classifier is not None:
        category = ask_classifier(classifier, result, sc.SpanKind.TOOL)
        if category is not None:
            found = classify_result(tool, result, mcp_tool_error(tool, result))
            return with_category(found or Failure(category), category)
    if not enabled or type(result) is not dict:
        return None
    if "isError" in result or "is_error" in result:
        return classify_result(tool, result, mcp_tool_error(tool, result))
    if "error" in result or "status" in result:
        return classify_result(tool, result, None)
    return None
