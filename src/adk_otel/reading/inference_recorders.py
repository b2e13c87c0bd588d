"""The recorders of a model call known by name: what cannot be seen during the call.

Any library that records a model call is recognised by what it does while the call runs
(``ledger/inference.py``: a span carrying an inference under the model span, points on another
meter's model-call instruments). This module names the ones that must be known before the call
or that cannot be seen: a recorder to be asked to stand down before the call starts
(Traceloop's key), one whose spans go to a provider adk-otel does not watch (the anthropic
SDK's own), one that records only metrics (LiteLLM's callback), and every one under a trace the
sampler drops (no span is started to be seen). Where a named recorder's span is seen too, what
was seen decides its metrics.

A model call is one inference, and LLM backends add inferences up over spans (tokens, cost,
LLM-call counts) and over the ``gen_ai.client.*`` metrics. When an instrumentation of the
model's client library (google-genai, anthropic, LiteLLM, openai) also records the call, it
opens its own inference span under adk-otel's model span, and both would be counted. So
adk-otel asks, at each model call, whether such a recorder wraps the client method the model
class calls, and if so its model span stays the ADK layer (status, error category, callbacks'
span) while the recorder's span is the inference (see ``attributes.model_opening``).

Recognised by the module of the wrapper around the client method (wrapt's
``_self_wrapper``, or the function's own module), at each layer of the wrappers stacked on it
(``util/wrappers.py``), so no instrumentation package is imported:

=============================================  =======================  ===============
wrapper module                                 wraps                    records metrics
=============================================  =======================  ===============
``opentelemetry.instrumentation.google_genai`` google-genai (Gemini)    yes
``openinference.instrumentation.google_genai`` google-genai (Gemini)    no
``opentelemetry.instrumentation.anthropic``    anthropic (Claude)       yes
``openinference.instrumentation.anthropic``    anthropic (Claude)       no
``opentelemetry.instrumentation.openai_v2``    openai (LiteLLM openai/) duration only
``openinference.instrumentation.litellm``      litellm                  no
``opentelemetry.instrumentation.google_gener`` google-genai (Traceloop) yes
``opentelemetry.instrumentation.litellm``      litellm (Traceloop)      yes
=============================================  =======================  ===============

Traceloop's (``opentelemetry.instrumentation.anthropic``, ``google_generativeai`` and
``litellm``; ``Traceloop.init()`` turns them on) record the metrics unless
``TRACELOOP_METRICS_ENABLED`` was false at their ``instrument()``: that is read off the
instrument their wrapper holds (``_has_token_metric``), and adk-otel records the metrics
where they do not.

Two recorders are not wrappers: the anthropic SDK's own tracing (on by default in anthropic
2.x; ``ANTHROPIC_OPEN_TELEMETRY=false`` turns it off), which records usage on its call span
but no metrics, and LiteLLM's OpenTelemetry callback (``litellm.callbacks = ["otel"]``),
which records the metrics or its own inference span or both, as its environment says.

Where two record one call with a span each (a Traceloop instrumentation and the anthropic SDK's
own tracing, or another instrumentation's wrapper on the same method), Traceloop's, the one that
can be stopped per call, is asked to record nothing of it, by its own key in the call's context
(``STAND_DOWN_KEYS``); the model span names it (``adk.inference.stood_down``) and that is said
once.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from opentelemetry import trace

from .. import settings
from ..util import wrappers
from ..util.redact import guarded

logger: logging.Logger = guarded(logging.getLogger(__name__))
_told: set[Recorder] = set()


@dataclass(frozen=True, slots=True)
class Recorder:
    """A client instrumentation that records a model call as an inference."""

    name: str
    """Its distribution, e.g. ``opentelemetry-instrumentation-google-genai``."""
    records_metrics: bool
    """Whether it records the model-call metrics (token usage, operation duration)."""
    records_span: bool = True
    """Whether its own span is the call's inference (LiteLLM's callback may record only
    metrics: its span is then made only where no parent span is current)."""
    stood_down: str | None = None
    """A second recorder asked to record nothing of this call (``STAND_DOWN_KEYS``)."""


RECORDS_METRICS = frozenset(
    {
        "opentelemetry-instrumentation-google-genai",
        "opentelemetry-instrumentation-anthropic",
        "opentelemetry-instrumentation-openai-v2",
        "opentelemetry-instrumentation-google-generativeai",
        "opentelemetry-instrumentation-litellm",
    }
)
"""The client instrumentations believed to record the model-call metrics themselves, where
what they record cannot be seen (``ledger/inference.py`` reads it off the meters otherwise)."""


def _recorder(name: str) -> Recorder:
    return Recorder(name, records_metrics=name in RECORDS_METRICS)


_BY_MODULE = {
    module: _recorder(name)
    for module, name in (
        (
            "opentelemetry.instrumentation.google_genai",
            "opentelemetry-instrumentation-google-genai",
        ),
        (
            "openinference.instrumentation.google_genai",
            "openinference-instrumentation-google-genai",
        ),
        ("opentelemetry.instrumentation.anthropic", "opentelemetry-instrumentation-anthropic"),
        ("openinference.instrumentation.anthropic", "openinference-instrumentation-anthropic"),
        ("opentelemetry.instrumentation.openai_v2", "opentelemetry-instrumentation-openai-v2"),
        ("openinference.instrumentation.litellm", "openinference-instrumentation-litellm"),
        # Traceloop's (traceloop-sdk's Traceloop.init() turns them on).
        (
            "opentelemetry.instrumentation.google_generativeai",
            "opentelemetry-instrumentation-google-generativeai",
        ),
        ("opentelemetry.instrumentation.litellm", "opentelemetry-instrumentation-litellm"),
    )
}
ANTHROPIC_SDK = _recorder("anthropic")
TRACELOOP_RECORDERS = frozenset(
    {
        "opentelemetry-instrumentation-anthropic",
        "opentelemetry-instrumentation-google-generativeai",
        "opentelemetry-instrumentation-litellm",
    }
)
STAND_DOWN_KEYS = {name: "suppress_language_model_instrumentation" for name in TRACELOOP_RECORDERS}
"""The context key each recorder that can stand down honours: Traceloop's instrumentations
record no call made in a context holding it (``SUPPRESS_LANGUAGE_MODEL_INSTRUMENTATION_KEY``,
the key their own layered instrumentations set so that a call is recorded once)."""
LITELLM_OTEL_CALLBACK = "litellm"


_BY_PATH = {prefix.replace(".", "/"): recorder for prefix, recorder in _BY_MODULE.items()}


def _recorder_of_module(module: object) -> Recorder | None:
    if module.__class__ is not str:
        return None
    for prefix, recorder in _BY_MODULE.items():
        if module.startswith(prefix):
            return recorder
    return None


def _recorder_of_code(function: object) -> Recorder | None:
    """By the file its code is in: a ``functools.wraps`` replacement (OpenTelemetry's
    google-genai instrumentation before 1.0) carries the wrapped function's module."""
    code = getattr(function, "__code__", None)
    filename = getattr(code, "co_filename", None)
    if filename.__class__ is not str:
        return None
    path = filename.replace("\\", "/")
    for prefix, recorder in _BY_PATH.items():
        if prefix in path:
            return recorder
    return None


