"""Every setting adk-otel reads, declared once: the keyword of ``instrument()``
(if it has one), the environment variables, the default, the kind of value
and one line of doc. ``load`` resolves one: the keyword given, else the first
of its variables set, else the default.

This module is the only reader of the environment in the runtime; each
setting is read by its one consumer, when it resolves (never on a hook's hot
path, except through :func:`watch`, made for it). docs/configuration.md's
table is :func:`markdown_table`'s output, checked by a test. A new option is
a :class:`Setting` here, a line in :class:`OptionArguments`, and the code that
reads it.

A bad value never raises: it is reported through ``warn`` (the consumer's
logger, or once per message on this module's), naming the variable or
keyword, and the default is used.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypedDict, TypeVar

from opentelemetry.trace import TracerProvider

logger: logging.Logger = logging.getLogger(__name__)

T = TypeVar("T")
Warn = Callable[..., Any]
Redactor = Callable[[str, str], "str | None"]
"""``redact(key, value)``: the value to keep, rewritten or not, or None to drop it."""
ErrorClassifier = Callable[[Any, str], "str | None"]
"""``(exception or tool result, layer) -> category or None``; the layer is
``adk.span.kind``'s value: ``tool``, ``model``, ``agent`` or ``invocation``."""

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class Kind(StrEnum):
    """How a variable's text becomes a value."""

    FLAG = "flag"
    """``true``/``false`` (also 1/0, yes/no, on/off); anything else is reported."""
    COUNT = "count"
    """A positive integer, at most ``maximum``; anything else is reported."""
    TEXT = "text"
    """The text as set (stripped); its consumer interprets it."""
    LIST = "list"
    """A comma-separated list, each entry stripped, empty ones left out."""
    OBJECT = "object"
    """A keyword only: an object no variable can hold (a provider, a callable)."""


class Reader(StrEnum):
    """Who acts on a variable."""

    ADK_OTEL = "adk-otel"
    SDK = "OpenTelemetry"
    """Read by the SDK's exporters and providers themselves; adk-otel reads
    some of them too, to check them or to find credentials to keep out of logs."""
    CLIENT = "model client"
    """Read by google-genai, anthropic or LiteLLM; adk-otel reads them to name
    the endpoint and provider the client will use."""


@dataclass(frozen=True, slots=True)
class Setting(Generic[T]):
    """One setting: its keyword, its variables (the first set wins), its default."""

    env: tuple[str, ...]
    default: T
    kind: Kind
    doc: str
    """What it does, one line (the docs' table)."""
    argument: str | None = None
    """The keyword of ``instrument()``, ``AdkOtelPlugin`` and ``configure()``."""
    shown_default: str = ""
    """The default as the docs' table shows it."""
    maximum: int | None = None
    reader: Reader = Reader.ADK_OTEL

    def source(self, given: Any = None) -> str:
        """What a value came from, for a message: the keyword when given, else
        the first variable."""
        if given is not None and self.argument is not None:
            return self.argument
        return self.env[0] if self.env else str(self.argument)


def _option(argument: str, doc: str) -> Setting[Any]:
    return Setting((), None, Kind.OBJECT, doc, argument=argument)


# -- the options: keywords of instrument(), AdkOtelPlugin and configure() ----------

