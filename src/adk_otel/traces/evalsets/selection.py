"""Which runs to turn into eval cases: ``--where KEY=VALUE``, a time range, a limit.

The keys are the check spec's words where it has one (``outcome``, ``agent``,
``tool``, ``error``) and say of a run what a span selector says of a span. Any
attribute key (``service.version``, ``deployment.environment``) is one of the
run's invocation span, else of its resource, as every other command's
``--where`` reads it, with the same short keys (``semconv.RUN_KEY_ALIASES``).
Keys and values are trimmed. As with ``--trace-id`` and ``--service``, a key
given again allows another value and different keys must all hold.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from ... import semconv as sc
from ..io.model import SpanRecord
from .runs import Run


class SelectionError(ValueError):
    """A selection that cannot be understood (one-line message)."""


def _error_matches(expected: str, record: SpanRecord) -> bool:
    kind = record.error_type or ""
    return expected in (kind, kind.rsplit(".", 1)[-1]) or expected == record.status_description


def _failed_tool(run: Run, name: str) -> bool:
    return any(
        r.attributes.get(sc.GEN_AI_TOOL_NAME) == name and r.outcome == sc.Outcome.ERROR
        for r in run.tools
    )


KEYS: dict[str, tuple[str, Callable[[Run, str], bool]]] = {
    "outcome": ("how the run ended", lambda run, value: run.outcome == value),
    "category": ("a failure category in the run", lambda run, value: value in run.categories),
    "error": (
        "an error type (or its class name, or status message) in the run",
        lambda run, value: any(_error_matches(value, r) for r in (run.invocation, *run.spans)),
    ),
    "tool": (
        "the run called this tool",
        lambda run, value: any(r.attributes.get(sc.GEN_AI_TOOL_NAME) == value for r in run.tools),
    ),
    "failed_tool": ("the run's call of this tool failed", _failed_tool),
    "agent": ("the run ran this agent", lambda run, value: value in run.agents),
    "app": ("the app (adk.app.name)", lambda run, value: run.app == value),
    "user": ("the user id as recorded (user.id)", lambda run, value: run.user == value),
    "session": ("the session (gen_ai.conversation.id)", lambda run, value: run.session == value),
}
OUTCOMES = tuple(outcome.value for outcome in sc.Outcome)
_SHORT = {name: alias for alias, name in sc.RUN_KEY_ALIASES.items() if alias in KEYS}
"""Attribute keys this command has a run key for (``adk.outcome``: ``outcome``)."""


def _attribute(key: str) -> Callable[[Run, str], bool]:
    """A run whose invocation span (else its resource) holds ``key`` = the value."""

    def matches(run: Run, value: str) -> bool:
        record = run.invocation
        found = record.attributes.get(key, record.resource.get(key))
        return found is not None and str(found) == value

    return matches


def _matcher(key: str) -> Callable[[Run, str], bool]:
    return KEYS[key][1] if key in KEYS else _attribute(key)


@dataclass(frozen=True)
class Selection:
    """Conditions on runs: each key's values (any of them), every key, and the time range."""

    where: dict[str, tuple[str, ...]] = field(default_factory=dict)
    since_ns: int | None = None
    until_ns: int | None = None

    def __call__(self, run: Run) -> bool:
        if self.since_ns is not None and run.start_ns < self.since_ns:
            return False
        if self.until_ns is not None and run.start_ns >= self.until_ns:
            return False
        return all(
            any(_matcher(key)(run, value) for value in values) for key, values in self.where.items()
        )

    @property
    def description(self) -> str:
        words = [f"--where {key}={value}" for key, values in self.where.items() for value in values]
        if self.since_ns is not None:
            words.append(f"--since {_iso(self.since_ns)}")
        if self.until_ns is not None:
            words.append(f"--until {_iso(self.until_ns)}")
        return " ".join(words)


def parse(where: Sequence[str], *, since: str | None = None, until: str | None = None) -> Selection:
    """A :class:`Selection` from the command line's words."""
    conditions: dict[str, tuple[str, ...]] = {}
    for item in where:
        key, equals, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if "." not in key:
            key = key.replace("-", "_")
        if not equals or not value:
            raise SelectionError(f"--where {item!r}: expected KEY=VALUE, KEY one of {_keys()}")
        if key not in KEYS:
            key = _SHORT.get(key, sc.RUN_KEY_ALIASES.get(key, key))
        if key not in KEYS and "." not in key:
            known = list(dict.fromkeys([*KEYS, *sc.RUN_KEY_ALIASES]))
            near = difflib.get_close_matches(key, known, 3)
            guess = f" (did you mean {' or '.join(near)}?)" if near else ""
            raise SelectionError(
                f"--where {item!r}: unknown key {key!r}{guess}; known: {_keys()}, or any "
                "attribute key of the run (service.version=1.5)"
            )
        if key == "outcome" and value not in OUTCOMES:
            raise SelectionError(f"--where {item!r}: outcome is one of {', '.join(OUTCOMES)}")
        conditions[key] = (*conditions.get(key, ()), value)
    since_ns = _time(since, "--since")
    until_ns = _time(until, "--until")
    if since_ns is not None and until_ns is not None and until_ns <= since_ns:
        raise SelectionError("--until must be later than --since")
    return Selection(conditions, since_ns, until_ns)


_RUN_VALUES: dict[str, Callable[[Run], str | None]] = {
    "outcome": lambda run: run.outcome,
    "app": lambda run: run.app,
    "user": lambda run: run.user,
    "session": lambda run: run.session,
}


def values_present(runs: Sequence[Run], chosen: Selection, shown: int = 8) -> str:
    """What the runs hold for each key of ``chosen`` that has one value per
    run: said when nothing matched (a typo in a value, or the wrong version)."""
    parts = []
    for key in chosen.where:
        if key not in _RUN_VALUES and "." not in key:
            continue

        def value(run: Run, key: str = key) -> str | None:
            if key in _RUN_VALUES:
                return _RUN_VALUES[key](run)
            record = run.invocation
            found = record.attributes.get(key, record.resource.get(key))
            return None if found is None else str(found)

        counts = Counter(value(run) for run in runs)
        missing = counts.pop(None, 0)
        if not counts:
            parts.append(f"no run has {key!r}")
            continue
        held = ", ".join(f"{v!r} ({n} runs)" for v, n in counts.most_common(shown))
        more = ", ..." if len(counts) > shown else ""
        none = f", {missing} runs without it" if missing else ""
        parts.append(f"{key} holds {held}{more}{none}")
    return "; ".join(parts)


def _keys() -> str:
    return ", ".join(KEYS)


def help_text() -> str:
    """The keys, one a line, for the command's help."""
    lines = [f"  {key:<12} {meaning}" for key, (meaning, _) in KEYS.items()]
    lines.append("  KEY.NAME     any attribute of the run (service.version=1.5), as elsewhere")
    return "\n".join(lines)


def _time(value: str | None, flag: str) -> int | None:
    """An ISO 8601 date or time (UTC unless it says otherwise) as Unix nanoseconds."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise SelectionError(
            f"{flag} {value!r}: not an ISO 8601 date or time (2026-03-01, 2026-03-01T09:30Z)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return (moment - _EPOCH) // timedelta(microseconds=1) * 1000
    except (OverflowError, ValueError):
        raise SelectionError(f"{flag} {value!r}: out of range") from None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _iso(ns: int) -> str:
    return (_EPOCH + timedelta(microseconds=ns // 1000)).isoformat().replace("+00:00", "Z")
