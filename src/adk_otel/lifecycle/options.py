"""The plugin's options: one frozen :class:`Options`, the keywords of
``instrument()``, ``AdkOtelPlugin`` and ``configure()``
(:class:`OptionArguments`), and what they resolve into: the ledger and the
values the hooks read.

They are resolved when the ledger is first needed, not when the plugin is
built, so a plugin made at import time still picks up the provider, content
settings and environment the application sets up later; ``configure()``
resolves them again for the spans that follow.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any, TypedDict, cast

from opentelemetry import trace

from ..integrations import devui
from ..ledger.metrics import Instruments, resolve_instruments
from ..ledger.spans import Ledger
from ..pipeline import details, stability
from ..pipeline.details import DetailsLog
from ..pipeline.provider import TelemetrySettings, built_logger_provider, resolve_tracer
from ..pipeline.provider_check import usable
from ..reading import user_id as user_ids
from ..reading.content import ContentCapture, ContentSettings, Redactor
from ..reading.content import resolve as resolve_content
from ..reading.failures import ErrorClassifier


class OptionArguments(TypedDict, total=False):
    """The options as keywords of ``instrument()``, ``AdkOtelPlugin`` and
    ``configure()`` (the README's table says what each does); ``None`` or left
    out: not given."""

    tracer_provider: trace.TracerProvider | None
    keep_adk_spans: bool | None
    meter_provider: Any
    capture_content: bool | str | None
    content_max_length: int | None
    redact: Redactor | None
    logger_provider: Any
    details_as_span_event: bool | None
    user_id: str | None
    error_classifier: ErrorClassifier | None
    result_failures: bool | None
    traces_file: str | os.PathLike[str] | None


PROVIDERS = ("tracer_provider", "meter_provider", "logger_provider")
"""The options that hold a provider: objects of one process (threads, locks,
exporters), so never pickled with a plugin (lifecycle/travel.py)."""


@dataclass(frozen=True, slots=True)
class Options:
    """The options given so far; ``None``: not given (the environment or the
    built-in default decides when they are resolved)."""

    tracer_provider: trace.TracerProvider | None = None
    keep_adk_spans: bool | None = None
    meter_provider: Any = None
    capture_content: bool | str | None = None
    content_max_length: int | None = None
    redact: Redactor | None = None
    logger_provider: Any = None
    details_as_span_event: bool | None = None
    user_id: str | None = None
    error_classifier: ErrorClassifier | None = None
    result_failures: bool | None = None
    traces_file: str | None = None
    """Where spans are also appended as OTLP JSON lines, without a collector."""

    def updated(self, given: OptionArguments) -> Options:
        """These options with those ``given`` (``None`` keeps one as it is); a
        provider that cannot be used counts as not given (pipeline/provider_check.py).
        An unknown keyword raises ``TypeError``."""
        unknown = given.keys() - _NAMES
        if unknown:
            raise TypeError(f"adk-otel: no such option: {', '.join(sorted(unknown))}")
        changes: dict[str, Any] = {}
        for name, value in given.items():
            if name in PROVIDERS:
                value = usable(name, value)
            elif name == "traces_file" and value is not None:
                value = str(os.fspath(cast(Any, value)))
            if value is not None:
                changes[name] = value
        return dataclasses.replace(self, **changes) if changes else self

    @property
    def telemetry(self) -> TelemetrySettings:
        """Where spans, metrics and log records go."""
        return TelemetrySettings(
            self.tracer_provider,
            self.keep_adk_spans,
            self.meter_provider,
            self.logger_provider,
            self.details_as_span_event,
            traces_file=self.traces_file,
        )

    @property
    def content(self) -> ContentSettings:
        """What content capture was asked for."""
        return ContentSettings(self.capture_content, self.content_max_length, self.redact)


_NAMES = frozenset(field.name for field in dataclasses.fields(Options))


def given(chosen: Options) -> dict[str, Any]:
    """The options given in ``chosen`` as keywords (``None`` ones left out):
    ``Options().updated(given(chosen)) == chosen``."""
    return {name: value for name in sorted(_NAMES) if (value := getattr(chosen, name)) is not None}


@dataclass(frozen=True, slots=True)
class Resolved:
    """The options resolved against the environment."""

    content: ContentCapture | None
    """Active content policy; None (content capture off) skips all content work."""
    user_id: user_ids.UserIdMode
    """How invocation spans carry the user id (reading/user_id.py)."""
    latest: bool
    """``OTEL_SEMCONV_STABILITY_OPT_IN`` asks for the latest GenAI conventions."""
    tracer: trace.Tracer
    instruments: Instruments | None


def resolve(options: Options) -> Resolved:
    """Resolve the options now: the tracer (the pipeline set up if needed),
    the metric instruments and the values the hooks read."""
    capture = resolve_content(options.content)
    user_id_mode = user_ids.resolve(options.user_id)
    latest = stability.latest_gen_ai()
    return Resolved(
        capture,
        user_id_mode,
        latest,
        resolve_tracer(options.telemetry),
        resolve_instruments(options.meter_provider, latest=latest),
    )


def provider(settings: TelemetrySettings) -> trace.TracerProvider:
    """The tracer provider spans go to: the one given, else the global one."""
    return settings.tracer_provider or trace.get_tracer_provider()


def dev_ui(settings: TelemetrySettings, current: devui.DevUi | None) -> devui.DevUi | None:
    """The dev UI wiring when ADK's dev server reads this provider's spans
    (integrations/devui.py), else None; what waited on a wiring no longer needed ends."""
    if not devui.served(provider(settings)):
        if current is not None:
            current.release_under(None)  # no dev UI any more: end what waits
        return None
    return current if current is not None else devui.DevUi(Ledger.annotate)


def details_log(capture: ContentCapture | None, settings: TelemetrySettings) -> DetailsLog | None:
    """Where model calls' details events go as log records; None when
    content capture has no EVENT mode, or they go as span events."""
    if capture is None or not capture.on_event:
        return None
    if details.as_span_event(settings.details_as_span_event):
        return None
    log = details.resolve_logger(settings.logger_provider, built_logger_provider())
    return DetailsLog(log) if log is not None else None