TRACER_PROVIDER: Setting[Any] = _option(
    "tracer_provider", "where spans go; default: the global provider, else one built from `OTEL_*`"
)
METER_PROVIDER: Setting[Any] = _option(
    "meter_provider", "where the metrics go; default: the global meter provider"
)
LOGGER_PROVIDER: Setting[Any] = _option(
    "logger_provider", "where the details event goes as a log record; default: the global one"
)
REDACT: Setting[Any] = _option(
    "redact", "`redact(key, value)` rewrites or drops each captured value"
)
ERROR_CLASSIFIER: Setting[Any] = _option(
    "error_classifier", "names failure categories of the app's own; default: the built-in rules"
)
KEEP_ADK_SPANS = Setting(
    ("ADK_OTEL_KEEP_ADK_SPANS",),
    False,
    Kind.FLAG,
    "`true` keeps ADK's own spans ([ADK's own spans](instrumenting.md#adks-own-spans))",
    argument="keep_adk_spans",
    shown_default="off, on every path",
)
CAPTURE_CONTENT: Setting[bool | str | None] = Setting(
    ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",),
    None,
    Kind.TEXT,
    "prompt/response/tool content capture: `SPAN_ONLY` (or `true`), `EVENT_ONLY`, "
    "`SPAN_AND_EVENT`, `NO_CONTENT` (or `false`)",
    argument="capture_content",
    shown_default="off, see [content capture](telemetry.md#content-capture)",
)
CONTENT_MAX_LENGTH = Setting(
    ("ADK_OTEL_CONTENT_MAX_LENGTH",),
    8192,
    Kind.COUNT,
    "longest captured value, in characters",
    argument="content_max_length",
    shown_default="8192",
)
DETAILS_AS_SPAN_EVENT = Setting(
    ("ADK_OTEL_DETAILS_AS_SPAN_EVENT",),
    False,
    Kind.FLAG,
    "`true` writes a model call's `gen_ai.client.inference.operation.details` event (content "
    "capture in an EVENT mode) as a span event, not a log record",
    argument="details_as_span_event",
    shown_default="off: a log record on `logger_provider=` / the global logger provider / one "
    "built beside the built tracer provider",
)
USER_ID = Setting(
    ("ADK_OTEL_USER_ID",),
    "plain",
    Kind.TEXT,
    "how invocation spans carry the run's user id as `user.id` (what Phoenix, Langfuse and "
    "MLflow group by) and `adk.user.id`: `plain`, `hash` (SHA-256) or `off`",
    argument="user_id",
    shown_default="`plain`",
)
RESULT_FAILURES = Setting(
    ("ADK_OTEL_RESULT_FAILURES",),
    True,
    Kind.FLAG,
    '`false` stops tool results in an error shape (ADK\'s `{"status": "error"}`, its argument '
    "checks, MCP `isError`) from ending `execute_tool` ERROR",
    argument="result_failures",
    shown_default="on",
)


TRACES_FILE: Setting[str | None] = Setting(
    ("ADK_OTEL_TRACES_FILE",),
    None,
    Kind.TEXT,
    "the file adk-otel's `otlp_json_file` exporter appends spans to as OTLP JSON lines, read by "
    "the `adk-otel` commands; as a keyword it also adds that exporter beside the others",
    argument="traces_file",
    shown_default="`adk-otel-traces.jsonl` in the working directory",
)


class OptionArguments(TypedDict, total=False):
    """The options as keywords of ``instrument()``, ``AdkOtelPlugin`` and
    ``configure()`` (each one a :class:`Setting` above, docs/configuration.md's
    table says what it does); ``None`` or left out: not given."""

    tracer_provider: TracerProvider | None
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


# -- adk-otel's own variables ----------------------------------------------------------