_wrapped_cache: dict[tuple[type, str], tuple[Any, Recorder | None]] = {}


def wrapping_recorder(owner: type, method: str) -> Recorder | None:
    """The client instrumentation wrapping ``owner.method``, if any (``_recorder_of_function``).

    Cached on the method object itself, so an instrumentation turned on or off later
    (``instrument()``/``uninstrument()`` replace the attribute) is seen at the next call.
    """
    current = owner.__dict__.get(method)
    cached = _wrapped_cache.get((owner, method))
    if cached is not None and cached[0] is current:
        return cached[1]
    found = _recorder_of_function(current)
    _wrapped_cache[(owner, method)] = (current, found)
    return found


def _google_genai(model: Any, streaming: bool) -> Recorder | None:
    module = sys.modules.get("google.genai.models")
    owner = getattr(module, "AsyncModels", None)
    if owner is None:
        return None
    return wrapping_recorder(owner, "generate_content_stream" if streaming else "generate_content")


def _anthropic(model: Any, streaming: bool) -> Recorder | None:
    module = sys.modules.get("anthropic.resources.messages.messages") or sys.modules.get(
        "anthropic.resources.messages"
    )
    owner = getattr(module, "AsyncMessages", None)
    found = wrapping_recorder(owner, "create") if owner is not None else None
    if not _anthropic_sdk_traces(model):
        return found
    if found is None:
        return ANTHROPIC_SDK
    if found.name in STAND_DOWN_KEYS:
        # Both record each call, each with its usage on its own span, and the SDK's cannot be
        # asked to stop: Traceloop's is asked (by its own key), adk-otel records the metrics.
        return replace(ANTHROPIC_SDK, stood_down=found.name)
    return found


