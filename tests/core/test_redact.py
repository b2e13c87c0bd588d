"""The one redaction function: what it masks in free text, and that every
logger adk-otel writes to passes its messages through it."""

from __future__ import annotations

import importlib
import logging
import pkgutil

import pytest

import adk_otel
from adk_otel.util.redact import REDACTING, redact_text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("to https://user:PASSWORD1@collector:4318/v1/traces failed", "PASSWORD1"),
        ("to https://TOKENONLY@collector/v1/traces failed", "TOKENONLY"),
        ("Max retries exceeded with url: /v1/traces?token=QUERY1&x=1 (Caused by", "QUERY1"),
        ("url='http://h:4318/v1/traces?api_key=QUERY2'", "QUERY2"),
        ("cannot connect to user:PASSWORD2@collector:4317", "PASSWORD2"),
    ],
)
def test_urls_and_paths_lose_their_credentials(text: str, secret: str) -> None:
    redacted = redact_text(text)
    assert secret not in redacted
    assert "***" in redacted
    assert (
        "failed" in redacted
        or "Caused by" in redacted
        or "connect" in redacted
        or "url=" in redacted
    )


def test_configured_credentials_are_masked_wherever_quoted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "authorization=Bearer%20HEADERVALUE9,x-team=ops"
    )
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "https://u:LOGSPASS9@h/v1/logs?k=LOGSQ9")
    quoted = (
        "Invalid header value: 'Bearer HEADERVALUE9' / {'authorization': 'Bearer%20HEADERVALUE9'}"
        " / token HEADERVALUE9 / LOGSPASS9 / LOGSQ9"
    )
    redacted = redact_text(quoted)
    for secret in ("HEADERVALUE9", "LOGSPASS9", "LOGSQ9"):
        assert secret not in redacted, redacted
    assert "Invalid header value" in redacted
    # Values too short to mask safely inside prose are left (they would mask every "ops").
    assert redact_text("ops") == "ops"


def test_text_without_credentials_is_unchanged() -> None:
    text = "adk-otel: could not export 3 span(s) to http://localhost:4318/v1/traces (why?)"
    assert redact_text(text) == text


def test_every_adk_otel_logger_redacts(caplog: pytest.LogCaptureFixture) -> None:
    for module in pkgutil.walk_packages(adk_otel.__path__, "adk_otel."):
        if not module.name.endswith(".__main__"):  # `python -m adk_otel.cli` runs the CLI
            importlib.import_module(module.name)
    modules_with_loggers = [
        lg
        for name, lg in logging.Logger.manager.loggerDict.items()
        if name.startswith("adk_otel.") and isinstance(lg, logging.Logger)
    ]
    assert len(modules_with_loggers) >= 10, modules_with_loggers
    unguarded = [lg.name for lg in modules_with_loggers if REDACTING not in lg.filters]
    assert not unguarded, f"loggers without the redacting filter: {unguarded}"
    caplog.set_level("WARNING")
    logging.getLogger("adk_otel.plugin").warning(
        "failed: %s", "http://x:SECRETPW@h/v1/traces?k=SECRETQ"
    )
    [record] = caplog.records
    assert "SECRETPW" not in record.getMessage() and "SECRETQ" not in record.getMessage()
