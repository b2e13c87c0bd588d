"""Per-instance safety net around ``Runner.run_async`` / ``run_live``.

ADK gives no terminal hook when the task running an invocation is cancelled,
and treats an early close of its generator as a clean end. The wrapper drives
ADK's generator itself, so it sees both: it tells the plugin that the
consumer is closing early (before ADK runs ``after_run``), closes ADK's
generator at once instead of leaving it to garbage collection (held in
``contextlib.aclosing``, as ADK holds every generator it iterates, but closed
in the run's own context), and ends whatever the run left open with the right
outcome.

Only attributes of the runner *instance* handed to ``instrument()`` are
replaced (with ``wrapt`` function wrappers); ADK's classes and modules are
never touched. ``Runner.run()`` calls ``self.run_async`` and so is covered too.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import types
from collections.abc import AsyncGenerator, Callable, Generator
from contextvars import ContextVar
from typing import Any, Protocol

import wrapt

from ..semconv import Outcome
from ..util.redact import guarded
from .aborts import abort_reason

logger: logging.Logger = guarded(logging.getLogger(__name__))

WRAPPED_METHODS = ("run_async", "run_live")
_MARK = "_self_adk_otel_watch"
"""Set on adk-otel's wrappers (wrapt keeps ``_self_`` attributes on the proxy)."""


class Closer(Protocol):
    """Ends what one run left open, as the wrapped call saw it stop."""

    def __call__(self, outcome: Outcome, *, reason: str, error: BaseException | None) -> None: ...


class RunWatch:
    """What one wrapped call knows about the runs started under it."""

    __slots__ = ("closers", "closing_early", "finished")

    def __init__(self) -> None:
        self.closers: list[Closer] = []
        self.closing_early: bool = False
        self.finished: bool = False
        """Set once ADK's generator is done: closers then end, not conclude."""

    def close_remaining(
        self, outcome: Outcome, *, reason: str, error: BaseException | None = None
    ) -> None:
        """End the runs still open; never raises (it runs in a ``finally``
        where an exception would replace the user's own)."""
        self.finished = True
        closers, self.closers = self.closers, []
        for closer in reversed(closers):
            try:
                closer(outcome, reason=reason, error=error)
            except Exception:
                logger.warning("adk-otel: closing a run failed", exc_info=True)


CURRENT_WATCH: ContextVar[RunWatch | None] = ContextVar("adk_otel_run_watch", default=None)
"""Set in the run's private context only, so ``before_run`` can find the
watch of the call it belongs to."""


@types.coroutine
def _in_context(context: contextvars.Context, awaitable: Any) -> Generator[Any, Any, Any]:
    """Await ``awaitable`` with each of its steps run inside ``context``.

    ADK's generator is driven here, so every context change ADK makes (its own
    span attaches, anything else) lives in the run's private context: nothing
    ever leaks into the caller's, and closing the generator from another task
    (asyncio finalising a dropped generator) still detaches against the
    context that attached — no "Failed to detach context" on any ADK release.
    """
    step = awaitable.__await__()
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            if error is None:
                suspended = context.run(step.send, value)
            else:
                suspended = context.run(step.throw, error)
        except StopIteration as stop:
            return stop.value
        try:
            value, error = (yield suspended), None
        except GeneratorExit:
            context.run(step.close)
            raise
        except BaseException as exc:  # cancellation included: ADK handles it in context
            value, error = None, exc


class _ClosingInContext(contextlib.aclosing[AsyncGenerator[Any, None]]):
    """``contextlib.aclosing`` whose close runs in the run's own context.

    ADK holds every async generator it iterates in ``contextlib.aclosing`` (its
    own tests check it), so that no generator is left suspended for the
    garbage collector to close in some other context. This is that guarantee
    for ADK's generator, with one difference: ``aclose()`` runs inside the
    run's private context, where ADK attached its spans and context, so what
    ADK detaches on close is detached in the context that attached it.
    """

    def __init__(self, generator: AsyncGenerator[Any, None], context: contextvars.Context) -> None:
        super().__init__(generator)
        self._generator = generator
        self._context = context

    async def __aexit__(self, *exc_info: object) -> None:
        # A no-op once the generator is exhausted or closed.
        await _in_context(self._context, self._generator.aclose())


async def _watched(inner: AsyncGenerator[Any, None]) -> AsyncGenerator[Any, None]:
    watch = RunWatch()
    context = contextvars.copy_context()
    context.run(CURRENT_WATCH.set, watch)
    outcome, reason, error = Outcome.INCOMPLETE, "no_after_run", None
    try:
        # ADK's generator is closed when this block is left, however that
        # happens (an exception thrown in at the yield included): the outcome
        # is decided first, so the plugin knows it while ADK's close runs
        # ``after_run``.
        async with _ClosingInContext(inner, context) as events:
            try:
                while True:
                    try:
                        event = await _in_context(context, events.__anext__())
                    except StopAsyncIteration:
                        break
                    yield event
            except GeneratorExit:
                watch.closing_early = True
                outcome, reason = Outcome.INCOMPLETE, "consumer_closed"
                raise
            except BaseException as exc:  # re-raised unchanged, whatever it is
                aborted = abort_reason(exc)
                if aborted is not None:
                    outcome, reason = Outcome.CANCELLED, aborted
                else:
                    outcome, reason, error = Outcome.ERROR, "run_failed", exc
                raise
    finally:
        watch.close_remaining(outcome, reason=reason, error=error)


def _watch_call(
    wrapped: Callable[..., AsyncGenerator[Any, None]],
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> AsyncGenerator[Any, None]:
    return _watched(wrapped(*args, **kwargs))


def _is_ours(method: Any) -> bool:
    return isinstance(method, wrapt.FunctionWrapper) and getattr(method, _MARK, False)


def wrap(runner: Any) -> None:
    """Wrap the runner instance's generator methods (idempotent): a ``wrapt``
    function wrapper set on the instance, so ``__wrapped__``, the signature
    and the docstring stay the original's and ADK's classes are untouched."""
    for name in WRAPPED_METHODS:
        original = getattr(runner, name, None)
        if original is None or _is_ours(original):
            continue
        wrapper = wrapt.FunctionWrapper(original, _watch_call)
        setattr(wrapper, _MARK, True)
        setattr(runner, name, wrapper)


def unwrap(runner: Any) -> None:
    """Undo :func:`wrap` on this instance."""
    for name in WRAPPED_METHODS:
        if _is_ours(runner.__dict__.get(name)):
            delattr(runner, name)


def is_wrapped(runner: Any) -> bool:
    return _is_ours(getattr(runner, "run_async", None))
