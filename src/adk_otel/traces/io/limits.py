"""How much one trace input may make the reader hold or do.

Trace files come from anywhere (a CI artifact, a colleague, stdin), so the
readers bound what a hostile or broken file can cost: a few kilobytes of
gzip or zstd can inflate to gigabytes, a length prefix can claim 4 GiB, and
an endless stream of blank lines or empty messages holds no span to stop at.
Each bound is in MiB, has a default that no file an exporter writes comes
near, and can be raised: ``ADK_OTEL_MAX_<NAME>_MB`` in the environment, or
the command's ``--max-<name>-mb`` flag. Going over one is bad input (one
line naming the file, the limit and how to raise it), never a traceback.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

MIB = 1 << 20


@dataclass(frozen=True)
class ReadLimits:
    """Bounds on one reading of trace files, in bytes."""

    document: int = 64 * MIB
    """One JSON line, or a whole pretty-printed JSON document."""
    message: int = 64 * MIB
    """One protobuf message (length-prefixed, or a raw OTLP/HTTP body), or one
    zstd frame of the exporter's per-message compression once inflated."""
    inflated: int = 4096 * MIB
    """What one gzip or zstd file (or stdin) may inflate to in all."""
    without_spans: int = 64 * MIB
    """Input read without finding a single span before giving up (blank
    lines, empty documents or messages, padding); each document or message
    counts at least 1 KiB. JSON documents holding log records or metrics are
    another signal's data, not input without any: a collector's logs file is
    read beside its traces whatever its size."""
    spec: int = 1 * MIB
    """The YAML spec of ``adk-otel check``."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ReadLimits:
        """The defaults, with any ``ADK_OTEL_MAX_<NAME>_MB`` variable applied;
        a bad value is a ``ValueError`` naming the variable."""
        env = os.environ if environ is None else environ
        changes: dict[str, int] = {}
        for name in NAMES:
            variable = env_name(name)
            raw = env.get(variable, "").strip()
            if raw:
                changes[name] = parse_mib(raw, variable)
        return replace(cls(), **changes)

    def with_mib(self, **mib: float | None) -> ReadLimits:
        """These limits with some given in MiB (``None``: unchanged)."""
        changes = {name: round(value * MIB) for name, value in mib.items() if value is not None}
        return replace(self, **changes)


NAMES: tuple[str, ...] = tuple(field.name for field in fields(ReadLimits))


def env_name(name: str) -> str:
    return f"ADK_OTEL_MAX_{name.upper()}_MB"


def flag_name(name: str) -> str:
    return f"--max-{name.replace('_', '-')}-mb"


def parse_mib(raw: str, what: str) -> int:
    """A positive number of MiB as bytes; ``ValueError`` (one line) otherwise."""
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{what}={raw!r}: a limit is a positive number of MiB")
    return max(round(value * MIB), 1)


def over(where: str, what: str, name: str, limit: int) -> str:
    """The one-line message for input over the limit ``name``."""
    return (
        f"{where}: {what} (the limit for {_LIMIT_WHAT[name]} is {mib(limit)};"
        f" raise it with {flag_name(name)} or {env_name(name)})"
    )


def mib(size: int) -> str:
    value = size / MIB
    return f"{value:.4g} MiB" if value >= 0.01 else f"{size} bytes"


_LIMIT_WHAT = {
    "document": "one JSON document or line",
    "message": "one protobuf message",
    "inflated": "a decompressed file",
    "without_spans": "input without a span",
    "spec": "a spec",
}
