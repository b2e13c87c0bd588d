"""The reading half of adk-otel: exported traces as data.

Reading and writing trace files is :mod:`.io` (every layout the
Collector's ``file`` exporter writes, the OTLP JSON codec, the span-record
model, the reading limits); comparing sets of runs is :mod:`.comparisons`
(run summaries, statistics, gates, reports, summary files). The pytest query
API sits on top of :mod:`.io`: span queries (:mod:`.query`), expected-tree
assertions (:mod:`.expect`), the tree renderer (:mod:`.render`) and the
CLI's JSON report of a forest (:mod:`.report_json`). None of it knows ADK's
runtime or imports anything of adk-otel but :mod:`adk_otel.semconv`, so the
CLI and CI tooling read traces without loading an agent framework.

::

    from adk_otel.traces import read_traces, read_records, write_spans

Names are loaded on first use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..lazy import listing, loader

if TYPE_CHECKING:
    from .comparisons.regression import Regression, compare
    from .expect import assert_tree, tree_mismatch, unordered
    from .io.files import expand, iter_records, read_records, read_spans, read_traces
    from .io.limits import ReadLimits
    from .io.model import Forest, SpanEvent, SpanNode, SpanRecord, as_records
    from .io.otlp_json import (
        OtlpJsonError,
        OtlpJsonFileExporter,
        loads_spans,
        write_requests,
        write_spans,
    )
    from .query import PRESENT, SpanQuery, SpecError
    from .render import render_normalized, render_tree

_EXPORTS = {
    "assert_tree": ".expect",
    "tree_mismatch": ".expect",
    "unordered": ".expect",
    "expand": ".io.files",
    "iter_records": ".io.files",
    "read_records": ".io.files",
    "read_spans": ".io.files",
    "read_traces": ".io.files",
    "ReadLimits": ".io.limits",
    "Forest": ".io.model",
    "SpanEvent": ".io.model",
    "SpanNode": ".io.model",
    "SpanRecord": ".io.model",
    "as_records": ".io.model",
    "OtlpJsonError": ".io.otlp_json",
    "OtlpJsonFileExporter": ".io.otlp_json",
    "loads_spans": ".io.otlp_json",
    "write_requests": ".io.otlp_json",
    "write_spans": ".io.otlp_json",
    "PRESENT": ".query",
    "SpanQuery": ".query",
    "SpecError": ".query",
    "Regression": ".comparisons.regression",
    "compare": ".comparisons.regression",
    "render_normalized": ".render",
    "render_tree": ".render",
}

__all__ = [
    "PRESENT",
    "Forest",
    "OtlpJsonError",
    "OtlpJsonFileExporter",
    "ReadLimits",
    "Regression",
    "SpanEvent",
    "SpanNode",
    "SpanQuery",
    "SpanRecord",
    "SpecError",
    "as_records",
    "assert_tree",
    "compare",
    "expand",
    "iter_records",
    "loads_spans",
    "read_records",
    "read_spans",
    "read_traces",
    "render_normalized",
    "render_tree",
    "tree_mismatch",
    "unordered",
    "write_requests",
    "write_spans",
]


__getattr__: Callable[[str], Any] = loader(__name__, globals(), _EXPORTS)
__dir__: Callable[[], list[str]] = listing(globals(), __all__)
