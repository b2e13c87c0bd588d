"""Where spans go: the tracer provider and the ADK-scope policy.

* A provider handed in is used as is.
* Otherwise an SDK provider already installed globally (by the application,
  ``opentelemetry-instrument`` or ``adk web``) is reused, never replaced (the
  one ADK's server built from ``OTEL_*`` alone has its OTLP export taken over
  by adk-otel's processor: ``adopt.py``).
* Otherwise one is built from the standard ``OTEL_*`` environment variables
  (service name, resource attributes, sampler, OTLP endpoint, protocol,
  headers, timeout), with a random ``service.instance.id`` unless one is set,
  exporting over OTLP with a batch processor, and installed globally so ADK
  and other libraries share it.

ADK also emits its own spans (scope ``gcp.vertex.agent``). On the providers
adk-otel builds or routes, ADK's scope is answered by the tracer registered for
it in ``scope_tracers.py`` (the lifecycle's node tracer, which gives ADK's
workflow nodes spans in adk-otel's tree and records none of ADK's duplicates of
adk-otel's layers); the tracer ADK already took from a provider set before its
import is answered for in place (``held_tracer.py``). ADK's own spans are kept
only when asked (``keep_adk_spans=True`` or ``ADK_OTEL_KEEP_ADK_SPANS=true``),
under ADK's web/API server too: its dev UI is drawn from adk-otel's spans there
(``integrations/devui.py``), and for a Runner adk-otel does not trace. When
ADK's tracer cannot be answered for, ADK's spans are kept and one warning says
why (never less than ADK alone). The A2A SDK's internal spans (scope
``a2a-python-sdk``, dozens per remote call) are switched off through the SDK's
tracer configurator unless ``ADK_OTEL_KEEP_A2A_SPANS=true``. A span processor a
platform swaps in later is followed (``processor_swap.py``).
Bad configuration is reported with a warning naming the variable; it
never stops the agent (``otel_env.py``). The batch processor is described in
``export.py``.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk._logs import LogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter

from .. import settings
from ..semconv import A2A_SDK_SCOPE, ADK_SCOPE, INSTRUMENTATION_SCOPE
from ..util import wrappers
from ..util.redact import guarded
from ..version import __version__
from . import adk_scope, adopt, held_tracer, scope_tracers
from .export import ExportingProcessor, batch_settings
from .instance import with_instance_id
from .otel_env import (
    FILE_EXPORTER,
    console_exporter_from_env,
    exporter_from_entry_point,
    named_exporters_from_env,
    otlp_exporter_from_env,
    otlp_log_exporter_from_env,
    sampler_from_env,
)
from .routed_tracer import RoutedTracer

logger: logging.Logger = guarded(logging.getLogger("adk_otel.pipeline"))

_SUPPRESSING = "_adk_otel_suppresses_adk_scope"
_build_lock = threading.Lock()
_built: dict[str, Any] = {}
"""The tracer provider adk-otel built and installed (``tracer``), and the
logger provider it built beside it when first needed (``logger``)."""
_told = {"unanswered": False}
"""Warnings said once per process."""
_unswitchable: set[int] = set()
"""Providers already warned about: their SDK cannot switch a scope off."""
_files_added: set[tuple[int, str]] = set()
"""(provider, traces file) pairs already exporting to that file."""


@dataclass(frozen=True)
class TelemetrySettings:
    tracer_provider: trace.TracerProvider | None = None
    keep_adk_spans: bool | None = None
    meter_provider: Any = None
    """Where metrics go (see ``ledger/metrics.py``); None: the global meter provider."""
    logger_provider: Any = None
    """Where the details event goes as a log record (see ``details.py``)."""
    details_as_span_event: bool | None = None
    traces_file: str | None = None
    """Where spans are also appended as OTLP JSON lines (``instrument(traces_file=...)``)."""


def resolve_tracer(telemetry: TelemetrySettings) -> trace.Tracer:
    """The tracer adk-otel's spans are made with, pipeline set up if needed."""
    provider = telemetry.tracer_provider or global_tracer_provider()
    if telemetry.tracer_provider is None:
        adopt.take_over(provider)  # ADK's server built it from OTEL_* alone (adopt.py)
    if telemetry.traces_file:
        add_traces_file(provider, telemetry.traces_file)
    keep = keep_adk_spans(telemetry.keep_adk_spans)
    if isinstance(provider, AdkOtelTracerProvider):
        provider.keep_adk_spans(keep)
    else:
        sdk = sdk_provider_of(provider)
        if sdk is not None:
            route_adk_scope(sdk, route=not keep)
    answer_adk_tracer(keep=keep)
    if keep and adk_scope.switch_on(
        provider, "tracer", scopes=frozenset({ADK_SCOPE}), marker=_SUPPRESSING
    ):
        # Asked to keep them on a provider where an earlier default switched them off.
        logger.info("adk-otel: ADK's own spans switched back on for this provider")
    if not settings.load(settings.KEEP_A2A_SPANS, warn=logger.warning):
        suppress_scopes(sdk_provider_of(provider) or provider, frozenset({A2A_SDK_SCOPE}))
    return provider.get_tracer(INSTRUMENTATION_SCOPE, __version__)


