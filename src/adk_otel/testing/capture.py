"""``TraceCapture``: a private tracer provider whose spans a test can assert on.

Each capture owns its own SDK ``TracerProvider``: nothing global is touched,
so captures never see each other's spans and need no reset between tests.
Besides finished spans it tracks spans that were started and never ended;
a span left open is the bug adk-otel exists to prevent, so the pytest
fixture fails the test when one is found.
"""

from __future__ import annotations

import difflib
import re
import threading
from collections.abc import Collection
from pathlib import Path
from typing import Any, TypeVar

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ..pipeline.provider import route_global_adk_scope, suppress_adk_spans
from ..traces.expect import assert_tree
from ..traces.io.evaluations import EvaluationResult, from_log_records, from_span_records
from ..traces.io.model import SpanRecord
from ..traces.query import SpanQuery
from ..traces.render import MASKED_ATTRIBUTES, SNAPSHOT_ATTRIBUTES, render_normalized, render_tree

Target = TypeVar("Target")
UPDATE_HINT = "run pytest with --adk-otel-update-snapshots to write it"
_SNAPSHOT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")


class OpenSpanTracker(SpanProcessor):
    """Remembers every span started and not (yet) ended.

    Keyed by span context: ``on_end`` receives a fresh ``ReadableSpan``
    snapshot, not the object ``on_start`` saw.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[tuple[int, int], Span] = {}

    @staticmethod
    def _key(span: ReadableSpan) -> tuple[int, int]:
        context = span.get_span_context()
        return (context.trace_id, context.span_id) if context is not None else (0, 0)

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        with self._lock:
            self._open[self._key(span)] = span

    def on_end(self, span: ReadableSpan) -> None:
        with self._lock:
            self._open.pop(self._key(span), None)

    def open_spans(self) -> list[Span]:
        with self._lock:
            return list(self._open.values())


class TraceCapture:
    """Collects the spans of one test and answers questions about them.

    ``snapshot_dir`` and ``update_snapshots`` are set by the pytest fixture;
    set them yourself to use :meth:`snapshot` elsewhere.
    """

    def __init__(
        self,
        *,
        snapshot_dir: Path | None = None,
        update_snapshots: bool = False,
        resource: Any = None,
    ) -> None:
        self.exporter: InMemorySpanExporter = InMemorySpanExporter()
        self._tracker = OpenSpanTracker()
        self.tracer_provider: TracerProvider = (
            TracerProvider(resource=resource) if resource is not None else TracerProvider()
        )
        self.tracer_provider.add_span_processor(self._tracker)
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        # ADK's own spans would duplicate ours; they only reach this provider if
        # someone makes it global, and then they should still stay out.
        suppress_adk_spans(self.tracer_provider)
        self.log_exporter: InMemoryLogRecordExporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
        self.logger_provider: LoggerProvider = LoggerProvider()
        """Pass it on (``logger_provider=``) to capture log-record events too:
        the evaluation results of ``adk_otel.evaluations``, the details event."""
        self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.log_exporter))
        self.snapshot_dir = snapshot_dir
        self.update_snapshots = update_snapshots

    def instrument(self, target: Target, **options: Any) -> Target:
        """``adk_otel.instrument(target)`` with spans going to this capture."""
        from adk_otel import instrument

        # ADK's workflow node spans need the global provider to route ADK's scope.
        route_global_adk_scope()

        return instrument(target, tracer_provider=self.tracer_provider, **options)

    # -- reading ---------------------------------------------------------------

    @property
    def spans(self) -> list[SpanRecord]:
        """Finished spans, then spans still open (``end_ns`` None)."""
        unended = self.unended  # read first: a span ending meanwhile is then finished
        finished = [SpanRecord.from_readable(span) for span in self.exporter.get_finished_spans()]
        done = {record.key for record in finished}
        return finished + [record for record in unended if record.key not in done]

    @property
    def unended(self) -> list[SpanRecord]:
        """Spans started through this capture's provider and not ended."""
        return [SpanRecord.from_readable(span) for span in self._tracker.open_spans()]

    @property
    def evaluations(self) -> list[EvaluationResult]:
        """Evaluation results sent to this capture: log records on
        :attr:`logger_provider`, and span events on its spans."""
        spans = self.spans
        return from_log_records(self.log_exporter.get_finished_logs()) + from_span_records(spans)

    def query(self) -> SpanQuery:
        return SpanQuery(self.spans, evaluations=self.evaluations)

    def tree(self, *, color: bool = False) -> str:
        return render_tree(self.spans, color=color, evaluations=self.evaluations)

    def assert_tree(self, expected: Any) -> None:
        """See :func:`adk_otel.traces.expect.assert_tree`."""
        assert_tree(self.spans, expected)

    def assert_all_ended(self) -> None:
        """AssertionError with the tree if any span was left open."""
        unended = self.unended
        if unended:
            names = ", ".join(repr(record.name) for record in unended)
            raise AssertionError(
                f"{len(unended)} span(s) started and never ended: {names}\n\n{self.tree()}"
            )

    def save(self, path: str | Path, *, append: bool = False) -> Path:
        """Write the spans as OTLP JSON, the file format ``adk-otel tree``,
        ``check`` and ``compare`` read; returns the path.

        Finished spans are written as the OTLP exporter sends them, spans still
        open after them without an end time (the CLI shows them as never ended).
        The file is replaced unless ``append``; its directory must exist.
        """
        from ..traces.io.otlp_json import spans_to_line

        target = Path(path)
        finished = self.exporter.get_finished_spans()
        done = {(s.context.trace_id, s.context.span_id) for s in finished if s.context}
        lines = [spans_to_line(finished)] if finished else []
        unended = [
            record
            for record in self.unended
            if (int(record.trace_id, 16), int(record.span_id, 16)) not in done
        ]
        if unended:
            lines.append(spans_to_line(unended))
        with open(target, "a" if append else "w", encoding="utf-8") as handle:
            handle.write("".join(line + "\n" for line in lines))
        return target

    def clear(self) -> None:
        """Forget finished spans (open ones are still tracked)."""
        self.exporter.clear()

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()

    # -- golden snapshots --------------------------------------------------------

    def snapshot_path(self, name: str) -> Path:
        if self.snapshot_dir is None:
            raise RuntimeError("snapshot() needs snapshot_dir (the adk_trace fixture sets it)")
        if not _SNAPSHOT_NAME.fullmatch(name) or ".." in name:
            raise ValueError(f"snapshot name {name!r}: use letters, digits, '_', '-' and '.'")
        return self.snapshot_dir / f"{name}.txt"

    def snapshot(
        self,
        name: str,
        *,
        attributes: Collection[str] = SNAPSHOT_ATTRIBUTES,
        masked: Collection[str] = MASKED_ATTRIBUTES,
    ) -> None:
        """Compare the normalised trace with the golden file ``name``.

        With ``update_snapshots`` the file is (re)written instead. A missing
        file fails with a hint; a different one fails with a diff.
        ``attributes``/``masked`` change what the snapshot keeps (see
        :func:`adk_otel.traces.render.render_normalized`).
        """
        path = self.snapshot_path(name)
        actual = render_normalized(self.spans, attributes=attributes, masked=masked)
        if self.update_snapshots:
            if not path.exists() or path.read_text(encoding="utf-8") != actual:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(actual, encoding="utf-8")
            return
        if not path.exists():
            raise AssertionError(
                f"snapshot {name!r} does not exist ({path.name}); {UPDATE_HINT}\n\n"
                f"actual:\n{actual}"
            )
        expected = path.read_text(encoding="utf-8")
        if expected != actual:
            diff = "".join(
                difflib.unified_diff(
                    expected.splitlines(keepends=True),
                    actual.splitlines(keepends=True),
                    fromfile=f"snapshot {name}",
                    tofile="actual",
                )
            )
            raise AssertionError(
                f"trace differs from snapshot {name!r}; if the change is intended, "
                f"run pytest with --adk-otel-update-snapshots\n\n{diff}"
            )
