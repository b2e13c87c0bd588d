"""Where spans go: the tracer provider (provider.py) built from the standard
``OTEL_*`` variables (otel_env.py, stability.py) or adopted from ADK's server
(adopt.py), its batch processor (export.py), the repair of text OTLP cannot
encode (span_repair.py), ``service.instance.id`` (instance.py), the scopes
switched off (adk_scope.py), the model calls' details events (details.py),
the provider keywords checked (provider_check.py) and the end of a server
process (shutdown.py).

``build_tracer_provider()`` and ``exporting_processor()`` are public
(docs/operations.md), as are :class:`AdkOtelTracerProvider` and
``provider_from_env`` (``OTEL_PYTHON_TRACER_PROVIDER=adk_otel``).
"""

from .provider import (
    AdkOtelTracerProvider,
    build_tracer_provider,
    exporting_processor,
    provider_from_env,
)

__all__ = [
    "AdkOtelTracerProvider",
    "build_tracer_provider",
    "exporting_processor",
    "provider_from_env",
]
