"""Local servers speaking model APIs, for ADK's real model classes offline:
the Gemini REST API (``generateContent``, ``streamGenerateContent?alt=sse``),
OpenAI chat completions (LiteLLM) and Anthropic messages. What each answers
depends on the last user text: "busy" -> 429 (with a retry delay), "broken"
-> 500, "invalid" -> 400, "unauthorized" -> 401, "forbidden" -> 403,
"missing" -> 404, "unavailable" -> 503, "overloaded" -> 529, "unsafe" -> a
candidate blocked for safety, "jailbreak" -> a prompt blocked by the
provider, "silent" -> no answer until the server stops (a client timeout),
anything else -> a reply with usage."""

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
    """Records each request; answers errors by the last user text, else ``reply``."""

    retry_headers: tuple[tuple[str, str], ...] = ()
    """Headers of a 429 answer (Gemini says when to retry in the body instead)."""

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if self.path == "/token":  # an OAuth token endpoint (Google credentials' refresh)
            self.rfile.read(length)
            token = {"access_token": "test-token", "expires_in": 3600, "token_type": "Bearer"}
            return self._json(200, token)
        body = json.loads(self.rfile.read(length) or b"{}")
        self.server.requests.append(  # type: ignore[attr-defined]
            {"path": self.path, "body": body, "headers": dict(self.headers)}
        )
        text = self.last_text(body)
        if "silent" in text:
            self.server.stopping.wait(60)  # type: ignore[attr-defined]
            return None
        for word, code, status in _ERRORS:
            if word in text:
                extra = self.retry_headers if code == 429 else ()
                return self._json(code, self.error_body(code, status), _ERROR_HEADERS + extra)
        if "unsafe" in text or "jailbreak" in text:
            return self._json(200, self.blocked(prompt="jailbreak" in text))
        self.reply(body)
        return None

    def blocked(self, *, prompt: bool) -> dict[str, Any]:
        """Gemini's answers for a blocked candidate, or a blocked prompt."""
        if prompt:
            return {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": USAGE}
        candidate = {"finishReason": "SAFETY", "safetyRatings": []}
        return {"candidates": [candidate], "modelVersion": MODEL_VERSION, "usageMetadata": USAGE}

    def last_text(self, body: dict[str, Any]) -> str:
        return _last_text(body)

    def error_body(self, code: int, status: str) -> dict[str, Any]:
        error: dict[str, Any] = {"code": code, "message": f"{status} (test)", "status": status}
        if code == 429:
            error["details"] = [
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12s"}
            ]
        return {"error": error}

    def reply(self, body: dict[str, Any]) -> None:
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

    def _events(self, events: list[tuple[str | None, Any]]) -> None:
        """A server-sent event stream (OpenAI's chunks carry no event name)."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for name, data in events:
            payload = data if isinstance(data, str) else json.dumps(data)
            head = f"event: {name}\n" if name else ""
            self.wfile.write(f"{head}data: {payload}\n\n".encode())

    def _json(
        self, status: int, payload: dict[str, Any], headers: tuple[tuple[str, str], ...] = ()
    ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


_ERRORS = (
    ("busy", 429, "RESOURCE_EXHAUSTED"),
    ("broken", 500, "INTERNAL"),
    ("invalid", 400, "INVALID_ARGUMENT"),
    ("unauthorized", 401, "UNAUTHENTICATED"),
    ("forbidden", 403, "PERMISSION_DENIED"),
    ("missing", 404, "NOT_FOUND"),
    ("unavailable", 503, "UNAVAILABLE"),
    ("overloaded", 529, "OVERLOADED"),
)
# The openai and anthropic SDKs would retry (after a pause) without this.
_ERROR_HEADERS = (("x-should-retry", "false"),)


class _ChatHandler(_Handler):
    """APIs whose requests carry ``messages`` (OpenAI chat, Anthropic messages)."""

    retry_headers = (("retry-after", "3"),)

    def last_text(self, body: dict[str, Any]) -> str:
        messages = [m for m in body.get("messages") or [] if m.get("role") == "user"]
        content = messages[-1].get("content") if messages else ""
        if isinstance(content, list):
            content = " ".join(str(part.get("text", "")) for part in content)
        return str(content or "")


class _OpenAiHandler(_ChatHandler):
    """OpenAI chat completions, as LiteLLM calls them (``{api_base}/chat/completions``)."""

    def error_body(self, code: int, status: str) -> dict[str, Any]:
        return {"error": {"message": f"{status} (test)", "type": status.lower(), "code": code}}

    def reply(self, body: dict[str, Any]) -> None:
        if body.get("stream"):
            return self._events(
                [
                    (None, _openai_chunk({"role": "assistant", "content": "in "})),
                    (None, _openai_chunk({"content": "stock"})),
                    (None, _openai_chunk({}, finish_reason="stop")),
                    (None, {**_openai_chunk(None), "usage": OPENAI_USAGE}),
                    (None, "[DONE]"),
                ]
            )
        self._json(
            200,
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": OPENAI_MODEL_VERSION,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "in stock"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": OPENAI_USAGE,
            },
        )


class _AnthropicHandler(_ChatHandler):
    """Anthropic messages (``/v1/messages``), as the anthropic SDK calls them."""

    def error_body(self, code: int, status: str) -> dict[str, Any]:
        kind = {
            400: "invalid_request_error",
            401: "authentication_error",
            429: "rate_limit_error",
            529: "overloaded_error",
        }.get(code, "api_error")
        return {"type": "error", "error": {"type": kind, "message": f"{status} (test)"}}

    def reply(self, body: dict[str, Any]) -> None:
        if body.get("stream"):
            start = {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": ANTHROPIC_MODEL_VERSION,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {**ANTHROPIC_USAGE, "output_tokens": 1},
            }
            text = {"type": "text", "text": ""}
            return self._events(
                [
                    ("message_start", {"type": "message_start", "message": start}),
                    (
                        "content_block_start",
                        {"type": "content_block_start", "index": 0, "content_block": text},
                    ),
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": 0,
                            "delta": {"type": "text_delta", "text": "in stock"},
                        },
                    ),
                    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                    (
                        "message_delta",
                        {
                            "type": "message_delta",
                            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                            "usage": {"output_tokens": ANTHROPIC_USAGE["output_tokens"]},
                        },
                    ),
                    ("message_stop", {"type": "message_stop"}),
                ]
            )
        self._json(
            200,
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": ANTHROPIC_MODEL_VERSION,
                "content": [{"type": "text", "text": "in stock"}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": ANTHROPIC_USAGE,
            },
        )


def _openai_chunk(delta: dict[str, Any] | None, finish_reason: str | None = None) -> dict[str, Any]:
    """One chunk of a streamed chat completion (``delta`` None: the usage chunk, no choices)."""
    choices = (
        [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
    )
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": OPENAI_MODEL_VERSION,
        "choices": choices,
    }


OPENAI_USAGE = {
    "prompt_tokens": 25,
    "completion_tokens": 4,
    "total_tokens": 29,
    "prompt_tokens_details": {"cached_tokens": 5},
    "completion_tokens_details": {"reasoning_tokens": 2},
}
ANTHROPIC_USAGE = {
    "input_tokens": 30,
    "output_tokens": 5,
    "cache_read_input_tokens": 8,
    "cache_creation_input_tokens": 4,
}
OPENAI_MODEL_VERSION = "gpt-4o-2024-08-06"
ANTHROPIC_MODEL_VERSION = "claude-sonnet-4-20250514"
HANDLERS = {"gemini": _Handler, "openai": _OpenAiHandler, "anthropic": _AnthropicHandler}


@contextmanager
def api_server(api: str) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """``(base_url, requests received)`` of a ``gemini``/``openai``/``anthropic``
    server on a free loopback port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), HANDLERS[api])
    server.daemon_threads = True
    server.requests = []  # type: ignore[attr-defined]
    server.stopping = threading.Event()  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.requests  # type: ignore[attr-defined]
    finally:
        server.stopping.set()  # type: ignore[attr-defined]
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
