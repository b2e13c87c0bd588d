"""Which tracer answers an instrumentation scope: a registry the layers above fill.

The tracer provider (``provider.py``) hands ADK's scope (``gcp.vertex.agent``)
a tracer of adk-otel's instead of the SDK's, but what that tracer does (open
workflow node spans in the plugin's span ledger) belongs to the lifecycle, a
layer above the pipeline. So the pipeline only keeps the agreement: a
*factory*, registered here for a scope, is given the SDK's tracer for that
scope and returns a :class:`~adk_otel.pipeline.routed_tracer.RoutedTracer` (a
tracer whose ``native`` switch passes every call back to the SDK's, for
``keep_adk_spans``). The lifecycle registers ADK's (``lifecycle/node_routing.py``)
when the package is imported, before any provider can be asked for ADK's
tracer: ADK takes it when its telemetry module is imported, often before the
plugin exists. With nothing registered for a scope, providers hand out the
SDK's tracer for it.

This module imports nothing at run time, so registering costs the package's
import nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from opentelemetry import trace

    from .routed_tracer import RoutedTracer

RoutedTracerFactory: TypeAlias = "Callable[[trace.Tracer], RoutedTracer]"
"""The SDK's tracer for a scope -> the tracer that answers the scope instead."""

_factories: dict[str, RoutedTracerFactory] = {}


def register(scope: str, factory: RoutedTracerFactory) -> None:
    """Let ``factory`` make the tracer that answers ``scope`` on the providers
    adk-otel builds or routes; a later registration replaces an earlier one
    (for tracers not handed out yet)."""
    _factories[scope] = factory


def factory_for(scope: str) -> RoutedTracerFactory | None:
    """The factory registered for ``scope``, if any."""
    return _factories.get(scope)
