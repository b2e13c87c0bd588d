"""What the standard ``OTEL_*`` variables ask for: sampler, OTLP protocol,
endpoint and exporter. A bad value is reported with one warning naming the
variable (never a header value: those often hold credentials) and replaced by
a working default; nothing here raises into the application."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.sdk.trace import sampling
from opentelemetry.sdk.trace.export import SpanExporter

from .. import settings
from ..util.redact import guarded, redact_url
from .export import MUTING, install_muting

# One logger for everything on the export path, as documented (docs/operations.md).
logger: logging.Logger = guarded(logging.getLogger("adk_otel.pipeline"))

PROTOCOLS = ("http/protobuf", "grpc")
DEFAULT_PROTOCOL = "http/protobuf"

_SAMPLERS = (
    "always_on",
    "always_off",
    "traceidratio",
    "parentbased_always_on",
    "parentbased_always_off",
    "parentbased_traceidratio",
)
_DEFAULT_SAMPLER = "parentbased_always_on"


def sampler_from_env() -> sampling.Sampler | None:
    """The sampler ``OTEL_TRACES_SAMPLER`` / ``OTEL_TRACES_SAMPLER_ARG`` ask
    for; None (the SDK's default) when unset. A bad value is reported with a
    warning naming the variable, never raised."""
    name = settings.load(settings.TRACES_SAMPLER).lower()
    if not name:
        return None
    if name not in _SAMPLERS:
        logger.warning(
            "adk-otel: OTEL_TRACES_SAMPLER=%r is not a sampler this SDK knows (use one of "
            "%s); using %s",
            name,
            ", ".join(_SAMPLERS),
            _DEFAULT_SAMPLER,
        )
        name = _DEFAULT_SAMPLER
    if name.endswith("traceidratio"):
        ratio: sampling.Sampler = sampling.TraceIdRatioBased(_sampler_ratio())
        return sampling.ParentBased(ratio) if name.startswith("parentbased") else ratio
    base = sampling.ALWAYS_OFF if name.endswith("always_off") else sampling.ALWAYS_ON
    return sampling.ParentBased(base) if name.startswith("parentbased") else base


def _sampler_ratio() -> float:
    raw = settings.load(settings.TRACES_SAMPLER_ARG)
    if not raw:
        return 1.0
    try:
        ratio = float(raw)
    except ValueError:
        ratio = -1.0
    if not 0.0 <= ratio <= 1.0:
        logger.warning(
            "adk-otel: OTEL_TRACES_SAMPLER_ARG=%r is not a sampling ratio between 0 and 1 "
            "(e.g. 0.25); sampling everything (1.0)",
            raw,
        )
        return 1.0
    return ratio


def otlp_protocol() -> str:
    return _protocol_setting()[1]


def _protocol_setting() -> tuple[str, str]:
    """The OTLP protocol asked for, with the variable that asked (an empty name
    for the default). An unknown value is reported and replaced by the default."""
    found = settings.found(settings.TRACES_PROTOCOL)
    if found is None:
        return "", DEFAULT_PROTOCOL
    name, value = found
    if value not in PROTOCOLS:
        logger.warning(
            "adk-otel: %s=%r is not supported (use one of %s); using %s",
            name,
            value,
            ", ".join(PROTOCOLS),
            DEFAULT_PROTOCOL,
        )
        return "", DEFAULT_PROTOCOL
    return name, value


def endpoint_problem(value: str, protocol: str) -> str | None:
    """Why an OTLP endpoint cannot work, or None when it looks usable."""
    candidate = value if "://" in value or protocol != "grpc" else f"http://{value}"
    try:
        parts = urlsplit(candidate)
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError as exc:
        return str(exc)
    if parts.scheme not in ("http", "https"):
        return "the scheme must be http:// or https://"
    if not parts.hostname:
        return "it has no host"
    if protocol == "grpc" and "@" in parts.netloc:
        return (
            "gRPC takes user:password@ as part of the host name and can never connect; "
            "send credentials as a header (OTEL_EXPORTER_OTLP_HEADERS=authorization=...)"
        )
    return None


MAX_EXPORT_TIMEOUT_S = 3600
"""The longest OTLP export timeout accepted, in seconds (an hour: beyond it,
or ``inf``, every export fails inside the exporter)."""


TRACES_EXPORTERS = ("otlp", "console", "none")
"""The ``OTEL_TRACES_EXPORTER`` values adk-otel builds itself, as the SDK's own
handling: a comma-separated list, ``none`` alone turning export off. Any other
name is the SDK's way: an installed ``opentelemetry_traces_exporter`` entry point
(adk-otel's own ``otlp_json_file`` among them)."""
EXPORTER_ENTRY_POINTS = "opentelemetry_traces_exporter"
FILE_EXPORTER = "otlp_json_file"
"""adk-otel's file exporter's entry point: OTLP JSON lines the ``adk-otel`` commands read."""


def _traces_exporters(value: str) -> list[str]:
    return [name.strip() for name in value.split(",") if name.strip()] or ["otlp"]


def _installed_exporters() -> dict[str, Any]:
    """The span exporters installed under the SDK's entry point group, by name."""
    from importlib.metadata import entry_points

    return {point.name: point for point in entry_points(group=EXPORTER_ENTRY_POINTS)}


def exporter_from_entry_point(name: str, **arguments: Any) -> SpanExporter | None:
    """The span exporter registered as ``name`` (an ``opentelemetry_traces_exporter``
    entry point), made with ``arguments``; None with a warning when it is not
    installed or cannot be made."""
    point = _installed_exporters().get(name)
    if point is None:
        logger.warning(
            "adk-otel: no span exporter named %r is installed (an %s entry point); spans "
            "will not go there. Reinstall adk-otel if it is %r",
            name,
            EXPORTER_ENTRY_POINTS,
            FILE_EXPORTER,
        )
        return None
    try:
        exporter = point.load()(**arguments)
    except Exception as exc:
        logger.warning(
            "adk-otel: cannot create the %r span exporter (%s: %s); spans will not go there",
            name,
            type(exc).__name__,
            exc,
        )
        return None
    return exporter if isinstance(exporter, SpanExporter) else None


def named_exporters_from_env() -> list[SpanExporter]:
    """The exporters ``OTEL_TRACES_EXPORTER`` names beyond otlp, console and
    none, each from its entry point (``OTEL_TRACES_EXPORTER=otlp_json_file``:
    a file the ``adk-otel`` commands read); unknown names are reported once,
    by :func:`otlp_exporter_from_env`."""
    value = settings.load(settings.TRACES_EXPORTER).lower()
    names = [name for name in _traces_exporters(value) if name not in TRACES_EXPORTERS]
    if not names:
        return []
    installed = _installed_exporters()
    made = [exporter_from_entry_point(name) for name in names if name in installed]
    return [exporter for exporter in made if exporter is not None]


def console_exporter_from_env() -> SpanExporter | None:
    """The SDK's console exporter when ``OTEL_TRACES_EXPORTER`` lists
    ``console`` (alone or beside ``otlp``, e.g. ``otlp,console``), else None."""
    value = settings.load(settings.TRACES_EXPORTER).lower()
    if "console" not in _traces_exporters(value):
        return None
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    return ConsoleSpanExporter()


def otlp_exporter_from_env() -> SpanExporter | None:
    """The OTLP span exporter ``OTEL_*`` asks for, or None with a warning.

    ``OTEL_TRACES_EXPORTER=none`` turns exporting off; the exporters read
    endpoint, headers, timeout, compression and certificates themselves.
    """
    exporters = settings.load(settings.TRACES_EXPORTER).lower()
    names = _traces_exporters(exporters)
    built = [name for name in names if name in TRACES_EXPORTERS]
    installed = _installed_exporters() if len(built) < len(names) else {}
    unknown = sorted(set(names) - set(TRACES_EXPORTERS) - set(installed))
    known = [name for name in names if name not in unknown]
    if unknown:
        logger.warning(
            "adk-otel: OTEL_TRACES_EXPORTER=%r: %s not an installed exporter (adk-otel "
            "builds %s, and any %s entry point such as %s); using %s",
            exporters,
            ", ".join(unknown),
            ", ".join(TRACES_EXPORTERS),
            EXPORTER_ENTRY_POINTS,
            FILE_EXPORTER,
            ", ".join(known) or "otlp",
        )
    if known and "otlp" not in known:
        return None  # none, console, or entry-point exporters only
    protocol_variable, protocol = _protocol_setting()
    if protocol == "grpc" and not grpc_exporter_available():
        logger.warning(
            "adk-otel: %s=grpc needs the gRPC exporter, which is not installed: "
            "pip install 'adk-otel[grpc]' (or use http/protobuf, the default); spans will "
            "not be exported. Agent runs are not affected",
            protocol_variable,
        )
        return None
    endpoint = settings.found(settings.TRACES_ENDPOINT)
    if endpoint is not None:
        problem = endpoint_problem(endpoint[1], protocol)
        if problem:
            logger.warning(
                "adk-otel: %s=%r is not a usable OTLP endpoint (%s); spans will not be "
                "exported. Example: http://localhost:4318 (http/protobuf) or "
                "http://localhost:4317 (grpc)",
                endpoint[0],
                redact_url(endpoint[1]),
                problem,
            )
            return None
    _check_headers()
    options = _checked_exporter_options()
    if endpoint is None and settings.blank(settings.TRACES_ENDPOINT):
        # An endpoint variable set but empty: the default, not an empty URL.
        options["endpoint"] = (
            "http://localhost:4317" if protocol == "grpc" else "http://localhost:4318/v1/traces"
        )
    factory: Callable[..., Any]
    if protocol == "grpc":
        from grpc import Compression as GrpcCompression
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        factory = OTLPSpanExporter
        if options.pop("compression", None) is not None:
            options["compression"] = GrpcCompression.NoCompression
    else:
        from opentelemetry.exporter.otlp.proto.http import Compression as HttpCompression
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter as HttpExporter,
        )

        factory = HttpExporter
        if options.pop("compression", None) is not None:
            options["compression"] = HttpCompression.NoCompression
    try:
        with MUTING.active():  # header problems were reported above, without values
            return factory(**options)
    except Exception as exc:
        logger.warning(
            "adk-otel: cannot create the OTLP %s exporter from the OTEL_EXPORTER_OTLP_* "
            "settings (%s: %s); spans will not be exported",
            protocol,
            type(exc).__name__,
            exc,
        )
        return None


def otlp_log_exporter_from_env() -> Any:
    """The OTLP log exporter for the details event, or None (``OTEL_LOGS_EXPORTER=none``,
    or it cannot be built: reported). Endpoint (``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT``,
    else ``OTEL_EXPORTER_OTLP_ENDPOINT``), headers and timeout are read by the exporter."""
    if settings.load(settings.LOGS_EXPORTER).lower() == "none":
        return None
    protocol = otlp_protocol()
    if protocol == "grpc" and not grpc_exporter_available():
        # Built only beside the tracer provider adk-otel built, whose span exporter
        # already said what to install: one warning, not one per signal.
        return None
    try:
        with MUTING.active():
            if protocol == "grpc":
                from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter

                return OTLPLogExporter()
            from opentelemetry.exporter.otlp.proto.http._log_exporter import (
                OTLPLogExporter as HttpLogExporter,
            )

            return HttpLogExporter()
    except Exception as exc:
        logger.warning(
            "adk-otel: cannot create the OTLP %s log exporter (%s: %s); the details "
            "event will not be exported",
            protocol,
            type(exc).__name__,
            exc,
        )
        return None


def grpc_exporter_available() -> bool:
    """Whether the OTLP/gRPC exporter (``adk-otel[grpc]``: grpcio and
    opentelemetry-exporter-otlp-proto-grpc) can be imported; HTTP needs neither."""
    try:
        import grpc  # noqa: F401
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # noqa: F401
            OTLPSpanExporter,
        )
    except ImportError:
        return False
    return True


