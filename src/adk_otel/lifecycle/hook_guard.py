"""ADK hooks that never raise into ADK.

A failure inside adk-otel must never break or alter an agent run: each hook
runs its work inside ``try`` and hands any exception to :meth:`HookGuard.failed`,
which counts it (the plugin's ``internal_errors``) and logs the first one of
each hook with its traceback; the hook then returns ``None`` as if nothing
happened. The ``try`` is written in each hook rather than in a decorator: a
wrapper would repack every call's keyword arguments and add a call per hook,
and hooks run several times per span.
"""

from __future__ import annotations

import contextlib
import logging

from ..util.redact import guarded

# The logger name docs/operations.md gives users to filter on.
logger: logging.Logger = guarded(logging.getLogger("adk_otel.hook_guard"))


class HookGuard:
    """One plugin's hook failures: counted always, logged once per hook."""

    __slots__ = ("_logged", "failures")

    def __init__(self) -> None:
        self.failures: int = 0
        self._logged: set[str] = set()

    def failed(self, hook: str) -> None:
        """Call from the ``except`` block of hook ``hook``; never raises."""
        self.failures += 1
        if hook in self._logged:
            return
        self._logged.add(hook)
        # A logging set-up that raises must not turn a counted failure into the run's.
        with contextlib.suppress(Exception):
            logger.warning("adk-otel: %s failed; tracing continues", hook, exc_info=True)
