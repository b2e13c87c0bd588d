"""A ClickHouse server for tests: ClickHouse's HTTP interface on loopback,
answered by the real engine (chDB) in this process.

clickhouse-connect talks to it as to a server (its version query, its
settings query, Native and JSON formats, errors as HTTP statuses with
ClickHouse's ``Code: N. DB::Exception`` text), so the server path of the
store commands runs end to end: the client's own connection handling, the
same SQL, the same engine. Basic authentication is checked against one user
and password; a wrong one gets ClickHouse's answer (HTTP 403, code 516).
"""

from __future__ import annotations

import base64
import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

USER, PASSWORD = "reader", "s3cret-pa55word"
_AUTH_FAILED = (
    "Code: 516. DB::Exception: {user}: Authentication failed: password is incorrect, or "
    "there is no user with such name. (AUTHENTICATION_FAILED) (version 26.9.2.1)"
)


@contextmanager
def clickhouse_server(path: Path) -> Iterator[int]:
    """Serve the chDB store at ``path`` on a loopback port; yields the port."""
    from chdb import session

    engine = session.Session(str(path))
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self._answer()

        def do_GET(self) -> None:
            self._answer()

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            given = self.headers.get("Authorization", "")
            user, _, password = (
                base64.b64decode(given.removeprefix("Basic ")).decode().partition(":")
            )
            if (user, password) != (USER, PASSWORD):
                self._send(403, _AUTH_FAILED.format(user=user).encode(), code="516")
                return
            query = parse_qs(urlsplit(self.path).query).get("query", [""])[0]
            sql = f"{query}\n{body.decode()}".strip()
            try:
                with lock:
                    result = engine.query(sql, "TabSeparated").bytes()
            except Exception as exc:  # the engine's error, as a server reports it
                self._send(
                    500, str(exc).encode(), code=str(exc).split(".")[0].removeprefix("Code: ")
                )
                return
            self._send(200, result)

        def _send(self, status: int, payload: bytes, code: str | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; charset=UTF-8")
            self.send_header("Content-Length", str(len(payload)))
            if code is not None:
                self.send_header("X-ClickHouse-Exception-Code", code)
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
        engine.close()
