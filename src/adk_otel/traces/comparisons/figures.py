"""A run's figures, declared once for files and stores.

A run is one invocation span and its step spans (agent, model, tool and node
spans with its ``adk.invocation.id``). Its figures are what a comparison
puts in distributions, one value a run: each is declared here as data,
:meth:`RunFigure.of` computes it over files (comparisons/runs.py) and
store/runs.py writes the same declaration as SQL, so the two cannot drift: a
new figure is a :class:`RunFigure` (and, if it sums something new off the
steps, a :class:`StepNumber`) here, and its distribution in ``GroupSummary``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ... import semconv as sc

LAYERS = ("agent", "model", "tool", "node")
"""The step spans' kinds (``adk.span.kind``)."""
STEP_NAME = {
    "agent": sc.GEN_AI_AGENT_NAME,
    "tool": sc.GEN_AI_TOOL_NAME,
    "model": sc.GEN_AI_REQUEST_MODEL,
    "node": sc.ADK_NODE_NAME,
}
"""The attribute naming a step, by kind; without it, the span name after its first space."""
ERROR_CATEGORY = sc.ADK_ERROR_CATEGORY
"""The failure category adk-otel sets on failed spans; ``error.type`` where absent."""


@dataclass(frozen=True, slots=True)
class StepNumber:
    """A number read off each step span of one kind: the first of ``keys``
    the span carries (an integer), else 0."""

    name: str
    kind: str
    keys: tuple[str, ...]

    def of(self, kind: str, attributes: Mapping[str, Any]) -> int:
        if kind != self.kind:
            return 0
        value = next((attributes[key] for key in self.keys if key in attributes), None)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0


STEP_NUMBERS = (
    # adk.usage.* where a client instrumentation's child span is the inference.
    StepNumber("input_tokens", "model", (sc.GEN_AI_USAGE_INPUT_TOKENS, sc.ADK_USAGE_INPUT_TOKENS)),
    StepNumber(
        "output_tokens", "model", (sc.GEN_AI_USAGE_OUTPUT_TOKENS, sc.ADK_USAGE_OUTPUT_TOKENS)
    ),
)


@dataclass(frozen=True, slots=True)
class RunFigure:
    """One figure of a run: the invocation span's duration, a sum of step
    numbers, or how many steps are of a kind (one of the three)."""

    name: str
    """The distribution it goes in (an attribute of ``GroupSummary``)."""
    doc: str
    duration: bool = False
    sums: tuple[str, ...] = ()
    """Names of :data:`STEP_NUMBERS`, summed over the run's steps."""
    counts: str | None = None
    """A step kind: how many of the run's steps are of it."""

    def of(
        self, latency_ms: float | None, numbers: Sequence[int], kinds: Mapping[str, int]
    ) -> float | None:
        """The figure of one run: ``numbers`` are its sums of :data:`STEP_NUMBERS`
        (in order), ``kinds`` its step counts by kind; None: the run has none."""
        if self.duration:
            return latency_ms
        if self.counts is not None:
            return kinds.get(self.counts, 0)
        return sum(numbers[NUMBER_INDEX[name]] for name in self.sums)


NUMBER_INDEX = {number.name: index for index, number in enumerate(STEP_NUMBERS)}

FIGURES = (
    RunFigure("latency_ms", "the invocation span's duration, in ms", duration=True),
    RunFigure("input_tokens", "input tokens over its model calls", sums=("input_tokens",)),
    RunFigure("output_tokens", "output tokens over its model calls", sums=("output_tokens",)),
    RunFigure("tokens", "input and output tokens", sums=("input_tokens", "output_tokens")),
    RunFigure("model_calls", "its model spans", counts="model"),
    RunFigure("tool_calls", "its tool spans", counts="tool"),
)
"""Every figure of a run, in the order reports show them."""
