"""Text as it may appear in a message: no credentials.

Collector URLs sometimes carry a token (``https://user:token@host/v1/traces``
or ``?api_key=...``) and ``OTEL_EXPORTER_OTLP_HEADERS`` usually does. Every
text adk-otel prints or logs goes through :func:`redact_text` (its loggers
carry :data:`REDACTING`), including what it quotes from other libraries:
an exporter's error text repeats the URL it failed on, query string and all.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote, urlsplit, urlunsplit

from .. import settings

REDACTED = "***"
MIN_SECRET_LENGTH = 4
"""Shorter configured values are not masked inside other text (a header value
``1`` would mask every digit); they are still masked inside URLs."""

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]+")
# What is left once URLs are masked: a path's query (``url: /v1/traces?token=x``)
# and a userinfo written without a scheme (``user:token@host``).
_QUERY = re.compile(r"(?<=[\w/.\-])\?[^\s'\"<>`)]+")
_USERINFO = re.compile(r"[\w.~%!$&*+;=\-]+:[^\s/@'\"<>`]+@(?=[\w\[])")


def redact_url(value: str) -> str:
    """``value`` with its userinfo and query (and fragment) masked; anything
    that does not parse as a URL is returned with everything after an ``@``
    masked, so no credential slips through a malformed value."""
    try:
        parts = urlsplit(value)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return f"{REDACTED}@{REDACTED}" if "@" in value else value
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{host}" + (f":{port}" if port is not None else "")
    query = REDACTED if parts.query else ""
    fragment = REDACTED if parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def redact_text(text: str) -> str:
    """``text`` with every URL's userinfo and query masked, a bare path's query
    and a ``user:secret@`` too, and every configured credential (OTLP header
    values, the endpoints' userinfo and query values) wherever it appears."""
    try:
        text = _URL.sub(lambda m: redact_url(m.group(0)), text)
        text = _QUERY.sub("?" + REDACTED, text)
        text = _USERINFO.sub(REDACTED + "@", text)
        for secret in sorted(_configured_secrets(), key=len, reverse=True):
            text = text.replace(secret, REDACTED)
    except Exception:  # never let a message carry a secret because masking failed
        return "(message withheld: it could not be checked for credentials)"
    return text


def _configured_secrets() -> set[str]:
    """Header values and endpoint credentials from the environment, as written
    and URL-decoded (the exporters decode them)."""
    found: set[str] = set()
    headers = (settings.TRACES_HEADERS, settings.METRICS_HEADERS, settings.LOGS_HEADERS)
    for listed in (value for setting in headers for value in settings.every_value(setting)):
        for entry in listed.split(","):
            _, sep, value = entry.partition("=")
            if sep:
                found.add(value.strip())
    endpoints = (settings.TRACES_ENDPOINT, settings.METRICS_ENDPOINT, settings.LOGS_ENDPOINT)
    for value in (value for setting in endpoints for value in settings.every_value(setting)):
        try:
            parts = urlsplit(value.strip())
        except ValueError:
            continue
        userinfo, at, _ = parts.netloc.rpartition("@")
        if at:  # the password, or a token standing alone ("https://TOKEN@host")
            found.add(userinfo.partition(":")[2] or userinfo)
        for pair in (parts.query + "&" + parts.fragment).split("&"):
            found.add(pair.partition("=")[2] or pair)
    found |= {unquote(value) for value in found}
    found |= {value.split()[-1] for value in found if " " in value.strip()}  # "Bearer <token>"
    return {value for value in found if len(value) >= MIN_SECRET_LENGTH}


class _Redacting(logging.Filter):
    """Rewrites a record's message (and traceback text) through :func:`redact_text`."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            record.msg, record.args = redact_text(record.getMessage()), None
            if record.exc_info and not record.exc_text:
                record.exc_text = redact_text(logging.Formatter().formatException(record.exc_info))
        except Exception:
            record.msg, record.args = "adk-otel: (a message that could not be formatted)", None
        return True


REDACTING = _Redacting()


def guarded(logger: logging.Logger) -> logging.Logger:
    """``logger`` with :data:`REDACTING` on it: what it logs is redacted."""
    if REDACTING not in logger.filters:
        logger.addFilter(REDACTING)
    return logger


# The settings module sits below this one (every module reads settings), so its
# logger, which names the variables a bad value came from, is guarded from here:
# anything of the runtime imports this module before it resolves a setting.
guarded(settings.logger)
