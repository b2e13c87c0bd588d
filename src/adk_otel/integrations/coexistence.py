"""adk-otel among other instrumentations: the standard switch to turn it off,
and another ADK instrumentation active in the process stood down.

Two instrumentations of ADK in one process mix their spans into one tree (16
spans where there are 9 operations) and write their attributes onto each
other's spans; OpenInference's also replaces the tracer ADK's telemetry holds,
so adk-otel could not answer for ADK's workflow nodes. Phoenix users often
have it on (``register(auto_instrument=True)``). So where adk-otel traces
ADK, it turns the other one off through that one's public API
(``uninstrument()``, which puts ADK's own tracer back) and says so once,
naming how to keep the other one instead. ``ADK_OTEL_KEEP_OTHER_INSTRUMENTATIONS=true``
leaves it on (then both trace each run, and the warning says that).
"""

from __future__ import annotations

import logging
import sys

from .. import settings
from ..util.redact import guarded

logger: logging.Logger = guarded(logging.getLogger(__name__))

DISABLED_ENV = settings.DISABLED_INSTRUMENTATIONS.env[0]
KEEP_OTHERS_ENV = settings.KEEP_OTHER_INSTRUMENTATIONS.env[0]
NAMES = frozenset({"adk_otel", "adk-otel"})
"""What ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS`` lists to switch adk-otel off (or ``*``)."""

# (module, instrumentor class, what to call it, how to turn it off)
_OTHERS = (
    (
        "openinference.instrumentation.google_adk",
        "GoogleADKInstrumentor",
        "OpenInference's google-adk instrumentation",
        "GoogleADKInstrumentor().uninstrument(), or "
        "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=google_adk under opentelemetry-instrument, "
        "or Phoenix's register() without auto_instrument",
    ),
)
_warned: set[str] = set()


def disabled() -> bool:
    """Whether ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS`` names adk-otel, or is
    ``*`` (every instrumentation off, as ``opentelemetry-instrument`` reads it)."""
    listed = settings.load(settings.DISABLED_INSTRUMENTATIONS)
    return any(name.lower() in NAMES or name == "*" for name in listed)


def stand_down_others() -> None:
    """Turn off other ADK instrumentations active now, saying so once each
    (only warn under ``ADK_OTEL_KEEP_OTHER_INSTRUMENTATIONS=true``). Never raises."""
    for module_name, class_name, label, way_out in _OTHERS:
        module = sys.modules.get(module_name)
        if module is None:
            continue
        try:
            # OpenTelemetry instrumentors are singletons: this is the active one.
            other = getattr(module, class_name)()
            if not other.is_instrumented_by_opentelemetry:
                continue
            keep = settings.load(settings.KEEP_OTHER_INSTRUMENTATIONS, warn=logger.warning)
            if not keep:
                other.uninstrument()
        except Exception:
            logger.debug("adk-otel: standing %s down failed", label, exc_info=True)
            continue
        if module_name in _warned:
            continue
        _warned.add(module_name)
        if keep:
            logger.warning(
                "adk-otel: %s is also active (%s=true): both trace ADK, so each run "
                "shows up twice, with mixed attributes. Keep one: turn that one off with "
                "%s, or adk-otel with %s=adk_otel",
                label,
                KEEP_OTHERS_ENV,
                way_out,
                DISABLED_ENV,
            )
        else:
            logger.warning(
                "adk-otel: %s was also active; adk-otel turned it off so each run is traced "
                "once. To keep it instead of adk-otel, set %s=adk_otel; to keep both, %s=true",
                label,
                DISABLED_ENV,
                KEEP_OTHERS_ENV,
            )