def _anthropic_sdk_traces(model: Any) -> bool:
    """Whether the anthropic SDK's own tracing records this model's calls: on in the client ADK
    built (a cached property), else in the environment as a new client would read it, and with
    a provider to record through (its own, or a global one that is set)."""
    client = getattr(model, "__dict__", {}).get("_anthropic_client")
    options = getattr(client, "open_telemetry", None) if client is not None else None
    if options is None:
        tracing = sys.modules.get("anthropic._tracing")
        resolve = getattr(tracing, "resolve_open_telemetry", None)
        if resolve is None:
            return False
        try:
            options = resolve(None)
        except Exception:
            return False
    try:
        if not options["traces"]["enabled"]:
            return False
        if options.get("tracer_provider") is not None:
            return True
    except (AttributeError, KeyError, TypeError):
        return False
    # Else it records through the global provider: into nothing until one is set.
    return not isinstance(
        trace.get_tracer_provider(), trace.ProxyTracerProvider | trace.NoOpTracerProvider
    )


def _litellm(model: Any, streaming: bool) -> Recorder | None:
    # Not imported before the first call under older ADK (its LiteLlm imports it lazily).
    litellm = sys.modules.get("litellm")
    # ADK's lite_llm binds acompletion at import: the instrumentor may have wrapped either.
    adk_lite_llm = sys.modules.get("google.adk.models.lite_llm")
    for function in (
        getattr(adk_lite_llm, "acompletion", None),
        getattr(litellm, "acompletion", None),
    ):
        found = _recorder_of_function(function)
        if found is not None:
            return found
    model_str = str(getattr(model, "model", "") or "")
    if model_str.startswith("openai/"):
        completions = sys.modules.get("openai.resources.chat.completions.completions")
        owner = getattr(completions, "AsyncCompletions", None)
        if owner is not None:
            found = wrapping_recorder(owner, "create")
            if found is not None:
                return found
    for callback in (*getattr(litellm, "callbacks", ()), *getattr(litellm, "success_callback", ())):
        if callback == "otel" or type(callback).__name__ == "OpenTelemetry":
            return _litellm_callback()
    return None


def _litellm_callback() -> Recorder | None:
    """LiteLLM's OpenTelemetry callback, as the environment it reads sets it up: under a
    current span (adk-otel's) it makes its own request span, which carries the usage, only
    with ``USE_OTEL_LITELLM_REQUEST_SPAN``; it records the metrics only with
    ``LITELLM_OTEL_INTEGRATION_ENABLE_METRICS``. Measured with litellm 1.96."""
    span = _env_true(_litellm_request_span)
    metrics = _env_true(_litellm_metrics)
    if not (span or metrics):
        return None
    return Recorder(LITELLM_OTEL_CALLBACK, records_metrics=metrics, records_span=span)


_litellm_request_span = settings.reader(settings.LITELLM_REQUEST_SPAN)
_litellm_metrics = settings.reader(settings.LITELLM_METRICS)


def _env_true(read: Callable[[], str | None]) -> bool:
    return (read() or "").strip().lower() == "true"