# Header names: an HTTP token; values: printable ASCII (spaces allowed),
# without "," (the separator). Anything else must be URL-encoded (%XX).
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE = re.compile(r"[\x20-\x7e]*")


def _check_headers() -> None:
    """Report ``OTEL_EXPORTER_OTLP_(TRACES_)HEADERS`` entries the exporter will
    ignore or choke on. Values are never logged: they often hold credentials."""
    found = settings.found(settings.TRACES_HEADERS)
    if found is None:
        return
    name, value = found
    install_muting()
    problems = []
    entries = [e.strip() for e in value.split(",")]
    for number, entry in enumerate(entries, 1):
        if not entry:
            continue
        key, sep, val = entry.partition("=")
        key = key.strip()
        if not sep or not key:
            problems.append(f"entry {number} is not name=value")
        elif not _HEADER_NAME.fullmatch(key):
            problems.append(f"header name {key!r} has characters not allowed in a header name")
        elif not _HEADER_VALUE.fullmatch(val.strip()):
            problems.append(f"the value of {key!r} must be URL-encoded (%XX)")
    if problems:
        logger.warning(
            "adk-otel: %s: %s; those entries are ignored. Expected: "
            "name1=value1,name2=value2 (values URL-encoded)",
            name,
            "; ".join(problems),
        )


