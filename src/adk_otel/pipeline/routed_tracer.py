"""The tracer a routed scope gets: the agreement between the pipeline, which
hands it out, and the layer above that makes it (``scope_tracers.py``).

A :class:`RoutedTracer` answers one instrumentation scope in place of the
tracer the SDK made for it, on the providers adk-otel builds or routes
(``provider.py``): ADK's scope gets the lifecycle's node tracer. The pipeline
needs one thing of it besides being a tracer: ``native``, which passes every
call back to the SDK's tracer, as if the scope had never been routed
(``keep_adk_spans``: ADK's own spans kept), for a tracer ADK already holds.
"""

from __future__ import annotations

from opentelemetry import trace


class RoutedTracer(trace.Tracer):
    """A tracer answering one scope in place of the SDK's ``sdk_tracer``;
    ``native`` True: every call goes to ``sdk_tracer``."""

    def __init__(self, sdk_tracer: trace.Tracer, *, native: bool = False) -> None:
        self.sdk_tracer = sdk_tracer
        """The tracer the SDK made for the scope."""
        self.native = native
        """True: every call goes to ``sdk_tracer``."""
