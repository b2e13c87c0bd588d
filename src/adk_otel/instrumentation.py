"""``instrument()`` / ``uninstrument()``: put adk-otel on a Runner or an App."""

from __future__ import annotations

import logging
from typing import Any, TypeVar, Unpack

from .integrations import coexistence
from .lifecycle import runner as runner_wrapper
from .lifecycle import sharing
from .lifecycle.options import OptionArguments
from .plugin import AdkOtelPlugin
from .util.redact import guarded

logger: logging.Logger = guarded(logging.getLogger(__name__))

Target = TypeVar("Target")

_ACCEPTED = (
    "a google.adk Runner (for example InMemoryRunner) or a google.adk.apps.App; "
    "for `adk web` / `adk api_server` use `--extra_plugins adk_otel.AdkOtelPlugin`"
)


def _plugin_list(target: Any) -> list[Any] | None:
    """The live plugin list ADK will call for ``target``, or None."""
    from google.adk.apps import App
    from google.adk.runners import Runner

    if isinstance(target, Runner):
        return target.plugin_manager.plugins
    if isinstance(target, App):
        if target.plugins is None:
            target.plugins = []
        return target.plugins
    return None


def _reject(target: Any) -> TypeError:
    from google.adk.agents import BaseAgent

    hint = ""
    if isinstance(target, BaseAgent):
        hint = f" Wrap the agent first: App(name=..., root_agent={target.name}) or InMemoryRunner."
    return TypeError(
        f"adk_otel.instrument() takes {_ACCEPTED}; got {type(target).__module__}."
        f"{type(target).__qualname__}.{hint}"
    )


def instrument(target: Target, **options: Unpack[OptionArguments]) -> Target:
    """Trace every run of ``target`` and return it.

    ``meter_provider`` receives the GenAI metrics (default: the global one).
    ``capture_content`` (a bool or ``SPAN_ONLY``/``EVENT_ONLY``/
    ``SPAN_AND_EVENT``/``NO_CONTENT``; default: the
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` variable, else off)
    records prompts, outputs, tool arguments and results, each passed through
    ``redact(key, value)`` and cut to ``content_max_length`` characters.
    In an EVENT mode a model call's ``gen_ai.client.inference.operation.details``
    event is a log record on ``logger_provider`` (default: the global one), or
    a span event with ``details_as_span_event=True``.
    ``user_id`` (``plain``, ``hash`` or ``off``; default: ``ADK_OTEL_USER_ID``,
    else ``plain``) says how invocation spans carry ADK's user id as ``user.id``.

    Every ERROR span gets ``adk.error.category`` (docs/failures.md).
    ``error_classifier(exception_or_tool_result, layer)`` may name categories
    of the app's own (``None``: the built-in rules); ``result_failures=False``
    (or ``ADK_OTEL_RESULT_FAILURES=false``) stops tool results in an error
    shape from ending their span ERROR.
    ``traces_file`` (a path) appends the spans to that file as OTLP JSON lines,
    which ``adk-otel tree``, ``summarize`` and the other commands read: traces
    kept without a collector (``OTEL_TRACES_EXPORTER=otlp_json_file`` does the
    same from the environment).

    Adds an :class:`AdkOtelPlugin` ahead of the other plugins (so no other
    plugin's early return can hide a hook from it) and, for a Runner, wraps
    that instance's ``run_async`` / ``run_live`` so cancellation and early
    close end every span. Calling it again is harmless, even mid-run: options
    passed again change only those options on the existing plugin.
    """
    plugins = _plugin_list(target)
    if plugins is None:
        raise _reject(target)
    if coexistence.disabled():
        logger.info("adk-otel: not instrumenting: %s lists adk_otel", coexistence.DISABLED_ENV)
        return target
    existing = next((p for p in plugins if isinstance(p, AdkOtelPlugin)), None)
    if existing is None:
        existing = AdkOtelPlugin(**options)
        plugins.insert(0, existing)
    elif any(value is not None for value in options.values()):
        existing.configure(**options)
    existing.prepare()
    existing.note_root(*_root_of(target))
    if hasattr(target, "plugin_manager"):
        runner_wrapper.wrap(target)
    return target


def _root_of(target: Any) -> tuple[Any, Any]:
    """``(app name, root node)`` of a Runner (``app_name``, ``agent``) or an
    App (``name``, ``root_agent``): public on ADK 2.5 through 2.13."""
    if hasattr(target, "plugin_manager"):
        return getattr(target, "app_name", None), getattr(target, "agent", None)
    return getattr(target, "name", None), getattr(target, "root_agent", None)


def uninstrument(target: Target) -> Target:
    """Remove what :func:`instrument` added; spans still open are ended."""
    plugins = _plugin_list(target)
    if plugins is None:
        raise _reject(target)
    for plugin in plugins:
        if isinstance(plugin, AdkOtelPlugin):
            plugin.end_open_spans()  # no hook will reach them once it is removed
    plugins[:] = [p for p in plugins if not isinstance(p, AdkOtelPlugin | sharing.CloseWitness)]
    if hasattr(target, "plugin_manager"):
        runner_wrapper.unwrap(target)
    return target


def plugin_of(target: Any) -> AdkOtelPlugin | None:
    """The adk-otel plugin on ``target``, if instrumented."""
    plugins = _plugin_list(target) or []
    return next((p for p in plugins if isinstance(p, AdkOtelPlugin)), None)
