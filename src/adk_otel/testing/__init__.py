"""Test helpers: an offline model, span queries, tree assertions, a capture, a receiver.

::

    from adk_otel.testing import ScriptedModel, SpanQuery, assert_tree, call, reply

Names are loaded on first use: importing this package (which pytest does for
the plugin in every run) costs nothing until a helper is actually needed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..lazy import listing, loader

if TYPE_CHECKING:
    from ..traces.comparisons.regression import Regression, compare
    from ..traces.expect import assert_tree, unordered
    from ..traces.io.model import Forest, SpanRecord
    from ..traces.query import PRESENT, SpanQuery
    from ..traces.render import render_normalized, render_tree
    from .capture import TraceCapture
    from .model import ScriptedModel, Step, call, calls, fail, reply, stream
    from .receiver import OtlpReceiver, poll_until

_EXPORTS = {
    "ScriptedModel": ".model",
    "Step": ".model",
    "call": ".model",
    "calls": ".model",
    "fail": ".model",
    "reply": ".model",
    "stream": ".model",
    "SpanQuery": "..traces.query",
    "assert_tree": "..traces.expect",
    "unordered": "..traces.expect",
    "PRESENT": "..traces.query",
    "render_tree": "..traces.render",
    "render_normalized": "..traces.render",
    "SpanRecord": "..traces.io.model",
    "Forest": "..traces.io.model",
    "TraceCapture": ".capture",
    "Regression": "..traces.comparisons.regression",
    "compare": "..traces.comparisons.regression",
    "OtlpReceiver": ".receiver",
    "poll_until": ".receiver",
}

__all__ = [
    "PRESENT",
    "Forest",
    "OtlpReceiver",
    "Regression",
    "ScriptedModel",
    "SpanQuery",
    "SpanRecord",
    "Step",
    "TraceCapture",
    "assert_tree",
    "call",
    "calls",
    "compare",
    "fail",
    "poll_until",
    "render_normalized",
    "render_tree",
    "reply",
    "stream",
    "unordered",
]


__getattr__: Callable[[str], Any] = loader(__name__, globals(), _EXPORTS)
__dir__: Callable[[], list[str]] = listing(globals(), __all__)
