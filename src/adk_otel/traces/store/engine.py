"""Where the traces table is: a ClickHouse server or an embedded chDB store.

A source is written ``clickhouse://host:port/database`` (``clickhouses://``
for TLS; ``?table=NAME`` when the table is not ``otel_traces``) or
``chdb:DIRECTORY`` (``chdb:DIRECTORY?table=NAME``). A server's user and
password come from the environment (``CLICKHOUSE_USER``,
``CLICKHOUSE_PASSWORD``), never from the URL, so no command line or report
holds a secret. Both run the same SQL and return rows as JSON values, so
every query is written once.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from . import schema

DEFAULT_DATABASE = "default"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SCHEMES = ("clickhouse://", "clickhouses://", "chdb:")


class StoreError(Exception):
    """A store that cannot be used: one line, never holding a secret."""


def is_store(text: str) -> bool:
    """Whether a command's input names a store rather than trace files."""
    return text.startswith(_SCHEMES)


@dataclass(frozen=True)
class Location:
    """A parsed source: ``kind`` ``server`` or ``chdb``."""

    kind: str
    database: str
    table: str
    host: str = ""
    port: int = 0
    secure: bool = False
    path: str = ""

    @property
    def qualified(self) -> str:
        return f"{self.database}.{self.table}"

    def __str__(self) -> str:
        if self.kind == "chdb":
            return f"chdb:{self.path}"
        scheme = "clickhouses" if self.secure else "clickhouse"
        return f"{scheme}://{self.host}:{self.port}/{self.database} ({self.table})"


def _identifier(value: str, what: str, source: str) -> str:
    if not _IDENTIFIER.fullmatch(value):
        raise StoreError(f"{source}: {what} {value!r} is not a plain name (letters, digits, _)")
    return value


def parse(source: str) -> Location:
    """The store a source names (see the module's docstring)."""
    if source.startswith("chdb:"):
        rest, _, query = source.removeprefix("chdb:").partition("?")
        options = parse_qs(query)
        table = _identifier(options.get("table", [schema.TABLE])[0], "table", "chdb")
        database = _identifier(options.get("database", [DEFAULT_DATABASE])[0], "database", "chdb")
        if not rest:
            raise StoreError("chdb: give the store's directory (chdb:DIRECTORY)")
        return Location("chdb", database, table, path=rest)
    if not source.startswith(("clickhouse://", "clickhouses://")):
        raise StoreError(f"{source}: not a store (clickhouse://HOST:PORT/DB or chdb:DIRECTORY)")
    parts = urlsplit(source)
    shown = f"{parts.scheme}://{parts.hostname or ''}"
    if parts.username or parts.password:
        raise StoreError(
            f"{shown}: put no credentials in the URL; set CLICKHOUSE_USER and CLICKHOUSE_PASSWORD"
        )
    options = parse_qs(parts.query)
    secure = parts.scheme == "clickhouses" or options.get("secure", ["0"])[0] in ("1", "true")
    try:
        port = parts.port or (8443 if secure else 8123)
    except ValueError:
        raise StoreError(f"{shown}: the port is not a number") from None
    if not parts.hostname:
        raise StoreError(f"{source}: no host (clickhouse://HOST:PORT/DB)")
    database = _identifier(parts.path.strip("/") or DEFAULT_DATABASE, "database", shown)
    table = _identifier(options.get("table", [schema.TABLE])[0], "table", shown)
    return Location("server", database, table, host=parts.hostname, port=port, secure=secure)


class Store(Protocol):
    """What the queries need of an engine."""

    location: Location
    aggregation_settings: str
    """SETTINGS for the one heavy query (a run's state per run): how this
    engine keeps its memory bounded."""

    def rows(self, sql: str) -> list[list[Any]]:
        """The result, a list per row (JSON values)."""
        ...

    def command(self, sql: str) -> None:
        """A statement without a result."""
        ...

    def insert_json(self, table: str, lines: list[str]) -> None:
        """Rows as JSONEachRow lines into ``table``."""
        ...


def _parse_rows(text: str) -> list[list[Any]]:
    return [json.loads(line) for line in text.splitlines() if line]


_CHDB_CODE = re.compile(r"Code: (\d+)\. DB::Exception: (.*?)(?: \(([A-Z_]+)\))?(?: \(version.*)?$")


def _engine_message(raw: str) -> str:
    """ClickHouse's error text reduced to its first line and its reason."""
    first = raw.strip().splitlines()[0] if raw.strip() else "unknown error"
    first = first.split(" (for url ", 1)[0]
    match = _CHDB_CODE.search(first)
    if match:
        return match.group(2).rstrip(". ") + (f" ({match.group(3)})" if match.group(3) else "")
    return first


