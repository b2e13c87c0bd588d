"""Switching ADK's own instrumentation scope (``gcp.vertex.agent``) off on an
SDK provider, for spans and for metrics alike.

The SDK's tracer and meter providers take a *configurator*: a function from
instrumentation scope to that scope's config (experimental API, SDK >= 1.40).
The one installed here disables ADK's scope and leaves every other scope to
the configurator that was there before, so an application's own choices
stand. It never raises: a provider that cannot be configured is reported to
the caller as ``False``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Literal

from .semconv import ADK_SCOPE

logger = logging.getLogger(__name__)


def switch_off(
    provider: Any,
    signal: Literal["tracer", "meter"],
    *,
    disabled: Any,
    default: Callable[[], Any],
    marker: str,
) -> bool:
    """Disable ADK's scope on ``provider`` (once: ``marker`` remembers it).
    ``disabled`` is the config for ADK's scope, ``default()`` the one for any
    scope when no configurator was there before. False when it cannot."""
    if getattr(provider, marker, False):
        return True
    setter = getattr(provider, f"_set_{signal}_configurator", None)
    if setter is None:
        return False
    previous = getattr(provider, f"_{signal}_configurator", None)

    def configurator(scope: Any) -> Any:
        if scope.name == ADK_SCOPE:
            return disabled
        return previous(scope) if previous is not None else default()

    try:
        setter(**{f"{signal}_configurator": configurator})
    except Exception:
        logger.debug("adk-otel: installing a %s configurator failed", signal, exc_info=True)
        return False
    setattr(provider, marker, True)
    return True
