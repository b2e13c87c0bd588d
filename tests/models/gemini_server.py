"""A local server speaking the Gemini REST API (the parts ADK's ``Gemini``
model class uses through google-genai): ``generateContent`` and
``streamGenerateContent?alt=sse``. What it answers depends on the last user
text: "busy" -> 429, "broken" -> 500, anything else -> a reply with usage."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL_VERSION = "gemini-2.5-flash-001"
USAGE = {
    "promptTokenCount": 40,
    "cachedContentTokenCount": 10,
    "candidatesTokenCount": 6,
    "thoughtsTokenCount": 3,
    "totalTokenCount": 49,
}


def _last_text(body: dict[str, Any]) -> str:
    for content in reversed(body.get("contents") or []):
        for part in content.get("parts") or []:
            if "text" in part:
                return str(part["text"])
    return ""


def _chunk(text: str, *, final: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}}
    chunk: dict[str, Any] = {"candidates": [candidate], "modelVersion": MODEL_VERSION}
    if final:
        candidate["finishReason"] = "STOP"
        chunk["usageMetadata"] = USAGE
    return chunk


class _Handler(BaseHTTPRequestHandler):
    requests: list[dict[str, Any]]

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        self.server.requests.append(  # type: ignore[attr-defined]
            {"path": self.path, "body": body, "headers": dict(self.headers)}
        )
        text = _last_text(body)
        if "busy" in text:
            return self._error(429, "RESOURCE_EXHAUSTED", "quota exceeded")
        if "broken" in text:
            return self._error(500, "INTERNAL", "backend failed")
        if ":streamGenerateContent" in self.path:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            pieces = ["in ", "stock", ""]
            for i, piece in enumerate(pieces):
                data = json.dumps(_chunk(piece, final=i == len(pieces) - 1))
                self.wfile.write(f"data: {data}\r\n\r\n".encode())
            return None
        self._json(200, _chunk("in stock", final=True))
        return None

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, code: int, status: str, message: str) -> None:
        self._json(code, {"error": {"code": code, "message": message, "status": status}})


@contextmanager
def gemini_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """``(base_url, requests received)`` of a server on a free loopback port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.requests  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