def answer_adk_tracer(*, keep: bool) -> bool | None:
    """Answer for the tracer ADK holds (``held_tracer.py``): ADK's workflow
    nodes get spans in adk-otel's tree, and ADK's duplicates of adk-otel's
    layers are not recorded, whoever set the provider up and in which order.
    When it cannot be answered for, ADK's own spans stay (never less than ADK
    alone shows), and one warning says why. True, False, or None while ADK
    holds no tracer yet."""
    answered = held_tracer.answer(native=keep)
    if answered is False and not keep and not _told["unanswered"]:
        _told["unanswered"] = True
        logger.warning(
            "adk-otel: ADK's tracer (a %s) cannot be answered for, so ADK's own spans are "
            "kept beside adk-otel's (workflow nodes included). Another library may have "
            "replaced ADK's tracer: instrument ADK with one library only "
            "(OTEL_PYTHON_DISABLED_INSTRUMENTATIONS names the other)",
            held_tracer.describe(held_tracer.held()),
        )
    return answered


def add_traces_file(provider: trace.TracerProvider, path: str) -> bool:
    """Append the spans of ``provider`` to ``path`` as OTLP JSON lines (the
    ``otlp_json_file`` exporter, batched as OTLP is), once per provider and
    file; False with a warning when the provider is not the SDK's."""
    sdk = sdk_provider_of(provider)
    if sdk is None:
        logger.warning(
            "adk-otel: traces_file=%r: the tracer provider (a %s) is not the OpenTelemetry "
            "SDK's, so no file exporter can be added to it",
            path,
            type(provider).__name__,
        )
        return False
    key = (id(sdk), os.path.abspath(path))
    with _build_lock:
        if key in _files_added:
            return True
        exporter = exporter_from_entry_point(FILE_EXPORTER, path=path)
        if exporter is None:
            return False
        _files_added.add(key)
    sdk.add_span_processor(ExportingProcessor(exporter, **batch_settings()))
    return True


def sdk_provider_of(provider: Any) -> TracerProvider | None:
    """The SDK provider behind ``provider``: itself, or the SDK provider the
    wrappers around it delegate to (logfire's global provider keeps it as
    ``provider``: ``util/wrappers.py``), else None."""
    return wrappers.inner(provider, TracerProvider)


def keep_adk_spans(explicit: bool | None) -> bool:
    """The argument, else ``ADK_OTEL_KEEP_ADK_SPANS`` (true or false), else
    off: one span per operation on every path, ``adk web`` included."""
    return settings.load(settings.KEEP_ADK_SPANS, explicit)


def global_tracer_provider() -> trace.TracerProvider:
    """The global provider; built from ``OTEL_*`` and installed if none is set."""
    with _build_lock:
        current = trace.get_tracer_provider()
        if not isinstance(current, trace.ProxyTracerProvider):
            return current
        if settings.load(settings.SDK_DISABLED).lower() == "true":
            return trace.NoOpTracerProvider()
        provider = build_tracer_provider()
        trace.set_tracer_provider(provider)
        _built["tracer"] = provider
        return trace.get_tracer_provider()


def built_logger_provider() -> Any:
    """A logger provider exporting over OTLP (``OTEL_EXPORTER_OTLP_*``, as the
    spans), built and installed globally when adk-otel built the tracer
    provider itself and no global logger provider is set; else None."""
    with _build_lock:
        if "logger" in _built or "tracer" not in _built:
            return _built.get("logger")
        from opentelemetry._logs import get_logger_provider, set_logger_provider
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

        provider = LoggerProvider(resource=_built["tracer"].resource)
        exporter = otlp_log_exporter_from_env()
        if exporter is not None:
            provider.add_log_record_processor(
                _WithoutScope(BatchLogRecordProcessor(exporter), ADK_SCOPE)
            )
        set_logger_provider(provider)
        _built["logger"] = get_logger_provider()
        return _built["logger"]


