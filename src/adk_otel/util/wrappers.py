"""Seeing through the wrappers other libraries put around objects adk-otel reads:
the one place that knows them.

* wrapt's proxies and function wrappers (OpenInference's ``OITracer``, which
  Phoenix's provider puts around every tracer; the client instrumentations'
  wrappers on model-client methods), and ``functools.wraps`` replacements,
  keep what they wrap as ``__wrapped__``, and a wrapt proxy's calls reach the
  wrapped object's class;
* logfire's proxies keep the SDK object as an attribute: its global provider
  as ``provider``, its tracers as ``tracer`` (a tracer keeps its proxy provider
  as ``provider`` too). They are tracers of their own (they add logfire's
  span wrapper), not pass-throughs.

Three questions are asked of them: :func:`inner`, the SDK object of a class
inside any of them (the span-processor check and scope suppression, which
need the SDK's provider and tracers); :func:`innermost`, the object a
wrapt proxy's calls finally reach (the tracer ADK holds is answered for at
that object); :func:`layers`, each object of a wrapt chain in turn (which
instrumentation wraps a client method). Nothing here imports the wrapping
libraries: they are recognised by what they keep.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

T = TypeVar("T")

WRAPPED = "__wrapped__"
"""Where wrapt (and ``functools.wraps``) keeps the wrapped object."""
KEPT_AS = (WRAPPED, "tracer", "provider")
"""Where a wrapper keeps what it wraps, looked at in this order: wrapt's, then
logfire's (a logfire tracer keeps both: its SDK tracer and its proxy provider)."""
MAX_LAYERS = 8
"""Wrappers around wrappers looked through (a stack of instrumentations is two
or three): a bound, so a wrapper that hands back a new wrapper cannot loop."""


def _kept(obj: Any, name: str) -> Any:
    """``obj.name``, or None however reading it fails (another library's object)."""
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


def layers(obj: Any) -> Iterator[Any]:
    """``obj``, then each object the wrapt chain around it wraps, outermost
    first (``obj`` alone when it wraps nothing)."""
    seen: dict[int, Any] = {}  # the objects kept, so their ids stay theirs
    for _ in range(MAX_LAYERS):
        if obj is None or id(obj) in seen:
            return
        seen[id(obj)] = obj
        yield obj
        obj = _kept(obj, WRAPPED)


def innermost(obj: Any) -> Any:
    """The object a wrapt chain around ``obj`` finally calls (``obj`` itself
    when it is not one)."""
    found = obj
    for layer in layers(obj):
        found = layer
    return found


def inner(obj: Any, kind: type[T]) -> T | None:
    """``obj`` when it is a ``kind``, else the nearest ``kind`` inside the
    wrappers around it (wrapt's or logfire's, in any nesting), else None."""
    level = [obj]
    seen: dict[int, Any] = {}  # the objects kept, so their ids stay theirs
    for _ in range(MAX_LAYERS):
        below: list[Any] = []
        for each in level:
            # A wrapt proxy passes isinstance checks as what it wraps: not the object itself.
            if isinstance(each, kind) and _kept(each, WRAPPED) is None:
                return each
            seen[id(each)] = each
            below.extend(
                kept
                for name in KEPT_AS
                if (kept := _kept(each, name)) is not None and id(kept) not in seen
            )
        if not below:
            return None
        level = below
    return None
