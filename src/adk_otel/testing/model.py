"""A scripted ``BaseLlm`` that drives real ADK agents offline.

ADK ships no public fake model, so tests (ours and our users') need one that a
real ``LlmAgent`` accepts unchanged::

    from adk_otel.testing import ScriptedModel, reply, call, fail

    model = ScriptedModel(script=[call("lookup", {"sku": "A1"}), reply("in stock")])
    agent = LlmAgent(name="shop", model=model, tools=[lookup])

Which step answers a request is derived from the request itself: the number
of turns the model already took in that conversation (``model``-role contents).
That keeps one model instance safe to share between concurrent sessions, and a
loop agent's second iteration gets the second step. Past the end of the script
the last step repeats.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.base_llm_connection import BaseLlmConnection
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from pydantic import Field, PrivateAttr


@dataclass(frozen=True)
class Step:
    """One model turn: what the model answers, and how.

    ``parts`` is the content answered; ``error`` is raised instead (after any
    streamed ``chunks``); ``gate`` is awaited before answering and ``started``
    set on entry, so a test can hold a model call open without sleeping.
    """

    parts: tuple[types.Part, ...] = ()
    error: BaseException | None = None
    chunks: tuple[str, ...] = ()
    delay: float = 0.0
    gate: asyncio.Event | None = None
    started: asyncio.Event | None = None
    input_tokens: int = 12
    output_tokens: int = 7
    finish_reason: types.FinishReason = types.FinishReason.STOP
    extra: dict[str, Any] = field(default_factory=dict)


def reply(text: str, **options: Any) -> Step:
    """A final text answer."""
    return Step(parts=(types.Part(text=text),), **options)


def call(name: str, args: dict[str, Any] | None = None, **options: Any) -> Step:
    """A single function call to the tool ``name``."""
    return calls((name, args or {}), **options)


def calls(*requested: tuple[str, dict[str, Any]], **options: Any) -> Step:
    """Several function calls in one turn (ADK runs them concurrently)."""
    parts = tuple(
        types.Part(function_call=types.FunctionCall(name=name, args=args))
        for name, args in requested
    )
    return Step(parts=parts, **options)


def fail(error: BaseException, **options: Any) -> Step:
    """The model call raises ``error``."""
    return Step(error=error, **options)


def stream(*chunks: str, error: BaseException | None = None, **options: Any) -> Step:
    """Streamed partial chunks, then the aggregated final text (or ``error``).

    Chunks are only streamed when the run asks for SSE streaming; otherwise the
    aggregated text comes as one response.
    """
    return Step(parts=(types.Part(text="".join(chunks)),), chunks=chunks, error=error, **options)


def _turns_taken(llm_request: LlmRequest) -> int:
    return sum(1 for content in llm_request.contents or [] if content.role == "model")


def _response(step: Step, parts: Sequence[types.Part], *, partial: bool) -> LlmResponse:
    usage = None
    if not partial:
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=step.input_tokens,
            candidates_token_count=step.output_tokens,
            total_token_count=step.input_tokens + step.output_tokens,
        )
    return LlmResponse(
        content=types.Content(role="model", parts=list(parts)),
        partial=partial or None,
        turn_complete=not partial,
        finish_reason=None if partial else step.finish_reason,
        usage_metadata=usage,
        model_version="scripted-model-001",
        **step.extra,
    )


class ScriptedModel(BaseLlm):
    """A ``BaseLlm`` that answers from a script instead of a network."""

    model: str = "scripted-model"
    script: list[Step] = Field(default_factory=lambda: [reply("ok")])
    choose: Callable[[LlmRequest], Step] | None = None
    """Optional: pick the step from the request yourself."""

    _requests: list[LlmRequest] = PrivateAttr(default_factory=list)

    @property
    def requests(self) -> list[LlmRequest]:
        """Every request the model received, in order."""
        return self._requests

    def step_for(self, llm_request: LlmRequest) -> Step:
        if self.choose is not None:
            return self.choose(llm_request)
        return self.script[min(_turns_taken(llm_request), len(self.script) - 1)]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self._requests.append(llm_request)
        step = self.step_for(llm_request)
        if step.started is not None:
            step.started.set()
        if step.gate is not None:
            await step.gate.wait()
        if step.delay:
            await asyncio.sleep(step.delay)
        if stream:
            for chunk in step.chunks:
                yield _response(step, [types.Part(text=chunk)], partial=True)
        if step.error is not None:
            raise step.error
        yield _response(step, step.parts, partial=False)

    @contextlib.asynccontextmanager
    async def connect(self, llm_request: LlmRequest) -> AsyncGenerator[BaseLlmConnection, None]:
        connection = ScriptedLiveConnection(self, llm_request)
        try:
            yield connection
        finally:
            await connection.close()


class ScriptedLiveConnection(BaseLlmConnection):
    """A live (bidirectional) connection that answers each user content with
    the next scripted step, then reports the turn complete."""

    def __init__(self, model: ScriptedModel, llm_request: LlmRequest) -> None:
        self._model = model
        self._request = llm_request
        self._inbox: asyncio.Queue[types.Content | None] = asyncio.Queue()
        self._turn = 0
        self._closed = False

    async def send_history(self, history: list[types.Content]) -> None:
        if history and history[-1].role == "user":
            await self._inbox.put(history[-1])

    async def send_content(self, content: types.Content) -> None:
        await self._inbox.put(content)

    async def send_realtime(self, blob: types.Blob) -> None:
        return None

    async def send_context_update(
        self, *, system_instruction: str | None = None, tools: Any = None
    ) -> None:
        """A new instruction or tools on the open connection (ADK >= 2.15): a
        script answers the same whatever it is told."""
        return None

    async def receive(self) -> AsyncGenerator[LlmResponse, None]:
        # ADK calls receive() again after each turn; once closed, a
        # connection answers nothing instead of waiting forever.
        while not self._closed:
            content = await self._inbox.get()
            if content is None:
                self._closed = True
                return
            if content.parts and all(p.function_response for p in content.parts):
                continue
            step = self._model.script[min(self._turn, len(self._model.script) - 1)]
            self._turn += 1
            if step.error is not None:
                raise step.error
            yield _response(step, step.parts, partial=False)

    async def close(self) -> None:
        await self._inbox.put(None)
