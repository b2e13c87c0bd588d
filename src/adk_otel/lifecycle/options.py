"""The plugin's options: the keywords of ``instrument()``, ``AdkOtelPlugin``
and ``configure()`` given so far (one frozen :class:`Options`; each keyword is
declared once, in settings.py), and what they resolve into: the ledger and the
values the hooks read.

They are resolved when the ledger is first needed, not when the plugin is
built, so a plugin made at import time still picks up the provider, content
settings and environment the application sets up later; ``configure()``
resolves them again for the spans that follow.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from opentelemetry import trace

from .. import settings
from ..integrations import devui
from ..ledger.metrics import Instruments, resolve_instruments
from ..ledger.spans import Ledger
from ..pipeline import details, stability
from ..pipeline.details import DetailsLog
from ..pipeline.provider import TelemetrySettings, built_logger_provider, resolve_tracer
from ..pipeline.provider_check import usable
from ..reading import user_id as user_ids
from ..reading.content import ContentCapture, ContentSettings
from ..reading.content import resolve as resolve_content
from ..settings import OPTIONS, PROVIDERS, OptionArguments, Setting

T = TypeVar("T")

__all__ = ["PROVIDERS", "OptionArguments", "Options", "Resolved", "given", "resolve"]


@dataclass(frozen=True, slots=True)
class Options:
    """The options given so far, by keyword; one not given is absent (the
    environment or the built-in default decides when it is resolved:
    ``settings.load``)."""

    chosen: Mapping[str, Any] = field(default_factory=dict)

    def __getitem__(self, setting: Setting[T]) -> T | None:
        """The value given for ``setting``'s keyword, or None."""
        return self.chosen.get(setting.argument or "")

    def updated(self, given: OptionArguments | Mapping[str, Any]) -> Options:
        """These options with those ``given`` (``None`` keeps one as it is); a
        provider that cannot be used counts as not given (pipeline/provider_check.py).
        An unknown keyword raises ``TypeError``."""
        unknown = given.keys() - OPTIONS.keys()
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
        return Options({**self.chosen, **changes}) if changes else self

    @property
    def telemetry(self) -> TelemetrySettings:
        """Where spans, metrics and log records go."""
        return TelemetrySettings(
            self[settings.TRACER_PROVIDER],
            self[settings.KEEP_ADK_SPANS],
            self[settings.METER_PROVIDER],
            self[settings.LOGGER_PROVIDER],
            self[settings.DETAILS_AS_SPAN_EVENT],
            traces_file=self[settings.TRACES_FILE],
        )

    @property
    def content(self) -> ContentSettings:
        """What content capture was asked for."""
        return ContentSettings(
            self[settings.CAPTURE_CONTENT],
            self[settings.CONTENT_MAX_LENGTH],
            self[settings.REDACT],
        )


def given(chosen: Options) -> dict[str, Any]:
    """The options given in ``chosen`` as keywords (``None`` ones left out):
    ``Options().updated(given(chosen)) == chosen``."""
    return {name: chosen.chosen[name] for name in sorted(chosen.chosen)}


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
    user_id_mode = user_ids.resolve(options[settings.USER_ID])
    latest = stability.latest_gen_ai()
    return Resolved(
        capture,
        user_id_mode,
        latest,
        resolve_tracer(options.telemetry),
        resolve_instruments(options[settings.METER_PROVIDER], latest=latest),
    )


def provider(telemetry: TelemetrySettings) -> trace.TracerProvider:
    """The tracer provider spans go to: the one given, else the global one."""
    return telemetry.tracer_provider or trace.get_tracer_provider()


def dev_ui(telemetry: TelemetrySettings, current: devui.DevUi | None) -> devui.DevUi | None:
    """The dev UI wiring when ADK's dev server reads this provider's spans
    (integrations/devui.py), else None; what waited on a wiring no longer needed ends."""
    if not devui.served(provider(telemetry)):
        if current is not None:
            current.release_under(None)  # no dev UI any more: end what waits
        return None
    return current if current is not None else devui.DevUi(Ledger.annotate)


def details_log(capture: ContentCapture | None, telemetry: TelemetrySettings) -> DetailsLog | None:
    """Where model calls' details events go as log records; None when
    content capture has no EVENT mode, or they go as span events."""
    if capture is None or not capture.on_event:
        return None
    if settings.load(settings.DETAILS_AS_SPAN_EVENT, telemetry.details_as_span_event):
        return None
    log = details.resolve_logger(telemetry.logger_provider, built_logger_provider())
    return DetailsLog(log) if log is not None else None
