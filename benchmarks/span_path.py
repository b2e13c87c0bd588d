"""One model call's span, stage by stage: what any correct hook tracer must do, then adk-otel.

``overhead.py`` says what adk-otel costs per invocation and ``hooks.py`` in
which hook; both move by tens of µs from run to run on a shared machine. This
replays the hooks of one model call (``before_model``, ``after_model`` and the
response event ADK emits after them) on the real ADK objects of a run of the
``single`` workload, in a tight loop with the garbage collector off, so each
stage's cost is read to a fraction of a µs: the median over ``--repeats``
repeats of ``--spans`` spans, under an agent span that stays open. Each stage
adds one piece of work to the one before:

1. ``sdk``: the SDK span: started under the agent's span with the attributes
   adk-otel writes (prebuilt once), ended with an outcome attribute, the
   response attributes and status OK, in ``after_model``.
2. ``current``: + made current while the model call runs (attach in
   ``before_model``, detach in ``after_model``), so library spans made inside
   it nest under it: ``overhead.py``'s ``fair_floor`` model span.
3. ``extracted``: + the attributes read from ADK's objects (request at start,
   response at the end) with adk-otel's own functions and made safe
   (``sanitize``), instead of a prebuilt mapping.
4. ``deferred``: + ended at the response event instead of in ``after_model``
   (found again by the call's ``actions``, which that event carries on ADK
   2.13; on 2.5 adk-otel ends it at the agent's next step, which the event
   step then stands for), so the app's own ``after_model``
   callbacks, which ADK runs after the plugins', still see the span current:
   the callbacks promise.
5. ``adk_otel``: adk-otel's plugin hooks: the above, plus the span ledger
   (exactly-once ends, sweeps, safe detach), roll-ups into the agent and
   invocation spans, the outcome checks (error codes, streaming, sampling,
   content capture and dev UI switches).

Stages 1-4 are what a hook tracer keeping adk-otel's promises cannot skip;
``adk_otel / deferred`` is what the rest costs.

Usage: ``python benchmarks/span_path.py [--repeats 9] [--spans 2000] [--json PATH]``
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from report import emit  # this directory: the benchmark scripts run from it

HERE = Path(__file__).resolve().parent
STAGES = ("sdk", "current", "extracted", "deferred", "adk_otel")


class Stages:
    """The stages' three steps (before, after, event) on the captured objects."""

    def __init__(self, tracer: Any, parent: Any, calls: dict[str, dict[str, Any]]) -> None:
        from opentelemetry import context as otel_context
        from opentelemetry import trace
        from opentelemetry.trace import Status, StatusCode

        from adk_otel.reading import attributes as attrs
        from adk_otel.util import sanitize

        self.trace, self.otel_context, self.attrs, self.sanitize = (
            trace,
            otel_context,
            attrs,
            sanitize,
        )
        self.tracer, self.ok = tracer, Status(StatusCode.OK)
        self.parent = trace.set_span_in_context(parent)
        self.before = calls["before_model_callback"]
        self.after = calls["after_model_callback"]
        self.event = calls["on_event_callback"]
        # The prebuilt attributes: what the extracting stages compute, once.
        self.name, self.start_attributes, self.end_attributes = self._extract_all()
        self.open: dict[int, tuple[Any, Any, Any]] = {}

    def _extract_all(self) -> tuple[str, dict[str, Any], dict[str, Any]]:
        request = self.before["llm_request"]
        start = self.attrs.model_request(self.before["callback_context"], request)
        end = {"adk.outcome": "ok", **self.attrs.model_response(self.after["llm_response"])}
        return f"generate_content {self.attrs.model_name(request)}", start, end

    def steps(self, stage: str) -> tuple[Callable[[], None], ...]:
        return getattr(self, f"_{stage}")()  # type: ignore[no-any-return]

    def _sdk(self) -> tuple[Callable[[], None], ...]:
        def before() -> None:
            span = self.tracer.start_span(
                self.name, context=self.parent, attributes=self.start_attributes
            )
            self.open[0] = (span, None, None)

        def after() -> None:
            span = self.open.pop(0)[0]
            span.set_attributes(self.end_attributes)
            span.set_status(self.ok)
            span.end()

        return before, after, _nothing

    def _current(self) -> tuple[Callable[[], None], ...]:
        trace, attach, detach = self.trace, self.otel_context.attach, self.otel_context.detach

        def before() -> None:
            span = self.tracer.start_span(
                self.name, context=self.parent, attributes=self.start_attributes
            )
            self.open[0] = (span, attach(trace.set_span_in_context(span)), None)

        def after() -> None:
            span, token, _ = self.open.pop(0)
            detach(token)
            span.set_attributes(self.end_attributes)
            span.set_status(self.ok)
            span.end()

        return before, after, _nothing

    def _open_extracted(self, key: int) -> None:
        attrs, clean = self.attrs, self.sanitize.attributes
        context, request = self.before["callback_context"], self.before["llm_request"]
        span = self.tracer.start_span(
            f"generate_content {attrs.model_name(request)}",
            context=self.parent,
            kind=self.trace.SpanKind.CLIENT,
            attributes=clean(attrs.model_request(context, request)),
        )
        token = self.otel_context.attach(self.trace.set_span_in_context(span))
        self.open[key] = (span, token, None)

    def _end_extracted(self, span: Any, token: Any, response: Any) -> None:
        self.otel_context.detach(token)
        span.set_attributes({"adk.outcome": "ok", **response})
        span.set_status(self.ok)
        span.end()

    def _extracted(self) -> tuple[Callable[[], None], ...]:
        def before() -> None:
            self._open_extracted(0)

        def after() -> None:
            span, token, _ = self.open.pop(0)
            response = self.sanitize.attributes(
                self.attrs.model_response(self.after["llm_response"])
            )
            self._end_extracted(span, token, response)

        return before, after, _nothing

    def _deferred(self) -> tuple[Callable[[], None], ...]:
        def before() -> None:
            self._open_extracted(id(self.before["callback_context"].actions))

        def after() -> None:
            key = id(self.after["callback_context"].actions)
            span, token, _ = self.open[key]
            response = self.sanitize.attributes(
                self.attrs.model_response(self.after["llm_response"])
            )
            self.open[key] = (span, token, response)

        def event() -> None:
            # Found by the call's actions, as the response event's are on
            # ADK 2.13 (on 2.5 they are another object: the lookup costs the same).
            found = self.open.pop(id(self.after["callback_context"].actions), None)
            if found is not None:
                self._end_extracted(*found)

        return before, after, event


