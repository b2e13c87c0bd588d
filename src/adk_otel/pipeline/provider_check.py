"""Provider keywords adk-otel cannot use are ignored, with one warning each.

``tracer_provider=``, ``meter_provider=`` and ``logger_provider=`` are tried
once when given (the one call adk-otel makes on each: ``get_tracer``,
``get_meter``, ``get_logger`` with its own scope). A value that fails it (a
string, an object without the method, one whose method raises) would
otherwise fail in the middle of the first run and cost it spans; it is
reported, naming the keyword, and the default is used instead.
"""

from __future__ import annotations

import logging
from typing import Any

from ..semconv import INSTRUMENTATION_SCOPE
from ..util.redact import guarded
from ..version import __version__

logger: logging.Logger = guarded(logging.getLogger(__name__))

_METHOD = {
    "tracer_provider": "get_tracer",
    "meter_provider": "get_meter",
    "logger_provider": "get_logger",
}
_DEFAULT = {
    "tracer_provider": "the global tracer provider (else one built from OTEL_*)",
    "meter_provider": "the global meter provider",
    "logger_provider": "the global logger provider",
}


def usable(keyword: str, provider: Any) -> Any:
    """``provider`` if adk-otel can use it for ``keyword``, else None (warned)."""
    if provider is None:
        return None
    try:
        getattr(provider, _METHOD[keyword])(INSTRUMENTATION_SCOPE, __version__)
    except Exception as exc:
        try:
            why = f"{type(exc).__name__}: {exc}"[:300]
        except Exception:
            why = type(exc).__name__
        logger.warning(
            "adk-otel: %s= got a %s that cannot be used (%s); it is ignored and %s is used",
            keyword,
            type(provider).__name__,
            why,
            _DEFAULT[keyword],
        )
        return None
    return provider
