"""W3C trace context across process boundaries, read and written defensively.

Outgoing: the current context goes into a plain ``dict`` carrier through the
globally configured propagator (``traceparent``/``tracestate`` and baggage by
default), so an application's own propagator choice is honoured.

Incoming: a carrier that arrived with a request (A2A request metadata) becomes
the parent of the run, unless the run already sits under a local span of the
same trace (an instrumented HTTP server continued it first, which is the
deeper parent). Whatever arrives is untrusted: anything but short strings is
dropped before the propagator sees it, and a malformed, oversized or
wrong-version header yields no parent, so the run starts a fresh trace.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace

from ..util.redact import guarded

logger: logging.Logger = guarded(logging.getLogger(__name__))

MAX_HEADER_LENGTH = 512
"""Longest carrier value read (W3C caps ``tracestate`` at 32 members of 256
bytes; real values are far shorter, and a longer one is not a trace header)."""
_MAX_FIELDS = 16


def inject(context: otel_context.Context | None = None) -> dict[str, str]:
    """The trace context of ``context`` (default: the current one) as a carrier."""
    carrier: dict[str, str] = {}
    try:
        propagate.inject(carrier, context=context)
    except Exception:
        logger.debug("adk-otel: injecting trace context failed", exc_info=True)
        return {}
    return carrier


def remote_parent(carrier: Any) -> otel_context.Context | None:
    """The context a carrier continues, or ``None`` when it holds no valid one."""
    if not isinstance(carrier, Mapping):
        return None
    fields = propagate.get_global_textmap().fields
    clean: dict[str, str] = {}
    try:
        for key in fields:
            value = carrier.get(key)
            if isinstance(value, str) and len(value) <= MAX_HEADER_LENGTH:
                clean[key] = value
            if len(clean) >= _MAX_FIELDS:
                break
        if not clean:
            return None
        context = propagate.extract(clean)
    except Exception:
        logger.debug("adk-otel: reading incoming trace context failed", exc_info=True)
        return None
    span_context = trace.get_current_span(context).get_span_context()
    return context if span_context.is_valid and span_context.is_remote else None


def run_parent(carrier: Any) -> tuple[otel_context.Context, bool]:
    """The parent context for a run and whether it continues ``carrier``."""
    current = otel_context.get_current()
    remote = remote_parent(carrier)
    if remote is None:
        return current, False
    local = trace.get_current_span(current).get_span_context()
    remote_trace = trace.get_current_span(remote).get_span_context().trace_id
    if local.is_valid and local.trace_id == remote_trace:
        return current, False
    return remote, True