KEEP_A2A_SPANS = Setting(
    ("ADK_OTEL_KEEP_A2A_SPANS",),
    False,
    Kind.FLAG,
    "`true` keeps the A2A SDK's internal spans (scope `a2a-python-sdk`)",
    shown_default="off",
)
KEEP_OTHER_INSTRUMENTATIONS = Setting(
    ("ADK_OTEL_KEEP_OTHER_INSTRUMENTATIONS",),
    False,
    Kind.FLAG,
    "`true` leaves another active ADK instrumentation (OpenInference's) on beside adk-otel "
    "([choosing one](coexistence.md#choosing-one-adk-instrumentation))",
    shown_default="adk-otel turns it off, once, and says so",
)
ADOPT_ADK_PROVIDER = Setting(
    ("ADK_OTEL_ADOPT_ADK_PROVIDER",),
    True,
    Kind.FLAG,
    "`false` leaves the export of the provider ADK's server built from `OTEL_*` as ADK built it "
    "([serving in production](operations.md#serving-in-production))",
    shown_default="adk-otel's pipeline takes it over",
)
KEEP_ADK_METRICS = Setting(
    ("ADK_OTEL_KEEP_ADK_METRICS",),
    False,
    Kind.FLAG,
    "`true` keeps ADK's own GenAI metrics on; adk-otel then leaves those streams to ADK and "
    "records only `adk.invocation.count` and the chunk metrics (under "
    "`OTEL_SEMCONV_STABILITY_OPT_IN`, also the model-call metrics in their current names that "
    "ADK's own meter does not have: [ADK's own metrics]"
    "(telemetry.md#adks-own-metrics-nothing-is-recorded-twice))",
    shown_default="off",
)
EVALUATIONS_AS_SPANS = Setting(
    ("ADK_OTEL_EVALUATIONS_AS_SPANS",),
    False,
    Kind.FLAG,
    "`true` writes evaluation results as spans, not log records ([evaluations](evaluations.md))",
    shown_default="off",
)
MAX_TEXT_LENGTH = Setting(
    ("ADK_OTEL_MAX_TEXT_LENGTH",),
    4096,
    Kind.COUNT,
    "longest name, attribute, description or exception message adk-otel writes",
    shown_default="4096",
)
MAX_STACKTRACE_LENGTH = Setting(
    ("ADK_OTEL_MAX_STACKTRACE_LENGTH",),
    16384,
    Kind.COUNT,
    "longest exception stack trace adk-otel writes",
    shown_default="16384",
)

# -- OpenTelemetry's variables ----------------------------------------------------------

