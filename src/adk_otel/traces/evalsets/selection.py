"""Which runs to turn into eval cases: ``--where KEY=VALUE``, a time range, a limit.

The keys are the check spec's words where it has one (``outcome``, ``agent``,
``tool``, ``error``) and say of a run what a span selector says of a span. As
with ``--trace-id`` and ``--service``, a key given again allows another value
and different keys must all hold.
"""

from __future__ import annotations

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
            any(KEYS[key][1](run, value) for value in values) for key, values in self.where.items()
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
        key = key.strip().replace("-", "_")
        if not equals or not value:
            raise SelectionError(f"--where {item!r}: expected KEY=VALUE, KEY one of {_keys()}")
        if key not in KEYS:
            raise SelectionError(f"--where {item!r}: unknown key {key!r}; known: {_keys()}")
        if key == "outcome" and value not in OUTCOMES:
            raise SelectionError(f"--where {item!r}: outcome is one of {', '.join(OUTCOMES)}")
        conditions[key] = (*conditions.get(key, ()), value)
    since_ns = _time(since, "--since")
    until_ns = _time(until, "--until")
    if since_ns is not None and until_ns is not None and until_ns <= since_ns:
        raise SelectionError("--until must be later than --since")
    return Selection(conditions, since_ns, until_ns)


def _keys() -> str:
    return ", ".join(KEYS)


def help_text() -> str:
    """The keys, one a line, for the command's help."""
    return "\n".join(f"  {key:<12} {meaning}" for key, (meaning, _) in KEYS.items())


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
