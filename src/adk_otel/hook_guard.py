"""ADK hooks that never raise into ADK.

A failure inside adk-otel must never break or alter an agent run: a guarded
hook logs its first failure (with the traceback), counts every one on the
plugin (``internal_errors``) and returns ``None`` as if nothing happened.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from .redact import guarded

logger: logging.Logger = guarded(logging.getLogger(__name__))

HookFn = Callable[..., Coroutine[Any, Any, None]]
"""What ADK calls: a coroutine function taking keyword arguments."""


class CountsFailures(Protocol):
    """The object a hook belongs to: where its failures are counted."""

    _hook_failures: int


def never_raises(hook: Callable[..., None]) -> HookFn:
    """The ADK hook (a coroutine function) for a plain method that does the
    work: instrumentation failures are logged once per hook, never raised.
    The work itself never awaits, so it needs no coroutine of its own (one
    fewer per hook call: hooks run several times per span)."""
    reported = False

    @functools.wraps(hook)
    async def guarded_hook(self: CountsFailures, **kwargs: Any) -> None:
        nonlocal reported
        try:
            hook(self, **kwargs)
        except Exception:
            self._hook_failures += 1
            if not reported:
                reported = True
                logger.warning(
                    "adk-otel: %s failed; tracing continues", hook.__name__, exc_info=True
                )
        return None

    return guarded_hook
