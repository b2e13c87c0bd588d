"""Who ran an invocation: ``user.id`` and ``adk.user.id`` on its span.

LLM-observability viewers (Phoenix, Langfuse, MLflow) group traces by
``user.id``; ``adk.user.id`` says the value is ADK's own ``user_id`` (what the
app passed to ``run_async``). A user id can be personal data, so the
``user_id`` keyword, else ``ADK_OTEL_USER_ID``, chooses how it is written:

* ``plain`` (default): as given;
* ``hash``: its SHA-256, in hex: the same user keeps one value, so per-user
  views still work, without the id itself (a guessable id can be found by
  hashing guesses: prefer ``off`` for those);
* ``off``: not written.

An unknown value warns once and writes nothing: a typo must not reveal ids.
"""

from __future__ import annotations

import hashlib
import logging
from enum import StrEnum
from typing import Any

from .. import semconv as sc
from .. import settings
from ..util import sanitize
from ..util.redact import guarded

logger: logging.Logger = guarded(logging.getLogger(__name__))

ENV = settings.USER_ID.env[0]

_warned: set[str] = set()


class UserIdMode(StrEnum):
    """How the user id is written on invocation spans."""

    PLAIN = "plain"
    HASH = "hash"
    OFF = "off"


def resolve(explicit: str | None) -> UserIdMode:
    """The mode from the ``user_id`` keyword, else the environment."""
    return _parse(settings.load(settings.USER_ID, explicit), settings.USER_ID.source(explicit))


def _parse(value: Any, source: str) -> UserIdMode:
    try:
        return UserIdMode(str(value).strip().lower())
    except ValueError:
        message = (
            f"adk-otel: {source}={value!r} is not one of plain, hash, off; no user id is written"
        )
        if message not in _warned:
            _warned.add(message)
            logger.warning(message)
        return UserIdMode.OFF


def put(attributes: dict[str, Any], user_id: Any, mode: UserIdMode) -> None:
    """Add ``user.id`` and ``adk.user.id`` for ``user_id`` under ``mode``."""
    if mode is UserIdMode.OFF or not isinstance(user_id, str) or not user_id:
        return
    if mode is UserIdMode.HASH:
        user_id = hashlib.sha256(user_id.encode("utf-8", "surrogatepass")).hexdigest()
    else:
        user_id = sanitize.clean(user_id)
    attributes[sc.USER_ID] = attributes[sc.ADK_USER_ID] = user_id