def _checked_exporter_options() -> dict[str, Any]:
    """Timeout and compression, which the exporters would fail on with a
    message naming neither variable: reported here, replaced by defaults
    (``{"timeout": 10.0}``, ``{"compression": "none"}``) passed explicitly."""
    options: dict[str, Any] = {}
    found = settings.found(settings.TRACES_TIMEOUT)
    if found is not None:
        try:
            seconds = float(found[1])
            usable = 0 < seconds <= MAX_EXPORT_TIMEOUT_S
        except ValueError:
            usable = False
        if not usable:
            logger.warning(
                "adk-otel: %s=%r is not a number of seconds from 0 to %d; using 10",
                found[0],
                found[1][:64],
                MAX_EXPORT_TIMEOUT_S,
            )
            options["timeout"] = 10.0
    elif settings.blank(settings.TRACES_TIMEOUT):
        options["timeout"] = 10.0  # set but empty: unset, which the exporter would not say
    found = settings.found(settings.TRACES_COMPRESSION)
    if found is not None and found[1].lower() not in ("none", "gzip", "deflate"):
        logger.warning(
            "adk-otel: %s=%r is not one of none, gzip, deflate; using none", found[0], found[1][:64]
        )
        options["compression"] = "none"
    elif found is None and settings.blank(settings.TRACES_COMPRESSION):
        options["compression"] = "none"
    return options
