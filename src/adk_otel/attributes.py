"""Span attributes from ADK objects: the only module that reads them.

Every read is defensive (``getattr`` with a default): an attribute ADK renames
costs one attribute on a span, never a broken run.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.util.types import AttributeValue

from . import semconv as sc

Attributes = dict[str, AttributeValue]


def _put(attributes: Attributes, key: str, value: Any) -> None:
    if value is not None and value != "":
        attributes[key] = value


def invocation(invocation_context: Any) -> Attributes:
    session = getattr(invocation_context, "session", None)
    attributes: Attributes = {sc.ADK_SPAN_KIND: sc.SpanKind.INVOCATION.value}
    _put(attributes, sc.ADK_APP_NAME, getattr(invocation_context, "app_name", None))
    _put(attributes, sc.ADK_INVOCATION_ID, getattr(invocation_context, "invocation_id", None))
    _put(attributes, sc.GEN_AI_CONVERSATION_ID, getattr(session, "id", None))
    agent = getattr(invocation_context, "agent", None)
    _put(attributes, sc.GEN_AI_AGENT_NAME, getattr(agent, "name", None))
    return attributes


def invocation_span_name(invocation_context: Any) -> str:
    return f"invocation {getattr(invocation_context, 'app_name', None) or 'adk'}"


def agent(agent_obj: Any, callback_context: Any, parent_name: str | None) -> Attributes:
    attributes: Attributes = {
        sc.ADK_SPAN_KIND: sc.SpanKind.AGENT.value,
        sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
        sc.ADK_AGENT_TYPE: type(agent_obj).__name__,
    }
    _put(attributes, sc.GEN_AI_AGENT_NAME, getattr(agent_obj, "name", None))
    _put(attributes, sc.GEN_AI_AGENT_DESCRIPTION, getattr(agent_obj, "description", None))
    _put(attributes, sc.ADK_AGENT_PARENT, parent_name)
    _put(attributes, sc.ADK_INVOCATION_ID, getattr(callback_context, "invocation_id", None))
    session = getattr(callback_context, "session", None)
    _put(attributes, sc.GEN_AI_CONVERSATION_ID, getattr(session, "id", None))
    return attributes


def model_name(llm_request: Any) -> str:
    return str(getattr(llm_request, "model", None) or "unknown")


def model_request(callback_context: Any, llm_request: Any) -> Attributes:
    attributes: Attributes = {
        sc.ADK_SPAN_KIND: sc.SpanKind.MODEL.value,
        sc.GEN_AI_OPERATION_NAME: sc.OP_GENERATE_CONTENT,
        sc.GEN_AI_REQUEST_MODEL: model_name(llm_request),
    }
    _put(attributes, sc.GEN_AI_AGENT_NAME, getattr(callback_context, "agent_name", None))
    _put(attributes, sc.ADK_INVOCATION_ID, getattr(callback_context, "invocation_id", None))
    return attributes


def model_response(llm_response: Any) -> Attributes:
    attributes: Attributes = {}
    _put(attributes, sc.GEN_AI_RESPONSE_MODEL, getattr(llm_response, "model_version", None))
    finish_reason = getattr(llm_response, "finish_reason", None)
    if finish_reason is not None:
        reason = getattr(finish_reason, "value", finish_reason)
        attributes[sc.GEN_AI_RESPONSE_FINISH_REASONS] = (str(reason).lower(),)
    usage = getattr(llm_response, "usage_metadata", None)
    if usage is not None:
        _put(attributes, sc.GEN_AI_USAGE_INPUT_TOKENS, getattr(usage, "prompt_token_count", None))
        _put(
            attributes,
            sc.GEN_AI_USAGE_OUTPUT_TOKENS,
            getattr(usage, "candidates_token_count", None),
        )
    return attributes


def tool(tool_obj: Any, tool_context: Any) -> Attributes:
    attributes: Attributes = {
        sc.ADK_SPAN_KIND: sc.SpanKind.TOOL.value,
        sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
    }
    _put(attributes, sc.GEN_AI_TOOL_NAME, getattr(tool_obj, "name", None))
    _put(attributes, sc.GEN_AI_TOOL_CALL_ID, getattr(tool_context, "function_call_id", None))
    _put(attributes, sc.GEN_AI_AGENT_NAME, getattr(tool_context, "agent_name", None))
    _put(attributes, sc.ADK_INVOCATION_ID, getattr(tool_context, "invocation_id", None))
    if getattr(tool_obj, "is_long_running", False):
        attributes[sc.ADK_TOOL_LONG_RUNNING] = True
    return attributes
