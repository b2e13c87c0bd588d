"""Remote agents (``RemoteA2aAgent``): the caller's trace goes with every request.

ADK gives each remote agent a public extension point, the request
interceptors of its ``A2aRemoteAgentConfig``. adk-otel adds one interceptor
(the same object everywhere, so adding it twice is a no-op) to every remote
agent of a traced run's agent tree:

* ``before_request`` puts the calling agent's trace context into the A2A
  request metadata (``traceparent``/``tracestate`` keys). ADK's A2A executor
  on the serving side hands that metadata to the served run, whose invocation
  span then continues the caller's trace.
* ``after_request`` reads the remote task's id and state onto the calling
  agent's span, and marks it an error when the task failed or was rejected
  (ADK turns a failed remote task into an event, not an exception, so no
  error hook fires for it).

A remote agent built with ``a2a_request_meta_provider`` has its metadata
replaced by that provider after the interceptors ran; wrap the provider with
:func:`with_trace_context` to keep both.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from ..util.redact import guarded
from .propagation import inject

logger: logging.Logger = guarded(logging.getLogger(__name__))

_hinted: set[int] = set()


async def _before_request(ctx: Any, request: Any, parameters: Any) -> tuple[Any, Any]:
    try:
        carrier = inject()
        if carrier:
            metadata = dict(getattr(parameters, "request_metadata", None) or {})
            metadata.update(carrier)
            parameters.request_metadata = metadata
    except Exception:
        logger.debug("adk-otel: adding trace context to an A2A request failed", exc_info=True)
    return request, parameters


async def _after_request(ctx: Any, response: Any, event: Any) -> Any:
    try:
        for plugin in _plugins(ctx):
            plugin.remote_response(ctx, response)
    except Exception:
        logger.debug("adk-otel: reading an A2A response failed", exc_info=True)
    return event  # None would drop the event: never


RESPONSE_SINK = "receives_a2a_responses"
"""Class attribute marking a plugin that takes ``remote_response(ctx, response)``
(adk-otel's plugin sets it): found by marker, so this module needs no import
of the plugin, which imports this one."""


def _plugins(ctx: Any) -> list[Any]:
    manager = getattr(ctx, "plugin_manager", None)
    return [p for p in getattr(manager, "plugins", ()) if getattr(type(p), RESPONSE_SINK, False)]


@functools.cache
def trace_context_interceptor() -> Any:
    """The request interceptor adk-otel adds to remote agents, for an
    ``A2aRemoteAgentConfig(request_interceptors=[...])`` of your own (adding
    it yourself is optional: ``instrument()`` does it)."""
    from google.adk.a2a.agent.config import RequestInterceptor

    return RequestInterceptor(before_request=_before_request, after_request=_after_request)


def _is_ours(interceptor: Any) -> bool:
    """adk-otel's interceptor, or a copy of it (a deep-copied or unpickled
    agent's: the copy holds the same functions, see docs/deploy.md)."""
    return getattr(interceptor, "before_request", None) is _before_request


def propagate_from(agents: list[Any]) -> None:
    """Add the interceptor to each remote agent's config (once each). Never raises."""
    for agent in agents:
        try:
            _add_interceptor(agent)
        except Exception:
            logger.debug("adk-otel: cannot trace remote agent %r", agent, exc_info=True)


def _add_interceptor(agent: Any) -> None:
    config = getattr(agent, "_config", None)
    if config is None or not hasattr(config, "request_interceptors"):
        logger.info(
            "adk-otel: remote agent %r has no request interceptors in this ADK release; "
            "its calls will not carry the trace",
            getattr(agent, "name", agent),
        )
        return
    interceptor = trace_context_interceptor()
    interceptors = config.request_interceptors or []
    if not any(_is_ours(i) for i in interceptors):
        # First in the list: before_request then runs before the caller's own
        # interceptors, which may add to the metadata but rarely replace it.
        config.request_interceptors = [interceptor, *interceptors]
    if getattr(agent, "_a2a_request_meta_provider", None) is not None and id(agent) not in _hinted:
        _hinted.add(id(agent))
        logger.warning(
            "adk-otel: remote agent %r replaces the A2A request metadata with its "
            "a2a_request_meta_provider, which drops the trace context; wrap the provider "
            "with adk_otel.a2a.with_trace_context(...) to keep one trace",
            getattr(agent, "name", agent),
        )


def with_trace_context(
    provider: Callable[[Any, Any], dict[str, Any]],
) -> Callable[[Any, Any], dict[str, Any]]:
    """An ``a2a_request_meta_provider`` that returns ``provider``'s metadata
    plus the current trace context."""
    return _WithTraceContext(provider)


class _WithTraceContext:
    """:func:`with_trace_context`'s provider: an object, not a closure, so a
    remote agent that carries it still pickles (docs/deploy.md)."""

    def __init__(self, provider: Callable[[Any, Any], dict[str, Any]]) -> None:
        self._provider = provider
        functools.update_wrapper(self, provider)

    def __call__(self, ctx: Any, message: Any) -> dict[str, Any]:
        metadata = dict(self._provider(ctx, message) or {})
        metadata.update(inject())
        return metadata
