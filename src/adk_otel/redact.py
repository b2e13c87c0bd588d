"""Endpoints as they may appear in a message: no credentials, no query.

Collector URLs sometimes carry a token (``https://user:token@host/v1/traces``
or ``?api_key=...``); every message adk-otel prints about an endpoint goes
through :func:`redact_url` first.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

REDACTED = "***"


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
