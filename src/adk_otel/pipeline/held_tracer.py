"""The tracer ADK already holds, answered for in place.

ADK takes its tracer once, when its telemetry module is imported
(``google.adk.telemetry.tracing.tracer``, imported by name everywhere else in
ADK). When a tracer provider was set before that import (OpenTelemetry's
zero-code agent, Phoenix's ``register()``, Langfuse, logfire, an application's
"telemetry first" module), that tracer is the provider's own object, handed
out before adk-otel existed: routing the provider's tracer cache afterwards
(``provider.py``) answers only later look-ups, and ADK's workflow nodes would
get no spans in adk-otel's tree.

So adk-otel answers for the tracer *object* ADK holds, whatever it is (the
SDK's ``Tracer``, the API's ``ProxyTracer``, logfire's proxy, or the tracer
inside a wrapper such as OpenInference's ``OITracer``, which Phoenix's provider
puts around every tracer: ``util/wrappers.py`` sees through them): that one
object becomes an instance of a subclass of its own class whose ``start_span``
/ ``start_as_current_span`` ask the tracer registered for ADK's scope
(``scope_tracers.py``: the lifecycle's node tracer).
That tracer keeps the class's own methods for every call it passes on
(``native``: ADK's own spans kept, or a run no plugin traces). Nothing else
changes: not ADK's modules or classes, not the SDK's classes, not any other
tracer of the provider; only the object the provider made for ADK's scope.
An object that cannot change its class (a layout the subclass cannot share)
is left alone and reported (``answer`` returns False).

Reading which object ADK holds needs no import of ADK: the module is read from
``sys.modules`` only when ADK has loaded it.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from typing import Any

from opentelemetry import trace
from opentelemetry.util._decorator import _agnosticcontextmanager

from ..semconv import ADK_SCOPE
from ..util import wrappers
from ..util.redact import guarded
from . import scope_tracers
from .routed_tracer import RoutedTracer

logger: logging.Logger = guarded(logging.getLogger("adk_otel.pipeline"))

ADK_TRACING_MODULE = "google.adk.telemetry.tracing"


class OwnMethods(trace.Tracer):
    """A held tracer's start methods as its own class defines them: what the
    routed tracer passes calls on to."""

    def __init__(self, target: Any, own_class: Any) -> None:
        self.target = target
        self._own = own_class

    def start_span(self, *args: Any, **kwargs: Any) -> trace.Span:
        return self._own.start_span(self.target, *args, **kwargs)  # type: ignore[no-any-return]

    @_agnosticcontextmanager
    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Iterator[trace.Span]:
        with self._own.start_as_current_span(self.target, *args, **kwargs) as span:
            yield span


_ROUTED: dict[int, tuple[Any, RoutedTracer]] = {}
"""``id`` of a tracer answered for (and of the wrapper ADK holds around it) ->
(that object, kept alive so the id stays its own; its routed tracer)."""
_SUBCLASSES: dict[Any, type] = {}


def _routed_for(tracer: Any) -> RoutedTracer | None:
    found = _ROUTED.get(id(tracer))
    return found[1] if found is not None and found[0] is tracer else None


def _answered_class(own: Any) -> type:
    """The subclass of ``own`` whose start methods ask the routed tracer."""
    subclass = _SUBCLASSES.get(own)
    if subclass is not None:
        return subclass

    def start_span(self: Any, *args: Any, **kwargs: Any) -> Any:
        routed = _routed_for(self)
        if routed is None:
            return own.start_span(self, *args, **kwargs)
        return routed.start_span(*args, **kwargs)

    def start_as_current_span(self: Any, *args: Any, **kwargs: Any) -> Any:
        routed = _routed_for(self)
        if routed is None:
            return own.start_as_current_span(self, *args, **kwargs)
        return routed.start_as_current_span(*args, **kwargs)

    namespace: dict[str, Any] = {
        "start_span": start_span,
        "start_as_current_span": start_as_current_span,
        "__module__": __name__,
        "__doc__": f"{own.__qualname__}, answered for by adk-otel (held_tracer.py).",
        # No slots of its own: the instance keeps its layout, so its class can change.
        "__slots__": (),
    }
    subclass = _SUBCLASSES[own] = type(f"Answered{own.__name__}", (own,), namespace)
    return subclass


def held() -> Any:
    """The tracer ADK's telemetry holds, or None while ADK has not loaded it."""
    module = sys.modules.get(ADK_TRACING_MODULE)
    return getattr(module, "tracer", None) if module is not None else None


def answered(tracer: Any) -> RoutedTracer | None:
    """The routed tracer answering for ``tracer`` (itself, when ADK was handed
    one directly), or None."""
    if isinstance(tracer, RoutedTracer):
        return tracer
    return _routed_for(tracer)


def answer(*, native: bool) -> bool | None:
    """Answer for the tracer ADK holds (once; later calls set ``native``).
    True when answered for, None when ADK holds none yet (a provider adk-otel
    builds or routes answers ADK's later look-up), False when it cannot be
    (the caller keeps ADK's own spans and says so). Never raises."""
    tracer = held()
    if tracer is None:
        return None
    try:
        routed = answered(tracer)
        if routed is None:
            routed = _answer(tracer)
            if routed is None:
                return False
        routed.native = native
        return True
    except Exception:
        logger.debug("adk-otel: answering for ADK's tracer failed", exc_info=True)
        return False


def _answer(tracer: Any) -> RoutedTracer | None:
    factory = scope_tracers.factory_for(ADK_SCOPE)
    if factory is None:
        return None
    # A wrapper (wrapt's proxies: OpenInference's OITracer) calls the class
    # of the tracer it wraps: that tracer is the one to answer for.
    target = wrappers.innermost(tracer)
    if isinstance(target, RoutedTracer):
        return target
    known = _routed_for(target)
    if known is not None:
        # A new wrapper around a tracer already answered for (OpenInference's
        # ADK instrumentor wraps ADK's tracer while it is on, and again when
        # turned on anew): the same routed tracer answers. A second one would
        # take the answered class for the tracer's own, and its calls passed
        # on would come back to it without end.
        _ROUTED[id(tracer)] = (tracer, known)
        return known
    own = type(target)
    routed = factory(OwnMethods(target, own))
    _ROUTED[id(target)] = (target, routed)
    _ROUTED[id(tracer)] = (tracer, routed)
    try:
        target.__class__ = _answered_class(own)
    except TypeError:
        _ROUTED.pop(id(target), None)
        _ROUTED.pop(id(tracer), None)
        raise
    return routed


def describe(tracer: Any) -> str:
    """``module.Class`` of a tracer, for a warning."""
    cls = type(tracer)
    return f"{cls.__module__}.{cls.__qualname__}"