class ChdbStore:
    """An embedded store: a directory of ClickHouse data, queried in-process."""

    aggregation_settings = "max_threads = 1, max_bytes_before_external_group_by = 100000000"
    """In-process, on a user's machine: one thread (each thread holds its own
    per-run state before they merge, which doubles the peak on two cores for
    little gain in time), per-run state spilled to disk past 100 MB."""

    def __init__(self, location: Location, *, create: bool = False) -> None:
        try:
            from chdb import session
        except ImportError:
            raise StoreError(
                "chdb: the embedded store needs chDB: pip install 'adk-otel[clickhouse]'"
            ) from None
        self.location = location
        path = Path(location.path)
        if not create and not path.is_dir():
            raise StoreError(f"{location}: no such store (adk-otel load makes one)")
        if path.is_dir() and not is_chdb_directory(path):
            # Opening it would write ClickHouse's own folders into someone's directory.
            raise StoreError(
                f"{location}: not a store (no ClickHouse metadata/ in it), left untouched; "
                "give adk-otel load --into a new or empty directory"
            )
        self._session: Any = None
        try:
            self._session = session.Session(str(path))  # type: ignore[no-untyped-call,unused-ignore]
        except Exception as exc:  # chDB raises its own error types, all one line of text
            reason = _engine_message(str(exc))
            raise StoreError(f"{location}: cannot open the store ({reason})") from None
        if create:
            self.command(f"CREATE DATABASE IF NOT EXISTS {location.database}")

    def rows(self, sql: str) -> list[list[Any]]:
        try:
            result = self._session.query(sql, "JSONCompactEachRow")
        except Exception as exc:
            raise StoreError(f"{self.location}: {_engine_message(str(exc))}") from None
        return _parse_rows(result.data())

    def command(self, sql: str) -> None:
        self.rows(sql)

    def insert_json(self, table: str, lines: list[str]) -> None:
        if not lines:
            return
        body = "\n".join(lines)
        self.command(f"INSERT INTO {table} FORMAT JSONEachRow\n{body}")

    def close(self) -> None:
        self._session.close()


def is_chdb_directory(path: Path) -> bool:
    """An embedded store's directory (ClickHouse's ``metadata/`` in it), or an empty one."""
    return (path / "metadata").is_dir() or not any(path.iterdir())


class ServerStore:
    """A ClickHouse server over HTTP(S), through clickhouse-connect."""

    aggregation_settings = "max_bytes_before_external_group_by = 200000000"
    """A server's own threads; per-run state spilled to disk past 200 MB."""

    def __init__(self, location: Location, *, timeout: float = 30.0) -> None:
        try:
            import clickhouse_connect
        except ImportError:
            raise StoreError(
                f"{location}: reading a ClickHouse server needs clickhouse-connect: "
                "pip install 'adk-otel[clickhouse]'"
            ) from None
        self.location = location
        user = os.environ.get("CLICKHOUSE_USER", "default")
        password = os.environ.get("CLICKHOUSE_PASSWORD", "")
        self._secret = password
        try:
            self._client = clickhouse_connect.get_client(
                host=location.host,
                port=location.port,
                username=user,
                password=password,
                database=location.database,
                secure=location.secure,
                connect_timeout=timeout,
                send_receive_timeout=max(timeout, 300.0),
                autogenerate_session_id=False,
            )
        except Exception as exc:
            raise StoreError(f"{location}: {self._reason(exc)}") from None

    def _reason(self, exc: BaseException) -> str:
        """The server's or the network's reason, in one line, with no secret."""
        text = str(exc)
        lowered = text.lower()
        if "authentication" in lowered or "code: 516" in lowered or "password" in lowered:
            reason = "the server refused the credentials (CLICKHOUSE_USER, CLICKHOUSE_PASSWORD)"
        elif "ssl" in lowered or "certificate" in lowered:
            reason = "the TLS handshake failed (is the port a TLS port, its certificate trusted?)"
        elif any(
            word in lowered
            for word in ("connection refused", "max retries", "timed out", "name or service")
        ):
            reason = "cannot reach the server (is it running, and is the port its HTTP port?)"
        else:
            reason = _engine_message(text[text.find("Code:") :] if "Code:" in text else text)
        if self._secret:
            reason = reason.replace(self._secret, "***")
        return reason

    def rows(self, sql: str) -> list[list[Any]]:
        try:
            raw = self._client.raw_query(sql, fmt="JSONCompactEachRow")
        except Exception as exc:
            raise StoreError(f"{self.location}: {self._reason(exc)}") from None
        return _parse_rows(raw.decode("utf-8"))

    def command(self, sql: str) -> None:
        self.rows(sql)

    def insert_json(self, table: str, lines: list[str]) -> None:
        if not lines:
            return
        try:
            self._client.raw_insert(
                table, insert_block="\n".join(lines).encode("utf-8"), fmt="JSONEachRow"
            )
        except Exception as exc:
            raise StoreError(f"{self.location}: {self._reason(exc)}") from None

    def close(self) -> None:
        self._client.close()


@contextmanager
def open_store(source: str | Location, *, create: bool = False) -> Iterator[Store]:
    """The store a source names, closed after use (chDB holds one store
    open per process at a time)."""
    location = parse(source) if isinstance(source, str) else source
    store: ChdbStore | ServerStore = (
        ChdbStore(location, create=create) if location.kind == "chdb" else ServerStore(location)
    )
    try:
        yield store
    finally:
        store.close()