class AdkOtelTracerProvider(TracerProvider):
    """The SDK's tracer provider, except that ADK's own scope gets adk-otel's
    node tracer (the tracer registered for that scope, ``scope_tracers.py``):
    ADK's workflow node spans join the run's tree and its duplicates of
    adk-otel's layers are not recorded.

    adk-otel builds one when no provider is installed. An application that
    builds its own provider makes this one (same arguments as the SDK's) to
    get workflow node spans; the standard ``OTEL_PYTHON_TRACER_PROVIDER=adk_otel``
    makes the OpenTelemetry API build it from ``OTEL_*`` on first use (for
    ``adk web`` and ``adk api_server``, which build their own otherwise).
    ``keep_adk_spans=True`` gives ADK its own tracer back."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._adk_node_tracer: RoutedTracer | None = None
        self._keep_adk_spans = False

    def keep_adk_spans(self, keep: bool) -> None:
        """True: ADK records its own spans (its tracer as the SDK made it)."""
        self._keep_adk_spans = keep
        if self._adk_node_tracer is not None:
            self._adk_node_tracer.native = keep

    def get_tracer(
        self,
        instrumenting_module_name: str,
        instrumenting_library_version: str | None = None,
        schema_url: str | None = None,
        attributes: Any = None,
    ) -> trace.Tracer:
        tracer = super().get_tracer(
            instrumenting_module_name, instrumenting_library_version, schema_url, attributes
        )
        if instrumenting_module_name != ADK_SCOPE:
            return tracer
        if self._adk_node_tracer is None:
            factory = scope_tracers.factory_for(ADK_SCOPE)
            if factory is None:
                return tracer  # nothing answers ADK's scope: the SDK's tracer
            node_tracer = factory(tracer)
            node_tracer.native = self._keep_adk_spans
            self._adk_node_tracer = node_tracer
        return self._adk_node_tracer


class _RoutedTracers(dict[Any, Any]):
    """An SDK provider's tracer cache that answers ADK's scope with adk-otel's
    node tracer (see :func:`route_adk_scope`)."""

    def __init__(self, tracers: dict[Any, Any], node_tracer: RoutedTracer) -> None:
        super().__init__(tracers)
        self.node_tracer = node_tracer
        self.routing = True

    def __contains__(self, scope: object) -> bool:
        if self.routing and getattr(scope, "name", None) == ADK_SCOPE:
            return True
        return super().__contains__(scope)

    def __getitem__(self, scope: Any) -> Any:
        if self.routing and getattr(scope, "name", None) == ADK_SCOPE:
            return self.node_tracer
        return super().__getitem__(scope)


def route_adk_scope(provider: TracerProvider, *, route: bool) -> bool:
    """Give ADK's scope adk-otel's node tracer on an SDK provider
    adk-otel did not build (ADK's servers build their own; so may the
    application), as :class:`AdkOtelTracerProvider` does on its own: workflow
    nodes then get spans in adk-otel's tree. The SDK has no public way to
    choose the tracer of one scope, so its tracer cache is given one that
    answers that scope (as ``adopt.py`` edits ADK's server provider's
    processors). A tracer ADK obtained before this ran stays as it was (node
    spans are then missing, and the plugin says so once). ``route=False``
    (ADK's own spans kept) hands ADK the SDK's tracer again. Never raises;
    False when the provider's cache is not the SDK's usual dict, or when no
    tracer is registered for ADK's scope (``scope_tracers.py``)."""
    try:
        with provider._tracers_lock:
            tracers = provider._tracers
            if isinstance(tracers, _RoutedTracers):
                tracers.routing = route
                # A node tracer ADK already holds passes its calls on to the SDK's.
                tracers.node_tracer.native = not route
                return True
            if not route:
                return False
            if type(tracers) is not dict:
                return False
        factory = scope_tracers.factory_for(ADK_SCOPE)
        if factory is None:
            return False
        node_tracer = factory(provider.get_tracer(ADK_SCOPE))
        with provider._tracers_lock:
            provider._tracers = _RoutedTracers(provider._tracers, node_tracer)
        return True
    except Exception:
        logger.debug("adk-otel: routing ADK's scope failed", exc_info=True)
        return False


def route_global_adk_scope() -> None:
    """ADK's node tracing takes its tracer from the *global* provider, even when
    adk-otel's spans go to a provider handed in (a test's capture): make the
    global one answer ADK's scope. With none installed, an
    :class:`AdkOtelTracerProvider` with no processor is installed: it exports
    nothing, and the node spans it routes are made on the handed-in provider."""
    with _build_lock:
        current = trace.get_tracer_provider()
        if isinstance(current, trace.ProxyTracerProvider):
            trace.set_tracer_provider(AdkOtelTracerProvider())
            return
    if isinstance(current, TracerProvider) and not isinstance(current, AdkOtelTracerProvider):
        route_adk_scope(current, route=True)


def provider_from_env() -> AdkOtelTracerProvider:
    """The provider the OpenTelemetry API builds for
    ``OTEL_PYTHON_TRACER_PROVIDER=adk_otel`` (an ``opentelemetry_tracer_provider``
    entry point): :func:`build_tracer_provider`."""
    return build_tracer_provider()


def build_tracer_provider(exporter: SpanExporter | None = None) -> AdkOtelTracerProvider:
    """An SDK provider from the environment (sampler from ``OTEL_TRACES_SAMPLER``
    / ``_ARG``), exporting through an :class:`ExportingProcessor`, with ADK's
    node spans in adk-otel's tree (:class:`AdkOtelTracerProvider`)."""
    provider = AdkOtelTracerProvider(
        resource=with_instance_id(Resource.create()), sampler=sampler_from_env()
    )
    exporters = [exporter]
    if exporter is None:
        console = console_exporter_from_env()  # OTEL_TRACES_EXPORTER=otlp,console
        if console is not None:
            provider.add_span_processor(SimpleSpanProcessor(console))
        exporters = [otlp_exporter_from_env(), *named_exporters_from_env()]
    made = [exporter for exporter in exporters if exporter is not None]
    settings = batch_settings() if made else {}
    for each in made:
        provider.add_span_processor(ExportingProcessor(each, **settings))
    return provider


class _WithoutScope(LogRecordProcessor):
    """A log record processor passing on every record except one scope's:
    ADK's own log events (scope ``gcp.vertex.agent``), which repeat the
    details event, never went anywhere before this provider existed."""

    def __init__(self, inner: Any, scope: str) -> None:
        self._inner = inner
        self._scope = scope

    def on_emit(self, log_record: Any) -> None:
        scope = getattr(log_record, "instrumentation_scope", None)
        if getattr(scope, "name", None) != self._scope:
            self._inner.on_emit(log_record)

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return bool(self._inner.force_flush(timeout_millis))


def exporting_processor(provider: Any) -> ExportingProcessor | None:
    """The :class:`ExportingProcessor` of a provider built here, if any."""
    active = getattr(provider, "_active_span_processor", None)
    for processor in getattr(active, "_span_processors", ()):
        if isinstance(processor, ExportingProcessor):
            return processor
    return None


def suppress_adk_spans(provider: Any) -> bool:
    """Switch ADK's own spans off on ``provider``; False when it cannot."""
    return suppress_scopes(provider, frozenset({ADK_SCOPE}))


def suppress_scopes(provider: Any, scopes: frozenset[str], *, warn: bool = True) -> bool:
    """Switch the spans of ``scopes`` off on ``provider``; False when it cannot
    (said once per provider unless ``warn`` is False: ADK's scope routed to
    adk-otel's tracer needs no switching off)."""
    try:
        from opentelemetry.sdk.trace import _TracerConfig
    except ImportError:
        switched = False
    else:
        switched = adk_scope.switch_off(
            provider,
            "tracer",
            scopes=scopes,
            disabled=_TracerConfig(is_enabled=False),
            default=_TracerConfig.default,
            marker=_SUPPRESSING,
        )
    if (
        warn
        and not switched
        and isinstance(provider, TracerProvider)
        and id(provider) not in _unswitchable
    ):
        _unswitchable.add(id(provider))
        what = (
            "ADK's own spans"
            if scopes == {ADK_SCOPE}
            else "the spans of " + ", ".join(sorted(scopes))
        )
        logger.warning(
            "adk-otel: this opentelemetry-sdk (%s) cannot switch %s off: its tracer "
            "configurator (_set_tracer_configurator, _TracerConfig: an experimental API, "
            "in 1.40 to 1.44 at least) is missing or refused; they will be recorded "
            "alongside adk-otel's spans",
            _sdk_version(),
            what,
        )
    return switched


def _sdk_version() -> str:
    try:
        from importlib.metadata import version

        return version("opentelemetry-sdk")
    except Exception:
        return "unknown version"
