"""adk-otel: OpenTelemetry tracing for Google ADK agents.

One line traces every run of an ADK app::

    import adk_otel

    runner = adk_otel.instrument(InMemoryRunner(agent=root_agent, app_name="shop"))
    # or: app = adk_otel.instrument(App(name="shop", root_agent=root_agent))
    # or, with no code change: adk web --extra_plugins adk_otel.AdkOtelPlugin

Each run becomes one trace: an ``invocation {app}`` span, an
``invoke_agent {agent}`` span per agent run, ``generate_content {model}`` per
model call and ``execute_tool {tool}`` per tool call. Every span is ended
exactly once: OK from ADK's after hooks, ERROR with the exception from its
error hooks, and UNSET with ``adk.outcome`` ``cancelled`` or ``incomplete``
when the run was cancelled, closed early, or ADK gave no terminal hook.

Spans go to the tracer provider you pass, else the global SDK provider, else
one built from the standard ``OTEL_*`` variables that exports over OTLP.
ADK's own duplicate spans are switched off by default (``keep_adk_spans``).
Only ADK's public plugin hooks are used; ADK itself is never patched.

Keywords of ``instrument()`` and ``AdkOtelPlugin``: ``tracer_provider``,
``meter_provider``, ``keep_adk_spans``, ``capture_content``,
``content_max_length``, ``redact`` and ``user_id`` (see the README and docs/telemetry.md).
"""

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .lazy import loader
from .lifecycle.node_routing import install as _route_adk_scope
from .version import SUPPORTED_ADK, __version__

if TYPE_CHECKING:
    from .instrumentation import instrument, plugin_of, uninstrument
    from .plugin import AdkOtelPlugin
    from .semconv import Outcome, SpanKind

# Loaded on first use: importing google-adk takes most of a second, and the
# pytest plugin and the CLI import this package without needing it.
_LAZY = {
    "instrument": ".instrumentation",
    "uninstrument": ".instrumentation",
    "plugin_of": ".instrumentation",
    "AdkOtelPlugin": ".plugin",
    "Outcome": ".semconv",
    "SpanKind": ".semconv",
}

# ADK's tracer scope is answered by the lifecycle's node tracer on the providers
# adk-otel builds or routes. Registered here, where every import of the package
# passes first, so it is in place before any such provider can hand ADK its
# tracer (lifecycle/node_routing.py); it imports nothing heavy.
_route_adk_scope()

__getattr__: Callable[[str], Any] = loader(__name__, globals(), _LAZY)

__all__ = [
    "SUPPORTED_ADK",
    "AdkOtelPlugin",
    "Outcome",
    "SpanKind",
    "__version__",
    "instrument",
    "plugin_of",
    "uninstrument",
]
