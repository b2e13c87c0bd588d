"""Where spans go: the tracer provider (provider.py) built from the standard
``OTEL_*`` variables (otel_env.py, stability.py) or adopted from ADK's server
(adopt.py), its batch processor (export.py), the repair of text OTLP cannot
encode (span_repair.py), ``service.instance.id`` (instance.py), the scopes
switched off (adk_scope.py) and the tracers that answer a scope in place of the
SDK's (scope_tracers.py), the model calls' details events (details.py), the
provider keywords checked (provider_check.py) and the end of a server process
(shutdown.py).

``build_tracer_provider()`` and ``exporting_processor()`` are public
(docs/operations.md), as are :class:`AdkOtelTracerProvider` and
``provider_from_env`` (``OTEL_PYTHON_TRACER_PROVIDER=adk_otel``). They are
loaded on first use: the package's ``__init__`` registers a tracer factory in
``scope_tracers.py`` at import, which must not cost the OpenTelemetry SDK.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..lazy import listing, loader

if TYPE_CHECKING:
    from .provider import (
        AdkOtelTracerProvider,
        build_tracer_provider,
        exporting_processor,
        provider_from_env,
    )

_EXPORTS = {
    "AdkOtelTracerProvider": ".provider",
    "build_tracer_provider": ".provider",
    "exporting_processor": ".provider",
    "provider_from_env": ".provider",
}

__all__ = [
    "AdkOtelTracerProvider",
    "build_tracer_provider",
    "exporting_processor",
    "provider_from_env",
]

__getattr__: Callable[[str], Any] = loader(__name__, globals(), _EXPORTS)
__dir__: Callable[[], list[str]] = listing(globals(), __all__)
