"""ADK's tracer scope is answered by the node tracer (``nodes.py``).

ADK's node tracing asks the global tracer provider for the tracer of scope
``gcp.vertex.agent``. adk-otel's providers (``pipeline/provider.py``:
:class:`~adk_otel.pipeline.AdkOtelTracerProvider`, and an SDK provider routed
by ``route_adk_scope``) hand out, for that scope, whatever tracer the factory
registered in ``pipeline/scope_tracers.py`` makes; this module registers the
lifecycle's, a :class:`~adk_otel.lifecycle.nodes.NodeTracer`, which opens
workflow node spans in the plugin's span ledger. The pipeline sits below the
lifecycle and never imports it: the dependency is handed down here.

The package's ``__init__`` calls :func:`install`, so the registration is in
place before any provider adk-otel builds can be asked for ADK's tracer
(``OTEL_PYTHON_TRACER_PROVIDER=adk_otel`` builds one before ADK's telemetry
module takes its tracer, usually before the plugin is imported). ``nodes.py``
itself is imported only when ADK first asks, so ``import adk_otel`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..pipeline import scope_tracers
from ..semconv import ADK_SCOPE

if TYPE_CHECKING:
    from opentelemetry import trace

    from .nodes import NodeTracer


def node_tracer(sdk_tracer: trace.Tracer) -> NodeTracer:
    """The tracer ADK's scope gets: a :class:`NodeTracer` over the SDK's."""
    from .nodes import NodeTracer

    return NodeTracer(sdk_tracer)


def install() -> None:
    """Register :func:`node_tracer` as the tracer factory of ADK's scope."""
    scope_tracers.register(ADK_SCOPE, node_tracer)