SEMCONV_STABILITY_OPT_IN: Setting[tuple[str, ...]] = Setting(
    ("OTEL_SEMCONV_STABILITY_OPT_IN",),
    (),
    Kind.LIST,
    "`gen_ai_latest_experimental` names the model-call metrics as the latest GenAI "
    "conventions do ([telemetry](telemetry.md#metrics))",
    shown_default="the current names",
)
DISABLED_INSTRUMENTATIONS: Setting[tuple[str, ...]] = Setting(
    ("OTEL_PYTHON_DISABLED_INSTRUMENTATIONS",),
    (),
    Kind.LIST,
    "listing `adk_otel`, or `*` (every instrumentation), makes `instrument()` a no-op "
    "(the standard switch)",
)
SDK_DISABLED = Setting(
    ("OTEL_SDK_DISABLED",), "", Kind.TEXT, "`true` turns tracing off", reader=Reader.SDK
)
SERVICE_NAME = Setting(
    ("OTEL_SERVICE_NAME",),
    "",
    Kind.TEXT,
    "the service name spans are exported under",
    shown_default="the SDK's: `unknown_service:python3` (the interpreter's file name) since "
    "opentelemetry-sdk 1.45, `unknown_service` before",
    reader=Reader.SDK,
)
RESOURCE_ATTRIBUTES = Setting(
    ("OTEL_RESOURCE_ATTRIBUTES",),
    "",
    Kind.TEXT,
    "resource attributes (`key=value,...`)",
    shown_default="SDK defaults",
    reader=Reader.SDK,
)
TRACES_ENDPOINT = Setting(
    ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"),
    "",
    Kind.TEXT,
    "collector address (over gRPC, credentials go in a header, not in the address: gRPC would "
    "take `user:pw@host` as the host name, so adk-otel refuses it with a warning)",
    shown_default="`http://localhost:4318` (http) / `http://localhost:4317` (grpc)",
    reader=Reader.SDK,
)
TRACES_PROTOCOL = Setting(
    ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"),
    "http/protobuf",
    Kind.TEXT,
    "`http/protobuf` or `grpc` (needs `adk-otel[grpc]`)",
    shown_default="`http/protobuf`",
    reader=Reader.SDK,
)
TRACES_HEADERS = Setting(
    ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"),
    "",
    Kind.TEXT,
    "exporter headers (`name=value,...`); adk-otel checks them and keeps their values out of "
    "its messages",
    shown_default="SDK defaults",
    reader=Reader.SDK,
)
METRICS_HEADERS = Setting(
    ("OTEL_EXPORTER_OTLP_METRICS_HEADERS",),
    "",
    Kind.TEXT,
    "the metric exporter's headers; their values are kept out of adk-otel's messages",
    shown_default="`OTEL_EXPORTER_OTLP_HEADERS`",
    reader=Reader.SDK,
)
LOGS_HEADERS = Setting(
    ("OTEL_EXPORTER_OTLP_LOGS_HEADERS",),
    "",
    Kind.TEXT,
    "the log exporter's headers; their values are kept out of adk-otel's messages",
    shown_default="`OTEL_EXPORTER_OTLP_HEADERS`",
    reader=Reader.SDK,
)
METRICS_ENDPOINT = Setting(
    ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",),
    "",
    Kind.TEXT,
    "where the metrics go over OTLP; credentials in it are kept out of adk-otel's messages",
    shown_default="`OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/metrics`",
    reader=Reader.SDK,
)
LOGS_ENDPOINT = Setting(
    ("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",),
    "",
    Kind.TEXT,
    "where the details log record goes when adk-otel builds the pipeline; credentials in it "
    "are kept out of adk-otel's messages",
    shown_default="`OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/logs`",
    reader=Reader.SDK,
)
TRACES_TIMEOUT = Setting(
    ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"),
    "",
    Kind.TEXT,
    "export timeout in seconds (up to 3600)",
    shown_default="10",
    reader=Reader.SDK,
)
TRACES_COMPRESSION = Setting(
    ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"),
    "",
    Kind.TEXT,
    "`none`, `gzip` or `deflate`",
    shown_default="`none`",
    reader=Reader.SDK,
)
TRACES_CERTIFICATE = Setting(
    ("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "OTEL_EXPORTER_OTLP_CERTIFICATE"),
    "",
    Kind.TEXT,
    "exporter TLS certificate, read by the OTLP exporter",
    shown_default="SDK defaults",
    reader=Reader.SDK,
)
TRACES_SAMPLER = Setting(
    ("OTEL_TRACES_SAMPLER",),
    "",
    Kind.TEXT,
    "sampler",
    shown_default="`parentbased_always_on`",
    reader=Reader.SDK,
)
TRACES_SAMPLER_ARG = Setting(
    ("OTEL_TRACES_SAMPLER_ARG",),
    "",
    Kind.TEXT,
    "sampling ratio of a `traceidratio` sampler, 0 to 1",
    shown_default="1.0",
    reader=Reader.SDK,
)
TRACES_EXPORTER = Setting(
    ("OTEL_TRACES_EXPORTER",),
    "otlp",
    Kind.TEXT,
    "a comma-separated list, as the SDK reads it: `otlp`, `console` (spans printed to stdout "
    "as they end, for reading; `otlp,console` does both), `none`, or the name of any installed "
    "`opentelemetry_traces_exporter` entry point, adk-otel's `otlp_json_file` among them (spans "
    "appended as OTLP JSON lines to a file the `adk-otel` commands read; "
    "`otlp,otlp_json_file` does both)",
    shown_default="`otlp`",
    reader=Reader.SDK,
)
LOGS_EXPORTER = Setting(
    ("OTEL_LOGS_EXPORTER",),
    "otlp",
    Kind.TEXT,
    "where the details log record goes when adk-otel builds the pipeline (`none` turns it off)",
    shown_default="`otlp`",
    reader=Reader.SDK,
)
BSP_MAX_QUEUE_SIZE = Setting(
    ("OTEL_BSP_MAX_QUEUE_SIZE",),
    8192,
    Kind.COUNT,
    "batch span processor: spans queued for export at most",
    shown_default="8192 (the SDK's: 2048); see [operations](operations.md#pipeline-defaults)",
    maximum=1_000_000,
    reader=Reader.SDK,
)
BSP_SCHEDULE_DELAY = Setting(
    ("OTEL_BSP_SCHEDULE_DELAY",),
    1000,
    Kind.COUNT,
    "batch span processor: milliseconds between two exports",
    shown_default="1000 (the SDK's: 5000)",
    maximum=3_600_000,
    reader=Reader.SDK,
)
BSP_MAX_EXPORT_BATCH_SIZE = Setting(
    ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE",),
    512,
    Kind.COUNT,
    "batch span processor: spans in one export at most",
    shown_default="512",
    maximum=1_000_000,
    reader=Reader.SDK,
)
BSP_EXPORT_TIMEOUT = Setting(
    ("OTEL_BSP_EXPORT_TIMEOUT",),
    5000,
    Kind.COUNT,
    "batch span processor: milliseconds one export may take (and the shutdown flush, at most 4 s)",
    shown_default="5000 (the SDK's: 30000)",
    maximum=600_000,
    reader=Reader.SDK,
)

# -- the model clients' variables ---------------------------------------------------------

GOOGLE_GENAI_USE_ENTERPRISE: Setting[str | None] = Setting(
    ("GOOGLE_GENAI_USE_ENTERPRISE",),
    None,
    Kind.TEXT,
    "google-genai on its enterprise (Vertex AI) backend: `gen_ai.provider.name`, server address",
    reader=Reader.CLIENT,
)
GOOGLE_GENAI_USE_VERTEXAI: Setting[str | None] = Setting(
    ("GOOGLE_GENAI_USE_VERTEXAI",),
    None,
    Kind.TEXT,
    "google-genai on Vertex AI: `gen_ai.provider.name`, server address",
    reader=Reader.CLIENT,
)
GOOGLE_GEMINI_BASE_URL: Setting[str | None] = Setting(
    ("GOOGLE_GEMINI_BASE_URL",),
    None,
    Kind.TEXT,
    "google-genai's Gemini API address: `server.address`",
    reader=Reader.CLIENT,
)
GOOGLE_VERTEX_BASE_URL: Setting[str | None] = Setting(
    ("GOOGLE_VERTEX_BASE_URL",),
    None,
    Kind.TEXT,
    "google-genai's Vertex AI address: `server.address`",
    reader=Reader.CLIENT,
)
GOOGLE_CLOUD_LOCATION: Setting[str | None] = Setting(
    ("GOOGLE_CLOUD_LOCATION",),
    None,
    Kind.TEXT,
    "the Vertex AI region: `server.address`",
    reader=Reader.CLIENT,
)
ANTHROPIC_BASE_URL: Setting[str | None] = Setting(
    ("ANTHROPIC_BASE_URL",),
    None,
    Kind.TEXT,
    "the anthropic client's address: `server.address`",
    reader=Reader.CLIENT,
)
LITELLM_REQUEST_SPAN: Setting[str | None] = Setting(
    ("USE_OTEL_LITELLM_REQUEST_SPAN",),
    None,
    Kind.TEXT,
    "`true`: LiteLLM's OpenTelemetry callback records each call's span "
    "([coexistence](coexistence.md))",
    reader=Reader.CLIENT,
)
LITELLM_METRICS: Setting[str | None] = Setting(
    ("LITELLM_OTEL_INTEGRATION_ENABLE_METRICS",),
    None,
    Kind.TEXT,
    "`true`: LiteLLM's OpenTelemetry callback records the metrics ([coexistence](coexistence.md))",
    reader=Reader.CLIENT,
)


def _declared() -> tuple[Setting[Any], ...]:
    return tuple(value for value in globals().values() if isinstance(value, Setting))


SETTINGS: tuple[Setting[Any], ...] = _declared()
"""Every setting, in the order declared (the docs' table's order)."""
OPTIONS: dict[str, Setting[Any]] = {s.argument: s for s in SETTINGS if s.argument is not None}
"""The options by keyword."""
PROVIDERS = ("tracer_provider", "meter_provider", "logger_provider")
"""The options that hold a provider: objects of one process (threads, locks,
exporters), so never pickled with a plugin (lifecycle/travel.py)."""


# -- reading ---------------------------------------------------------------------------------

_said: set[str] = set()


def _warn_once(message: str, *args: Any) -> None:
    """A bad setting read again (each plugin made, each resolve) is said once."""
    text = message % args
    if text not in _said:
        _said.add(text)
        logger.warning("%s", text)


def load(setting: Setting[T], given: T | None = None, *, warn: Warn | None = None) -> T:
    """The setting's value: ``given`` (a keyword's value; ``None``: not
    given), else its first variable set, as its kind reads it, else its default."""
    report = warn or _warn_once
    if given is not None:
        if setting.kind is Kind.COUNT and not (isinstance(given, int) and given > 0):
            report(
                "adk-otel: %s=%r must be positive; using %d",
                setting.argument,
                given,
                setting.default,
            )
            return setting.default
        return given
    set_ = found(setting)
    if set_ is None:
        return setting.default
    name, raw = set_
    value: Any
    if setting.kind is Kind.FLAG:
        value = _flag(name, raw, report)
    elif setting.kind is Kind.COUNT:
        value = _count(name, raw, setting, report)
    elif setting.kind is Kind.LIST:
        value = tuple(entry.strip() for entry in raw.split(",") if entry.strip())
    else:
        value = raw
    return setting.default if value is None else value


def _flag(name: str, raw: str, warn: Warn) -> bool | None:
    value = raw.lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    warn("adk-otel: %s=%r is not a boolean; ignoring it", name, value)
    return None


def _count(name: str, raw: str, setting: Setting[Any], warn: Warn) -> int | None:
    try:
        value = int(raw)
    except ValueError:
        value = 0
    maximum = setting.maximum
    if value <= 0 or (maximum is not None and value > maximum):
        limit = f"an integer from 1 to {maximum}" if maximum is not None else "a positive integer"
        warn("adk-otel: %s=%r is not %s; using %d", name, raw[:64], limit, setting.default)
        return None
    return value


def found(setting: Setting[Any]) -> tuple[str, str] | None:
    """The first of the setting's variables set to something (not blank):
    its name and its value, stripped; None when none is."""
    for name in setting.env:
        value = os.environ.get(name, "").strip()
        if value:
            return name, value
    return None


def reader(setting: Setting[Any]) -> Callable[[], str | None]:
    """A function returning the setting's first variable exactly as set (None:
    unset), for a variable another library reads, read as it reads it; made
    once, called on a hot path at the cost of the lookup alone."""
    return functools.partial(os.environ.get, setting.env[0])


def every_value(setting: Setting[Any]) -> tuple[str, ...]:
    """The values of all of the setting's variables (unset ones as ``""``)."""
    return tuple(os.environ.get(name, "") for name in setting.env)


def blank(setting: Setting[Any]) -> bool:
    """Whether any of the setting's variables is set to an empty value
    (``VAR=${UNSET}`` in a compose file): adk-otel reads that as unset, the
    SDK's exporters do not."""
    return any(name in os.environ and not os.environ[name].strip() for name in setting.env)


def watch(*watched: Setting[Any]) -> Callable[[], tuple[Any, ...]]:
    """A function returning the watched settings' first variables as they
    are now, made for a hot path: it reads the environment's own mapping
    directly where it has one (one lookup per variable, no decoding)."""
    names = tuple(setting.env[0] for setting in watched)
    data: Any = getattr(os.environ, "_data", None)
    if isinstance(data, dict) and hasattr(os.environ, "encodekey"):
        keys = tuple(os.environ.encodekey(name) for name in names)

        def now() -> tuple[Any, ...]:
            return tuple([data.get(key) for key in keys])

        return now

    def now_portable() -> tuple[Any, ...]:
        return tuple(os.environ.get(name) for name in names)

    return now_portable


# -- the docs' table -------------------------------------------------------------------------


def markdown_table() -> str:
    """docs/configuration.md's table of settings, one row each."""
    rows = [
        "| variable | keyword | meaning | default | whose |",
        "|---|---|---|---|---|",
    ]
    for setting in SETTINGS:
        variables = " / ".join(f"`{name}`" for name in setting.env)
        keyword = f"`{setting.argument}=`" if setting.argument else ""
        rows.append(
            f"| {variables} | {keyword} | {setting.doc} | {setting.shown_default} "
            f"| {setting.reader} |"
        )
    return "\n".join(rows) + "\n"
