"""Aborts are outcomes, not errors.

Cancellation, ``KeyboardInterrupt`` and ``SystemExit`` stop a run from the
outside: nothing in the agent failed. Every layer they end (tool, model,
agent, invocation) gets the same outcome, ``cancelled`` with UNSET status, and
``adk.close_reason`` says which it was; the exception itself always
propagates to the caller unchanged.
"""

from __future__ import annotations

import asyncio

_REASONS: tuple[tuple[type[BaseException], str], ...] = (
    (asyncio.CancelledError, "cancelled"),
    (KeyboardInterrupt, "keyboard_interrupt"),
    (SystemExit, "system_exit"),
)


def abort_reason(error: BaseException | None) -> str | None:
    """``adk.close_reason`` for an exception that aborts a run, else None."""
    if error is None:
        return None
    for kind, reason in _REASONS:
        if isinstance(error, kind):
            return reason
    return None
