"""A span processor swapped under adk-otel: followed, and said once.

The SDK hands every tracer a provider makes the provider's one active span
processor, at the tracer's making. A platform that replaces that processor
afterwards (Vertex AI Agent Engine's ``AdkApp`` does, in ``set_up()``, when
its telemetry is on: it shuts the provider's processor down and puts a new one
in its place) leaves every tracer made before it with the old, shut-down one:
their spans are dropped, and nothing says so. adk-otel's tracer is made when
adk-otel is set up, often before (``instrument()`` at import time).

So before each run adk-otel checks that its tracer still has its provider's
active processor; when it does not, it points every tracer that provider made
with the old processor at the current one (what the provider means them to
have), and says once what happened.
"""

from __future__ import annotations

import logging
from typing import Any

from opentelemetry.sdk.trace import Tracer as SdkTracer
from opentelemetry.sdk.trace import TracerProvider

from ..util import wrappers
from ..util.redact import guarded
from .provider import sdk_provider_of

logger: logging.Logger = guarded(logging.getLogger("adk_otel.pipeline"))

_told = {"swapped": False}


class ProcessorWatch:
    """Watches the span processor of ``tracer`` (adk-otel's, from ``provider``)."""

    __slots__ = ("provider", "tracer")

    def __init__(self, tracer: Any, provider: Any) -> None:
        self.tracer: SdkTracer | None = _sdk_tracer(tracer)
        self.provider: TracerProvider | None = sdk_provider_of(provider)
        if self.provider is None:
            self.tracer = None

    def check(self) -> None:
        """Follow a swapped processor (cheap when nothing changed). Never raises."""
        tracer = self.tracer
        if tracer is None:
            return
        try:
            current = self.provider._active_span_processor  # type: ignore[union-attr]
            if tracer.span_processor is not current:
                _follow(self.provider, tracer.span_processor, current)  # type: ignore[arg-type]
        except Exception:
            logger.debug("adk-otel: following a swapped span processor failed", exc_info=True)


def _follow(provider: TracerProvider, old: Any, current: Any) -> None:
    followed = 0
    for tracer in list(getattr(provider, "_tracers", {}).values()):
        sdk = _sdk_tracer(tracer)
        if sdk is not None and sdk.span_processor is old:
            sdk.span_processor = current
            followed += 1
    if not _told["swapped"]:
        _told["swapped"] = True
        logger.warning(
            "adk-otel: the tracer provider's span processor was replaced after adk-otel was set "
            "up (Vertex AI Agent Engine's telemetry does this in set_up()), which left the "
            "tracers made before it on the old, shut-down one: %d tracer(s), adk-otel's among "
            "them, now use the new one, so no span is lost. Whatever the old processor exported "
            "to no longer receives spans",
            followed,
        )


def _sdk_tracer(tracer: Any) -> SdkTracer | None:
    """The SDK tracer ``tracer`` is, or the wrappers around it keep (``util/wrappers.py``)."""
    return wrappers.inner(tracer, SdkTracer)
