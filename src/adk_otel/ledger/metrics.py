"""The metric instruments and what they record, in the GenAI conventions'
names, units and bucket advice (only with a meter provider):
``gen_ai.client.operation.duration``, ``gen_ai.client.token.usage``,
``gen_ai.invoke_agent.duration``, ``gen_ai.execute_tool.duration`` for
operations that ended ok or in error (with ``error.type``), and
``adk.invocation.count`` for every run by outcome; for streamed model calls
``gen_ai.client.operation.time_to_first_chunk`` and ``.time_per_output_chunk``
(ADK records neither, so these are always adk-otel's). Under
``OTEL_SEMCONV_STABILITY_OPT_IN`` (pipeline/stability.py) the model-call ones
take the current conventions' ``gen_ai.client.inference.*`` names and token
counters. Recorded as each span ends (telemetry.py), from its facts (facts.py).

ADK records the four ``gen_ai`` streams itself (meter scope
``gcp.vertex.agent``, global meter provider). To avoid doubles, ADK's meter is
switched off there through the SDK's meter configurator whenever adk-otel
records them; where it cannot be, or ``ADK_OTEL_KEEP_ADK_METRICS=true`` keeps
it, adk-otel leaves those streams to ADK and records ``adk.invocation.count``
only, plus, under the opt-in, the model-call instruments in their current names
that ADK's meter does not have: which names ADK records is read off its meter on
the provider (ADK 2.15 has the current token and chunk names too; earlier
releases none), never off its version, so no name has two streams for one call.
"""

from __future__ import annotations

import contextlib
import logging
import time
import weakref
from collections.abc import Mapping
from typing import Any

from opentelemetry import metrics
from opentelemetry.util.types import AttributeValue

from .. import semconv as sc
from .. import settings
from ..pipeline import adk_scope
from ..semconv import Outcome
from ..util.redact import guarded
from ..version import __version__
from .facts import AGENT, INVOCATION, MODEL, TOOL, Facts, dimensions
from .inference import duration_recorded_elsewhere
from .spans import error_type

logger: logging.Logger = guarded(logging.getLogger(__name__))

_SUPPRESSING = "_adk_otel_suppresses_adk_meter"

# Bucket advice from the GenAI metric conventions.
DURATION_BUCKETS = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
AGENT_DURATION_BUCKETS = (
    0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 102.4, 204.8, 409.6,
)  # fmt: skip
TOKEN_BUCKETS = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip


