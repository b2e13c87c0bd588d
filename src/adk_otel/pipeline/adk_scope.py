"""Switching instrumentation scopes off on an SDK provider, for spans and
for metrics alike: ADK's own (``gcp.vertex.agent``), which duplicates
adk-otel's layers, and the A2A SDK's (``a2a-python-sdk``), whose dozens of
internal spans per call bury the agent tree.

The SDK's tracer and meter providers take a *configurator*: a function from
instrumentation scope to that scope's config (experimental API, SDK >= 1.40).
The one installed here disables the named scopes and leaves every other scope
to the configurator that was there before, so an application's own choices
stand. It never raises: a provider that cannot be configured is reported to
the caller as ``False``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Literal

from ..util.redact import guarded

logger: logging.Logger = guarded(logging.getLogger(__name__))


def switch_off(
    provider: Any,
    signal: Literal["tracer", "meter"],
    *,
    scopes: frozenset[str],
    disabled: Any,
    default: Callable[[], Any],
    marker: str,
) -> bool:
    """Disable ``scopes`` on ``provider``. The configurator is installed once
    (``marker`` holds the scopes it disables, so a later call adds to them);
    ``disabled`` is the config for those scopes, ``default()`` the one for any
    scope when no configurator was there before. False when it cannot."""
    switched_off = getattr(provider, marker, None)
    if isinstance(switched_off, set):
        if not scopes <= switched_off:
            switched_off.update(scopes)
            _reapply(provider, signal)
        return True
    switched_off = set(scopes)
    setter = getattr(provider, f"_set_{signal}_configurator", None)
    if setter is None:
        return False
    previous = getattr(provider, f"_{signal}_configurator", None)

    def configurator(scope: Any) -> Any:
        if scope.name in switched_off:
            return disabled
        return previous(scope) if previous is not None else default()

    try:
        setter(**{f"{signal}_configurator": configurator})
    except Exception:
        logger.debug("adk-otel: installing a %s configurator failed", signal, exc_info=True)
        return False
    setattr(provider, marker, switched_off)
    return True


def switch_on(
    provider: Any, signal: Literal["tracer", "meter"], *, scopes: frozenset[str], marker: str
) -> bool:
    """Undo :func:`switch_off` for ``scopes`` on ``provider`` (an explicit
    keep after the default ran); True when any of them was off."""
    switched_off = getattr(provider, marker, None)
    if not isinstance(switched_off, set) or not switched_off & scopes:
        return False
    switched_off.difference_update(scopes)
    _reapply(provider, signal)
    return True


def _reapply(provider: Any, signal: str) -> None:
    """Set the same configurator again: the SDK re-evaluates the config of
    every tracer (meter) it already made only when a configurator is set."""
    try:
        setter = getattr(provider, f"_set_{signal}_configurator")
        setter(**{f"{signal}_configurator": getattr(provider, f"_{signal}_configurator")})
    except Exception:
        logger.debug("adk-otel: re-applying the %s configurator failed", signal, exc_info=True)
