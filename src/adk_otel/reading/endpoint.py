"""Where a model client sends its requests: ``server.address`` / ``server.port``
from a base URL, and the default base URLs the model SDKs fall back to.

Pure functions of strings and the environment; reading ADK's model objects
is ``attributes``'s job.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from .. import settings

Endpoint = tuple[str, int]

_DEFAULT_PORTS = {"https": 443, "wss": 443, "http": 80, "ws": 80}
_GEMINI_API = "https://generativelanguage.googleapis.com/"
_ANTHROPIC_API = "https://api.anthropic.com"
# google-genai's multi-regional Vertex AI locations (aiplatform.{loc}.rep.googleapis.com).
_MULTI_REGIONAL = frozenset({"us", "eu"})


def from_url(url: Any) -> Endpoint | None:
    """``(host, port)`` of an absolute http(s)/ws(s) URL, the port the scheme
    implies when none is written; ``None`` for anything else (never raises)."""
    if url is None:
        return None
    try:
        parts = urlsplit((url if isinstance(url, str) else str(url)).strip())
        host, port, scheme = parts.hostname, parts.port, parts.scheme.lower()
    except Exception:  # a port out of range or not a number, a hostile __str__
        return None
    default = _DEFAULT_PORTS.get(scheme)
    if not host or default is None:
        return None
    return host, port if port is not None else default


_gemini_base_url = settings.reader(settings.GOOGLE_GEMINI_BASE_URL)
_vertex_base_url = settings.reader(settings.GOOGLE_VERTEX_BASE_URL)
_cloud_location = settings.reader(settings.GOOGLE_CLOUD_LOCATION)
_anthropic_base_url = settings.reader(settings.ANTHROPIC_BASE_URL)


def gemini_url(*, vertex: bool, location: str | None) -> str:
    """The base URL google-genai picks when none is configured on the client
    (``GOOGLE_GEMINI_BASE_URL`` / ``GOOGLE_VERTEX_BASE_URL``, else its defaults)."""
    if not vertex:
        return _gemini_base_url() or _GEMINI_API
    custom = _vertex_base_url()
    if custom:
        return custom
    location = location or _cloud_location()
    if not location or location == "global":
        return "https://aiplatform.googleapis.com/"
    if location in _MULTI_REGIONAL:
        return f"https://aiplatform.{location}.rep.googleapis.com/"
    return f"https://{location}-aiplatform.googleapis.com/"


def anthropic_url() -> str:
    """The base URL the anthropic SDK's client takes from the environment."""
    return _anthropic_base_url() or _ANTHROPIC_API