def _nothing() -> None:
    return None


class Bench:
    """A real run captured, adk-otel's plugin with an invocation and an agent span open."""

    def __init__(self) -> None:
        from opentelemetry import trace

        from adk_otel.pipeline.provider import build_tracer_provider

        sys.path.insert(0, str(HERE))
        from overhead import _noop_exporter
        from run_path import capture_run, drive

        self.provider = build_tracer_provider(exporter=_noop_exporter())
        trace.set_tracer_provider(self.provider)
        import workloads

        import adk_otel

        runner = workloads.runner_for("single")
        adk_otel.instrument(runner, tracer_provider=self.provider)
        self.plugin = runner.plugin_manager.plugins[0]
        calls: dict[str, dict[str, Any]] = {}
        for hook_name, kwargs in capture_run(self.plugin, workloads, runner):
            calls.setdefault(hook_name, kwargs)  # the first call of each hook
        # The model span's parents stay open for the whole measurement.
        drive(self.plugin.before_run_callback(**calls["before_run_callback"]))
        drive(self.plugin.before_agent_callback(**calls["before_agent_callback"]))
        self.tracer = self.provider.get_tracer("span_path")
        self.agent_span = self.tracer.start_span("invoke_agent solo")
        self.stages = Stages(self.tracer, self.agent_span, calls)
        plugin, before, after = (
            self.plugin,
            calls["before_model_callback"],
            calls["after_model_callback"],
        )
        event = calls["on_event_callback"]
        self.adk_otel = (
            lambda: drive(plugin.before_model_callback(**before)),
            lambda: drive(plugin.after_model_callback(**after)),
            lambda: drive(plugin.on_event_callback(**event)),
        )
        drive(plugin.before_model_callback(**before))
        drive(plugin.after_model_callback(**after))
        drive(plugin.on_event_callback(**event))
        if plugin.open_spans != 2:
            # An ADK release whose response event does not carry the call's
            # actions (2.5): adk-otel ends the span when the agent's next
            # operation starts or the agent ends, which this step stands for.
            run = plugin._runs.latest(before["callback_context"].invocation_id)
            agent = run.innermost_agent(before["callback_context"].agent_name)
            settle = plugin._ledger.settle_children
            self.adk_otel = (
                *self.adk_otel[:2],
                lambda: (drive(plugin.on_event_callback(**event)), settle(agent)),
            )
            settle(agent)

    def steps(self, stage: str) -> tuple[Callable[[], None], ...]:
        return self.adk_otel if stage == "adk_otel" else self.stages.steps(stage)

    def check(self) -> None:
        """Every stage ends the span it opens (adk-otel's: the event settles it)."""
        for stage in STAGES:
            for step in self.steps(stage):
                step()
        if self.plugin.open_spans != 2 or self.stages.open:
            raise RuntimeError("a stage left its span open")

    def time(self, stage: str, spans: int) -> float:
        """Thread CPU µs per span over ``spans`` spans."""
        before, after, event = self.steps(stage)
        start = time.thread_time_ns()
        for _ in range(spans):
            before()
            after()
            event()
        return (time.thread_time_ns() - start) / spans / 1e3


def measure(repeats: int, spans: int) -> dict[str, Any]:
    bench = Bench()
    bench.check()
    samples: dict[str, list[float]] = {stage: [] for stage in STAGES}
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeats):  # interleaved: a slower moment lands on every stage
            for stage in STAGES:
                samples[stage].append(bench.time(stage, spans))
            gc.collect()
    finally:
        gc.enable()
        bench.provider.shutdown()
    medians = {stage: statistics.median(values) for stage, values in samples.items()}
    return {
        "repeats": repeats,
        "spans": spans,
        "us_per_span": medians,
        "range": {stage: [min(v), max(v)] for stage, v in samples.items()},
    }


def markdown(result: dict[str, Any]) -> str:
    medians = result["us_per_span"]
    lines = [
        "| stage | µs per model span, median [min-max] | added by the stage | x sdk |",
        "|---|---|---|---|",
    ]
    previous = None
    for stage in STAGES:
        low, high = result["range"][stage]
        added = "-" if previous is None else f"{medians[stage] - medians[previous]:+.1f}"
        lines.append(
            f"| {stage} | {medians[stage]:.1f} [{low:.1f}-{high:.1f}] | {added} "
            f"| {medians[stage] / medians['sdk']:.2f} |"
        )
        previous = stage
    necessary = medians["adk_otel"] / medians["deferred"]
    lines.append("")
    lines.append(f"adk_otel / deferred (what adk-otel adds to the necessary work): {necessary:.2f}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=9, help="interleaved repeats")
    parser.add_argument("--spans", type=int, default=2000, help="spans per repeat and stage")
    parser.add_argument("--json", type=Path, help="also write the results here")
    options = parser.parse_args()
    result = measure(options.repeats, options.spans)
    return emit(markdown(result), result, options.json)


if __name__ == "__main__":
    sys.exit(main())
