"""The reading half of adk-otel: exported traces as data.

Trace files in every layout the Collector's ``file`` exporter writes
(:mod:`.files`, bounded by :mod:`.limits`), the OTLP JSON codec
(:mod:`.otlp_json`), the span-record model (:mod:`.model`), span queries
(:mod:`.query`), expected-tree assertions (:mod:`.expect`), the tree
renderer (:mod:`.render`), the JSON report (:mod:`.report_json`), and
comparisons of sets of runs (:mod:`.regression` over :mod:`.runs`,
:mod:`.stats`, :mod:`.paths`, :mod:`.comparison`, :mod:`.compare_report`,
:mod:`.summary_file`). None of it knows ADK's runtime or imports anything of
adk-otel but :mod:`adk_otel.semconv`, so the CLI and CI tooling read traces
without loading an agent framework.

::

    from adk_otel.traces import read_traces, read_records, write_spans

Names are loaded on first use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..lazy import listing, loader

if TYPE_CHECKING:
    from .expect import assert_tree, tree_mismatch, unordered
    from .files import expand, iter_records, read_records, read_spans, read_traces
    from .limits import ReadLimits
    from .model import Forest, SpanEvent, SpanNode, SpanRecord, as_records
    from .otlp_json import (
        OtlpJsonError,
        OtlpJsonFileExporter,
        loads_spans,
        write_requests,
        write_spans,
    )
    from .query import PRESENT, SpanQuery, SpecError
    from .regression import Regression, compare
    from .render import render_normalized, render_tree

_EXPORTS = {
    "assert_tree": ".expect",
    "tree_mismatch": ".expect",
    "unordered": ".expect",
    "expand": ".files",
    "iter_records": ".files",
    "read_records": ".files",
    "read_spans": ".files",
    "read_traces": ".files",
    "ReadLimits": ".limits",
    "Forest": ".model",
    "SpanEvent": ".model",
    "SpanNode": ".model",
    "SpanRecord": ".model",
    "as_records": ".model",
    "OtlpJsonError": ".otlp_json",
    "OtlpJsonFileExporter": ".otlp_json",
    "loads_spans": ".otlp_json",
    "write_requests": ".otlp_json",
    "write_spans": ".otlp_json",
    "PRESENT": ".query",
    "SpanQuery": ".query",
    "SpecError": ".query",
    "Regression": ".regression",
    "compare": ".regression",
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
