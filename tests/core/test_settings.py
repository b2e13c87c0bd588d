"""The settings registry (src/adk_otel/settings.py): every option and every variable the
runtime reads declared once, resolved by one function, and the docs' table written from it."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any, get_type_hints

import pytest

from adk_otel import AdkOtelPlugin, settings
from adk_otel.lifecycle.options import Options, given

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "src" / "adk_otel"
DOC = ROOT / "docs" / "configuration.md"
BEGIN = (
    "<!-- generated from adk_otel.settings.markdown_table(); "
    "tests/core/test_settings.py checks it -->"
)
END = "<!-- end of the generated table -->"
_VARIABLE = re.compile(r"^(OTEL|ADK_OTEL|GOOGLE|ANTHROPIC|LITELLM|USE_OTEL)_[A-Z0-9_]+$")


def _runtime_files() -> list[Path]:
    """The runtime: all but the reading half (traces/) and the command line (cli/)."""
    return [
        path
        for path in sorted(RUNTIME.rglob("*.py"))
        if not {"traces", "cli"} & set(path.relative_to(RUNTIME).parts)
    ]


def test_the_docs_table_is_the_registrys() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert BEGIN in text and END in text, "docs/configuration.md lost its table's markers"
    table = text.split(BEGIN, 1)[1].split(END, 1)[0].lstrip("\n")
    assert table == settings.markdown_table(), (
        "docs/configuration.md's table differs from the registry: paste "
        "adk_otel.settings.markdown_table() between its markers"
    )


def test_every_option_is_declared_once_and_accepted() -> None:
    keywords = set(get_type_hints(settings.OptionArguments))
    assert keywords == set(settings.OPTIONS), "OptionArguments and the registry's options differ"
    assert len(settings.OPTIONS) == len([s for s in settings.SETTINGS if s.argument]), "twice"
    for name in settings.PROVIDERS:
        assert settings.OPTIONS[name].kind is settings.Kind.OBJECT
    variables = [name for setting in settings.SETTINGS for name in setting.env]
    assert len(variables) == len(set(variables)), "a variable declared twice"
    with pytest.raises(TypeError, match="no such option: colour"):
        AdkOtelPlugin(colour="blue")  # type: ignore[call-arg]


def test_options_keep_what_was_given() -> None:
    chosen = Options().updated({"user_id": "hash", "result_failures": False, "redact": None})
    assert chosen[settings.USER_ID] == "hash"
    assert chosen[settings.RESULT_FAILURES] is False
    assert chosen[settings.REDACT] is None, "None: not given"
    assert Options().updated(given(chosen)) == chosen
    assert chosen.updated({"user_id": None})[settings.USER_ID] == "hash", "None keeps it"


def test_only_the_registry_reads_the_environment() -> None:
    readers = []
    for path in _runtime_files():
        if path.name == "settings.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv")) or (
                isinstance(node, ast.Name) and node.id in ("environ", "getenv")
            ):
                readers.append(f"{path.relative_to(RUNTIME)}:{node.lineno}")
    assert readers == [], f"read the environment outside settings.py: {readers}"


def test_every_variable_named_in_the_runtime_is_declared() -> None:
    declared = {name for setting in settings.SETTINGS for name in setting.env}
    named = set()
    for path in _runtime_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and _VARIABLE.match(text):
                named.add(text)
    assert named <= declared, f"named in the runtime, not in the registry: {named - declared}"


def test_the_keyword_wins_then_the_first_variable_then_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_PROTOCOL", raising=False)
    assert settings.load(settings.TRACES_PROTOCOL) == "http/protobuf"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    assert settings.found(settings.TRACES_PROTOCOL) == ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", " http/json ")
    assert settings.load(settings.TRACES_PROTOCOL) == "http/json", "the first, stripped"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", " ")
    assert settings.load(settings.TRACES_PROTOCOL) == "grpc", "blank: unset"
    assert settings.blank(settings.TRACES_PROTOCOL)

    monkeypatch.setenv("ADK_OTEL_RESULT_FAILURES", "off")
    assert settings.load(settings.RESULT_FAILURES) is False
    assert settings.load(settings.RESULT_FAILURES, True) is True, "the keyword wins"
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", " http , gen_ai_latest_experimental,")
    assert settings.load(settings.SEMCONV_STABILITY_OPT_IN) == (
        "http",
        "gen_ai_latest_experimental",
    )


@pytest.mark.parametrize(
    ("setting", "value", "expected"),
    [
        (settings.KEEP_ADK_SPANS, "perhaps", "ADK_OTEL_KEEP_ADK_SPANS='perhaps' is not a boolean"),
        (settings.BSP_MAX_QUEUE_SIZE, "2000000", "is not an integer from 1 to 1000000; using 8192"),
        (settings.CONTENT_MAX_LENGTH, "-3", "is not a positive integer; using 8192"),
    ],
)
def test_a_bad_value_is_said_and_the_default_used(
    monkeypatch: pytest.MonkeyPatch,
    setting: settings.Setting[Any],
    value: str,
    expected: str,
) -> None:
    said: list[str] = []
    monkeypatch.setenv(setting.env[0], value)
    assert settings.load(setting, warn=lambda message, *args: said.append(message % args)) == (
        setting.default
    )
    assert len(said) == 1 and expected in said[0], said


def test_a_bad_keyword_is_said_and_the_default_used() -> None:
    said: list[str] = []
    warn = lambda message, *args: said.append(message % args)  # noqa: E731
    assert settings.load(settings.CONTENT_MAX_LENGTH, 0, warn=warn) == 8192
    assert said == ["adk-otel: content_max_length=0 must be positive; using 8192"]


def test_the_watch_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    now = settings.watch(settings.ANTHROPIC_BASE_URL)
    before = now()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    assert now() != before and now()[0] is not None
