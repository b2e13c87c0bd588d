"""Per-instance safety net around ``Runner.run_async`` / ``run_live``.

ADK gives no terminal hook when the task running an invocation is cancelled,
and treats an early close of its generator as a clean end. The wrapper drives
ADK's generator itself, so it sees both: it tells the plugin that the
consumer is closing early (before ADK runs ``after_run``), closes ADK's
generator at once instead of leaving it to garbage collection, and ends
whatever the run left open with the right outcome.

Only attributes of the runner *instance* handed to ``instrument()`` are
replaced; ADK's classes and modules are never touched. ``Runner.run()`` calls
``self.run_async`` and so is covered too.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncGenerator, Callable
from contextvars import ContextVar
from typing import Any

from .semconv import Outcome

WRAPPED_METHODS = ("run_async", "run_live")
_ORIGINAL = "__adk_otel_original__"

Closer = Callable[[Outcome, str, BaseException | None], None]


class RunWatch:
    """What one wrapped call knows about the runs started under it."""

    __slots__ = ("closers", "closing_early")

    def __init__(self) -> None:
        self.closers: list[Closer] = []
        self.closing_early = False

    def close_remaining(self, outcome: Outcome, reason: str, error: BaseException | None) -> None:
        for closer in reversed(self.closers):
            closer(outcome, reason, error)
        self.closers.clear()


CURRENT_WATCH: ContextVar[RunWatch | None] = ContextVar("adk_otel_run_watch", default=None)
"""Set only while the wrapper is inside ADK's generator, so ``before_run``
can find the watch of the call it belongs to; never left set in the caller."""


async def _watched(inner: AsyncGenerator[Any, None]) -> AsyncGenerator[Any, None]:
    watch = RunWatch()
    outcome, reason, error = Outcome.INCOMPLETE, "no_after_run", None
    try:
        while True:
            token = CURRENT_WATCH.set(watch)
            try:
                event = await inner.__anext__()
            except StopAsyncIteration:
                break
            finally:
                CURRENT_WATCH.reset(token)
            yield event
    except GeneratorExit:
        watch.closing_early = True
        outcome, reason = Outcome.INCOMPLETE, "consumer_closed"
        await inner.aclose()
        raise
    except asyncio.CancelledError:
        outcome, reason = Outcome.CANCELLED, "cancelled"
        raise
    except BaseException as exc:
        outcome, reason, error = Outcome.ERROR, "run_failed", exc
        raise
    finally:
        watch.close_remaining(outcome, reason, error)


def _watching(original: Callable[..., AsyncGenerator[Any, None]]) -> Callable[..., Any]:
    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        return _watched(original(*args, **kwargs))

    setattr(wrapper, _ORIGINAL, original)
    return wrapper


def wrap(runner: Any) -> None:
    """Wrap the runner instance's generator methods (idempotent)."""
    for name in WRAPPED_METHODS:
        original = getattr(runner, name, None)
        if original is None or hasattr(original, _ORIGINAL):
            continue

        setattr(runner, name, _watching(original))


def unwrap(runner: Any) -> None:
    """Undo :func:`wrap` on this instance."""
    for name in WRAPPED_METHODS:
        if hasattr(runner.__dict__.get(name), _ORIGINAL):
            delattr(runner, name)


def is_wrapped(runner: Any) -> bool:
    return hasattr(getattr(runner, "run_async", None), _ORIGINAL)
