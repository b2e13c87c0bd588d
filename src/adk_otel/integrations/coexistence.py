"""adk-otel among other instrumentations: the standard switch to turn it off,
and a warning when another ADK instrumentation is active in the process.

Two instrumentations of ADK in one process mix their spans into one tree (16
spans where there are 9 operations) and write their attributes onto each
other's spans. The warning names the other one and how to turn it off.
"""

from __future__ import annotations

import logging
import os
import sys

from ..util.redact import guarded

logger: logging.Logger = guarded(logging.getLogger(__name__))

DISABLED_ENV = "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS"
NAMES = frozenset({"adk_otel", "adk-otel"})
"""What ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS`` lists to switch adk-otel off (or ``*``)."""

# (module, instrumentor class, what to call it, how to turn it off)
_OTHERS = (
    (
        "openinference.instrumentation.google_adk",
        "GoogleADKInstrumentor",
        "OpenInference's google-adk instrumentation",
        "GoogleADKInstrumentor().uninstrument(), or "
        "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=google_adk under opentelemetry-instrument",
    ),
)
_warned: set[str] = set()


def disabled() -> bool:
    """Whether ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS`` names adk-otel, or is
    ``*`` (every instrumentation off, as ``opentelemetry-instrument`` reads it)."""
    listed = os.environ.get(DISABLED_ENV, "")
    return any(name.strip().lower() in NAMES or name.strip() == "*" for name in listed.split(","))


def warn_about_others() -> None:
    """Warn, once each, about other ADK instrumentations active now. Never raises."""
    for module_name, class_name, label, way_out in _OTHERS:
        module = sys.modules.get(module_name)
        if module is None or module_name in _warned:
            continue
        try:
            # OpenTelemetry instrumentors are singletons: this is the active one.
            active = bool(getattr(module, class_name)().is_instrumented_by_opentelemetry)
        except Exception:
            continue
        if active:
            _warned.add(module_name)
            logger.warning(
                "adk-otel: %s is also active: both trace ADK, so each run shows up twice, "
                "with mixed attributes. Keep one: turn that one off with %s, or adk-otel "
                "with %s=adk_otel",
                label,
                way_out,
                DISABLED_ENV,
            )