class Instruments:
    """The metric instruments of one meter provider, created once per
    conventions version (``latest``: ``OTEL_SEMCONV_STABILITY_OPT_IN``)."""

    def __init__(
        self,
        meter: metrics.Meter,
        *,
        overlapping: bool,
        latest: bool = False,
        adk_records: frozenset[str] = frozenset(),
    ) -> None:
        self.overlapping: bool = overlapping
        """False when ADK records its GenAI streams itself."""
        self.provider: Any = None
        """The meter provider the instruments are on."""
        self.latest: bool = latest
        # The names of the instruments ADK's own meter records into the same
        # provider (none when it is switched off): those streams stay ADK's.
        own = frozenset(name for name in _LATEST_MODEL_CALL_NAMES if name not in adk_records)
        self.invocations: metrics.Counter = meter.create_counter(
            sc.METRIC_INVOCATION_COUNT,
            unit="{invocation}",
            description="Agent runs (Runner.run_async / run_live calls), by outcome.",
        )
        self.failures: metrics.Counter = meter.create_counter(
            sc.METRIC_FAILURE_COUNT,
            unit="{failure}",
            description="Spans that ended in error, by layer and failure category.",
        )
        # The streaming metrics: adk-otel's unless ADK's meter has them (ADK
        # records none in the earlier names).
        first_chunk = (
            sc.METRIC_CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK
            if latest
            else sc.METRIC_CLIENT_TIME_TO_FIRST_CHUNK
        )
        per_chunk = (
            sc.METRIC_CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK
            if latest
            else sc.METRIC_CLIENT_TIME_PER_OUTPUT_CHUNK
        )

        def seconds_unless_adks(name: str, description: str) -> metrics.Histogram | None:
            """A histogram in seconds, or None where ADK's own meter records that name."""
            if name in adk_records:
                return None
            return meter.create_histogram(
                name,
                unit="s",
                description=description,
                explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
            )

        self.time_to_first_chunk: metrics.Histogram | None = seconds_unless_adks(
            first_chunk, "Time to receive the first chunk of a streamed model response."
        )
        self.time_per_output_chunk: metrics.Histogram | None = seconds_unless_adks(
            per_chunk, "Time between consecutive chunks of a streamed model response."
        )
        self.token_usage: metrics.Histogram | None = None
        self.usage: dict[str, metrics.Counter] = {}
        """Span usage attribute -> its usage counter (latest conventions)."""
        self.per_call: dict[str, metrics.Histogram] = {}
        """Span usage attribute -> its per-call histogram (latest conventions)."""
        self.model_calls: bool = overlapping or latest
        """Whether model-call durations and tokens are recorded: under the
        latest conventions, those of their names ADK's meter does not have
        are recorded even when ADK keeps its own streams."""
        self.operation_duration: metrics.Histogram | None = None
        if latest:
            if sc.METRIC_CLIENT_INFERENCE_DURATION in own:
                self.operation_duration = meter.create_histogram(
                    sc.METRIC_CLIENT_INFERENCE_DURATION,
                    unit="s",
                    description="GenAI inference operation duration.",
                    explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
                )
            self.usage = {
                attribute: meter.create_counter(name, unit="{token}", description=description)
                for attribute, name, description in _USAGE_COUNTERS
                if name in own
            }
            self.per_call = {
                attribute: meter.create_histogram(
                    name,
                    unit="{token}",
                    description=description,
                    explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
                )
                for attribute, name, description in _PER_CALL_HISTOGRAMS
                if name in own
            }
        elif overlapping:
            self.operation_duration = meter.create_histogram(
                sc.METRIC_CLIENT_OPERATION_DURATION,
                unit="s",
                description="GenAI operation duration.",
                explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
            )
            self.token_usage = meter.create_histogram(
                sc.METRIC_CLIENT_TOKEN_USAGE,
                unit="{token}",
                description="Number of input and output tokens used.",
                explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
            )
        if not overlapping:
            return
        self.agent_duration: metrics.Histogram = meter.create_histogram(
            sc.METRIC_INVOKE_AGENT_DURATION,
            unit="s",
            description="The end-to-end duration of a single agent invocation.",
            explicit_bucket_boundaries_advisory=AGENT_DURATION_BUCKETS,
        )
        self.tool_duration: metrics.Histogram = meter.create_histogram(
            sc.METRIC_EXECUTE_TOOL_DURATION,
            unit="s",
            description="The duration of a single tool execution.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )


# The latest conventions' token instruments: (span usage attribute, name, description).
# Under the opt-in the span carries cache writes as ``cache_write`` (pipeline/stability.py).
_USAGE_COUNTERS = (
    (
        sc.GEN_AI_USAGE_INPUT_TOKENS,
        sc.METRIC_USAGE_INPUT_TOKENS,
        "The number of input (prompt) tokens used, including cached tokens.",
    ),
    (
        sc.GEN_AI_USAGE_OUTPUT_TOKENS,
        sc.METRIC_USAGE_OUTPUT_TOKENS,
        "The number of output (completion) tokens used, including reasoning tokens.",
    ),
    (
        sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
        sc.METRIC_USAGE_CACHE_READ_INPUT_TOKENS,
        "The number of input tokens served from a provider-managed cache.",
    ),
    (
        sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS,
        sc.METRIC_USAGE_CACHE_WRITE_INPUT_TOKENS,
        "The number of input tokens written to a provider-managed cache.",
    ),
    (
        sc.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
        sc.METRIC_USAGE_REASONING_OUTPUT_TOKENS,
        "The number of output tokens used for reasoning.",
    ),
)
_PER_CALL_HISTOGRAMS = (
    (
        sc.GEN_AI_USAGE_INPUT_TOKENS,
        sc.METRIC_OPERATION_INPUT_TOKENS,
        "The number of input (prompt) tokens used per inference operation.",
    ),
    (
        sc.GEN_AI_USAGE_OUTPUT_TOKENS,
        sc.METRIC_OPERATION_OUTPUT_TOKENS,
        "The number of output (completion) tokens used per inference operation.",
    ),
)
_LATEST_MODEL_CALL_NAMES = frozenset(
    {
        sc.METRIC_CLIENT_INFERENCE_DURATION,
        *(name for _, name, _ in _USAGE_COUNTERS),
        *(name for _, name, _ in _PER_CALL_HISTOGRAMS),
    }
)
"""The model-call instruments in the latest conventions' names that adk-otel
records beside ADK's kept streams, unless ADK's meter has them too."""


def adk_instrument_names(provider: Any) -> frozenset[str]:
    """The names of the instruments ADK's meter (scope ``gcp.vertex.agent``)
    has on the SDK's ``provider``: the streams ADK records there itself. Empty
    for a provider that does not say (not the SDK's); adk-otel then assumes
    ADK records its earlier names only, as every release before 2.15 did."""
    meters = getattr(provider, "_meters", None)
    if not isinstance(meters, Mapping):
        return frozenset()
    names: set[str] = set()
    for scope, meter in list(meters.items()):
        if getattr(scope, "name", None) != sc.ADK_SCOPE:
            continue
        instruments = getattr(meter, "_instrument_id_instrument", None)
        if isinstance(instruments, Mapping):
            for instrument in list(instruments.values()):
                name = getattr(instrument, "name", None)
                if isinstance(name, str):
                    names.add(name)
    return frozenset(names)


_instruments: weakref.WeakKeyDictionary[Any, dict[bool, Instruments]] = weakref.WeakKeyDictionary()


def resolve_instruments(
    explicit: metrics.MeterProvider | None, *, latest: bool = False
) -> Instruments | None:
    """Instruments on the provider passed in, else the global one, in the
    latest conventions' names when ``latest``; ``None`` (no metric work at
    all) when neither is a real provider."""
    provider = explicit if explicit is not None else metrics.get_meter_provider()
    if not _is_real(provider):
        return None
    try:
        by_version = _instruments.get(provider)
    except TypeError:
        by_version = None
    cached = by_version.get(latest) if by_version is not None else None
    if cached is not None:
        return cached
    overlapping = not _adk_meter_active()
    created = Instruments(
        provider.get_meter(sc.INSTRUMENTATION_SCOPE, __version__),
        overlapping=overlapping,
        latest=latest,
        adk_records=(
            frozenset() if overlapping else adk_instrument_names(metrics.get_meter_provider())
        ),
    )
    created.provider = provider
    with contextlib.suppress(TypeError):  # a provider that takes no weak reference
        _instruments.setdefault(provider, {})[latest] = created
    return created


def _is_real(provider: Any) -> bool:
    # The API's placeholders: the proxy before a provider is set, and no-op.
    return provider is not None and type(provider).__name__ not in (
        "_ProxyMeterProvider",
        "ProxyMeterProvider",
        "NoOpMeterProvider",
    )


def keep_adk_metrics() -> bool:
    return settings.load(settings.KEEP_ADK_METRICS, warn=logger.warning)


def _adk_meter_active() -> bool:
    """Whether ADK's own GenAI metrics reach a real provider (after trying to
    switch them off there)."""
    provider = metrics.get_meter_provider()
    if not _is_real(provider):
        return False  # ADK's meter records into nothing
    if keep_adk_metrics():
        return True
    return not suppress_adk_metrics(provider)


def suppress_adk_metrics(provider: Any) -> bool:
    """Switch ADK's meter (scope ``gcp.vertex.agent``) off on ``provider``;
    False when this provider or SDK cannot."""
    try:
        from opentelemetry.sdk.metrics._internal import _MeterConfig
    except ImportError:
        switched = False
    else:
        switched = adk_scope.switch_off(
            provider,
            "meter",
            scopes=frozenset({sc.ADK_SCOPE}),
            disabled=_MeterConfig(is_enabled=False),
            default=_MeterConfig,
            marker=_SUPPRESSING,
        )
    if not switched:
        logger.info(
            "adk-otel: cannot switch ADK's own metrics off on %s; leaving the GenAI "
            "duration and token metrics to ADK",
            type(provider).__name__,
        )
    return switched


def record_usage(
    instruments: Instruments, facts: Facts, attributes: Mapping[str, AttributeValue]
) -> None:
    """A model call's token usage, from its final response attributes."""
    dims = dimensions(facts)
    if instruments.latest:
        _record_latest_usage(instruments, attributes, dims)
        return
    assert instruments.token_usage is not None
    for key, token_type in (
        (sc.GEN_AI_USAGE_INPUT_TOKENS, "input"),
        (sc.GEN_AI_USAGE_OUTPUT_TOKENS, "output"),
    ):
        value = attributes.get(key)
        if value is not None:
            instruments.token_usage.record(
                value,  # type: ignore[arg-type]
                {**dims, sc.GEN_AI_TOKEN_TYPE: token_type},
            )


def _record_latest_usage(
    instruments: Instruments,
    attributes: Mapping[str, AttributeValue],
    dims: Mapping[str, AttributeValue],
) -> None:
    """A model call's usage as the latest conventions' counters (by modality:
    ADK's usage gives none per category, so ``unknown``) and per-call histograms."""
    counted = {**dims, sc.GEN_AI_TOKEN_MODALITY: sc.TOKEN_MODALITY_UNKNOWN}
    for key, counter in instruments.usage.items():
        value = attributes.get(key)
        if isinstance(value, int):
            counter.add(value, counted)
    for key, histogram in instruments.per_call.items():
        value = attributes.get(key)
        if isinstance(value, int):
            histogram.record(value, dims)


def record_end(
    instruments: Instruments,
    facts: Facts,
    outcome: Outcome,
    error: BaseException | None,
    reason: str | None,
    category: str | None = None,
    extra: Mapping[str, AttributeValue] | None = None,
    ended: int | None = None,
) -> None:
    """A span's metrics, recorded as it ends (``ended``: its end on the metric clock)."""
    dims = dimensions(facts)
    if outcome is Outcome.ERROR:
        dims[sc.ERROR_TYPE] = error_type(error) if error is not None else reason or "_OTHER"
        failed = {**dims, sc.ADK_SPAN_KIND: facts.kind}
        failed[sc.ADK_ERROR_CATEGORY] = category or "other"
        retryable = extra.get(sc.ADK_ERROR_RETRYABLE) if extra else None
        if isinstance(retryable, bool):
            failed[sc.ADK_ERROR_RETRYABLE] = retryable
        instruments.failures.add(1, failed)
    if facts.kind == INVOCATION:
        dims[sc.ADK_OUTCOME] = outcome._value_
        instruments.invocations.add(1, dims)
        return
    if outcome not in (Outcome.OK, Outcome.ERROR):
        return
    if facts.first_chunk is not None:
        # The conventions give the chunk metrics no error.type.
        chunk_dims = {k: v for k, v in dims.items() if k != sc.ERROR_TYPE}
        if instruments.time_to_first_chunk is not None:
            instruments.time_to_first_chunk.record(facts.first_chunk, chunk_dims)
        if instruments.time_per_output_chunk is not None:
            for gap in facts.chunk_gaps or ():
                instruments.time_per_output_chunk.record(gap, chunk_dims)
    seconds = ((ended or time.perf_counter_ns()) - facts.started) / 1e9
    if facts.kind == MODEL:
        duration = instruments.operation_duration
        if (
            duration is not None
            and instruments.model_calls
            and not duration_recorded_elsewhere(facts)
        ):
            duration.record(seconds, dims)
        return
    if not instruments.overlapping:
        return
    if facts.kind == AGENT:
        instruments.agent_duration.record(seconds, dims)
    elif facts.kind == TOOL:
        instruments.tool_duration.record(seconds, dims)