def _recorder_of_function(function: Any) -> Recorder | None:
    """The recorder among the wrappers around ``function``. Where two are stacked, each
    recording the call with its span: one that can be asked to stand down (Traceloop's) is,
    and of the others the one that records the metrics too is kept, else the outermost."""
    found: list[Recorder] = []
    for layer in wrappers.layers(function):
        wrapper = getattr(layer, "_self_wrapper", None)  # wrapt's FunctionWrapper
        if wrapper is not None:
            recorder = _recorder_of_module(getattr(wrapper, "__module__", None))
        else:
            recorder = _recorder_of_module(getattr(layer, "__module__", None)) or (
                _recorder_of_code(layer)
            )
            wrapper = layer
        if (
            recorder is not None
            and recorder.name in TRACELOOP_RECORDERS
            and recorder.records_metrics
            and not _has_token_metric(wrapper)
        ):
            recorder = Recorder(recorder.name, records_metrics=False)
        if recorder is not None:
            found.append(recorder)
    if len(found) < 2:
        return found[0] if found else None
    kept = [recorder for recorder in found if recorder.name not in STAND_DOWN_KEYS]
    stoppable = [recorder for recorder in found if recorder.name in STAND_DOWN_KEYS]
    if not kept or not stoppable:
        return next((recorder for recorder in found if recorder.records_metrics), found[0])
    chosen = next((recorder for recorder in kept if recorder.records_metrics), kept[0])
    return replace(chosen, stood_down=stoppable[0].name)


def _has_token_metric(wrapper: Any) -> bool:
    """Whether a Traceloop instrumentation's wrapper holds its token-usage instrument: they
    make none when ``TRACELOOP_METRICS_ENABLED`` is false at their ``instrument()``, and their
    wrapper then holds ``None`` (``token_histogram``, or ``tokens_histogram`` in its
    ``metrics``), so adk-otel records the metric. A wrapper of another shape: assumed to."""
    code = getattr(wrapper, "__code__", None)
    closure = getattr(wrapper, "__closure__", None)
    if code is None or not closure:
        return True
    held = dict(zip(code.co_freevars, closure, strict=False))
    try:
        if "token_histogram" in held:
            instrument = held["token_histogram"].cell_contents
        elif "metrics" in held and isinstance(held["metrics"].cell_contents, dict):
            instrument = held["metrics"].cell_contents.get("tokens_histogram")
        else:
            return True
    except ValueError:  # an empty cell
        return True
    return instrument is not None


_BY_KIND = {"google": _google_genai, "anthropic": _anthropic, "litellm": _litellm}
RECORDED_KINDS = frozenset(_BY_KIND)
"""The model-class kinds whose client library an instrumentation may record."""


def inference_recorder(kind: str, model: Any, *, streaming: bool) -> Recorder | None:
    """The client instrumentation that records this model call's inference, if any
    (``kind``: the model class's provider kind, as ``attributes`` tells it)."""
    check = _BY_KIND.get(kind)
    if check is None:
        return None
    try:
        recorder = check(model, streaming)
    except Exception:  # another library's object of an unexpected shape: nothing known
        return None
    if recorder is not None and recorder.stood_down is not None:
        _say_stood_down(recorder)
    return recorder


def _say_stood_down(recorder: Recorder) -> None:
    """Say once, for each pair, that a recorder is asked to stand down and how to keep it."""
    if recorder in _told:  # a frozen Recorder names the pair: no string made per call
        return
    _told.add(recorder)
    sdk = recorder.name == ANTHROPIC_SDK.name
    logger.warning(
        "adk-otel: %s and %s both record each of ADK's model calls; adk-otel asks %s to "
        "record none of them (by Traceloop's own context key), so each is counted once (%s "
        "keeps Traceloop's instead)",
        recorder.stood_down,
        "the anthropic SDK's own tracing" if sdk else recorder.name,
        recorder.stood_down,
        "ANTHROPIC_OPEN_TELEMETRY=false" if sdk else f"uninstrumenting {recorder.name}",
    )
