"""adk-otel's own settings from environment variables: one parser per kind.

A bad value never raises: it is reported through the caller's ``warn``
(so each message keeps its logger, and its once-only policy where the caller
has one), naming the variable, and the default is used.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

Warn = Callable[..., Any]
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def flag(name: str, warn: Warn) -> bool | None:
    """A boolean variable; ``None`` when unset, or set to something else (reported)."""
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    warn("adk-otel: %s=%r is not a boolean; ignoring it", name, value)
    return None


def positive_int(name: str, default: int, warn: Warn, maximum: int | None = None) -> int:
    """A positive integer variable, at most ``maximum``; ``default`` when
    unset, or out of range (reported)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0 or (maximum is not None and value > maximum):
        limit = f"an integer from 1 to {maximum}" if maximum is not None else "a positive integer"
        warn("adk-otel: %s=%r is not %s; using %d", name, raw[:64], limit, default)
        return default
    return value
