"""Span attributes from ADK objects: the only module that reads them.

Every read is defensive (``getattr`` with a default): an attribute ADK renames
costs one attribute on a span, never a broken run.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry.util.types import AttributeValue

from .. import semconv as sc
from .. import settings
from ..util import sanitize
from . import content, endpoint
from .inference_recorders import RECORDED_KINDS, Recorder, inference_recorder

Attributes = dict[str, AttributeValue]


# ``adk.span.kind`` values, read once (an enum's ``.value`` is a call per span).
_AGENT = sc.SpanKind.AGENT.value
_MODEL = sc.SpanKind.MODEL.value
_TOOL = sc.SpanKind.TOOL.value
_INVOCATION = sc.SpanKind.INVOCATION.value

# What a span of a sampled-out trace gets instead: its layer only (the ledger's
# bookkeeping reads it), nothing built from ADK objects.
AGENT_KIND_ONLY: Attributes = {sc.ADK_SPAN_KIND: sc.SpanKind.AGENT.value}
MODEL_KIND_ONLY: Attributes = {sc.ADK_SPAN_KIND: sc.SpanKind.MODEL.value}
TOOL_KIND_ONLY: Attributes = {sc.ADK_SPAN_KIND: sc.SpanKind.TOOL.value}


_descent_cache: dict[tuple[type, str], bool] = {}


def _descends_from(cls: type, name: str) -> bool:
    """Whether ``cls`` has an ancestor class called ``name`` (matched by name,
    so the ADK module defining it need not be importable); cached per class."""
    found = _descent_cache.get((cls, name))
    if found is None:
        found = _descent_cache[(cls, name)] = any(k.__name__ == name for k in cls.__mro__)
    return found


def _put(attributes: Attributes, key: str, value: Any) -> None:
    """Set an optional attribute, unless its value is None or empty."""
    if value is not None and value != "":
        attributes[key] = value


def _present(candidates: dict[str, Any]) -> Attributes:
    """``candidates`` without their ``None`` and empty values (:func:`_put`'s
    rule): one call for a span's worth of optional attributes, where ``_put``
    is one call per attribute (this runs for every span)."""
    return {k: v for k, v in candidates.items() if v is not None and v != ""}


_STATIC_LIMIT = 1024
"""Openings kept per kind of span; the store starts over when full."""


@dataclass(frozen=True, slots=True)
class Opening:
    """What a span's name and start attributes owe to its agent, tool or
    model configuration alone, built and made safe once per configuration
    (``Ledger.start(clean=True)``). Never changed by callers (they copy
    ``attributes``)."""

    name: str
    attributes: Attributes
    model: Any = None
    """A weak reference to the model object the cache key names by ``id()``
    (an opening holds no model alive): the opening holds while it is that
    object, since another may take the id after it is gone."""
    environment: tuple[Any, ...] | None = None
    """The environment variables a Google or Anthropic model's provider and
    endpoint depend on, as they were when built (``None``: none do)."""
    remote: bool = False
    """An agent that runs in another service (its span is a ``CLIENT``)."""


_agent_openings: dict[tuple[Any, ...], Opening] = {}
_model_openings: dict[tuple[Any, ...], Opening] = {}
_tool_openings: dict[tuple[Any, ...], Opening] = {}

_MISSING = object()
_environment = settings.watch(
    settings.GOOGLE_GENAI_USE_ENTERPRISE,
    settings.GOOGLE_GENAI_USE_VERTEXAI,
    settings.GOOGLE_GEMINI_BASE_URL,
    settings.GOOGLE_VERTEX_BASE_URL,
    settings.GOOGLE_CLOUD_LOCATION,
    settings.ANTHROPIC_BASE_URL,
)
"""The variables a provider and endpoint are read from, as they are now (this
runs per span of a Google or Anthropic model)."""


def _keep(store: dict[tuple[Any, ...], Opening], key: tuple[Any, ...], opening: Opening) -> Opening:
    if len(store) >= _STATIC_LIMIT:
        store.clear()
    store[key] = opening
    return opening


def _kept(
    store: dict[tuple[Any, ...], Opening],
    key: tuple[Any, ...],
    held: Any,
    build: Callable[..., Opening],
    arguments: tuple[Any, ...],
) -> Opening:
    """The opening kept under ``key`` while it holds, else ``build(*arguments,
    weak reference to held)`` kept there. An unhashable key or a model object
    with no weak references: built each time."""
    try:
        found = store.get(key)
    except TypeError:
        return build(*arguments, None)
    if found is not None and (
        (found.model is None and found.environment is None) or _fresh(found, held)
    ):
        return found
    try:
        ref = _weak(held)
    except TypeError:
        return build(*arguments, None)
    return _keep(store, key, build(*arguments, ref))


def _fresh(found: Opening, model: Any) -> bool:
    """Whether a kept opening still holds: its model the same object, the
    environment it was read under unchanged."""
    if model is not None and (found.model is None or found.model() is not model):
        return False
    return found.environment is None or found.environment == _environment()


def _weak(model: Any) -> Any:
    """A weak reference to ``model`` (None for none); raises TypeError for
    an object that cannot have one, which is then not kept."""
    return weakref.ref(model) if model is not None else None


def _model_key(agent_obj: Any) -> tuple[Any, Any]:
    """``(key part, model object)`` naming an agent's model in a cache key:
    a model named by string is the string (its object is built from it), a
    model object its ``id()`` and name (the opening holds a weak reference to
    it), an inherited one the object it resolves to now. The field is read from the
    instance's values (a dict read: this runs for every agent and model span)."""
    try:
        field = agent_obj.__dict__.get("model", _MISSING)
    except AttributeError:  # None, or an object with no instance dict
        field = _MISSING
    if field is _MISSING:
        if agent_obj is None or not hasattr(type(agent_obj), "model"):
            return None, None  # an agent with no model
        field = getattr(agent_obj, "model", None)  # a class-level model (a property)
    if field is None:
        return None, None
    if field.__class__ is str and field:
        return field, None
    if field.__class__ is str:  # empty: inherited from an ancestor, resolved now
        field = _agent_model(agent_obj)
        if field is None:
            return None, None
    try:  # the model's name too: an object whose name is changed in place is another model
        name = field.model
    except AttributeError:
        name = None
    return (id(field), name), field


def _environment_of(provider: Any, server: Any) -> tuple[Any, ...] | None:
    """The environment an opening depends on: a Google provider's backend
    and any endpoint are read from it."""
    if server is not None or provider in (sc.PROVIDER_GEMINI, sc.PROVIDER_VERTEX_AI):
        return _environment()
    return None


def agent_opening(agent_obj: Any, parent_name: str | None, latest: bool = False) -> Opening:
    """An agent span's name, start attributes (ids aside) and kind."""
    part, held = _model_key(agent_obj)
    try:  # an ADK agent's fields (this runs for every agent span)
        key = (
            agent_obj.__class__,
            agent_obj.name,
            agent_obj.description,
            parent_name,
            part,
            latest,
        )
    except AttributeError:
        key = (
            type(agent_obj),
            getattr(agent_obj, "name", None),
            getattr(agent_obj, "description", None),
            parent_name,
            part,
            latest,
        )
    return _kept(_agent_openings, key, held, _agent_opening, (agent_obj, parent_name, latest))


def _agent_opening(agent_obj: Any, parent_name: str | None, latest: bool, held: Any) -> Opening:
    model = _agent_model(agent_obj)
    model_str = getattr(model, "model", None) if model is not None else None
    # The current agent-span conventions dropped the provider.
    provider = None if model is None or latest else provider_name(model, model_str)
    name = getattr(agent_obj, "name", None)
    attributes: Attributes = {
        sc.ADK_SPAN_KIND: _AGENT,
        sc.OPENINFERENCE_SPAN_KIND: sc.OI_AGENT,
        sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
        sc.ADK_AGENT_TYPE: type(agent_obj).__name__,
        **_present(
            {
                sc.GEN_AI_AGENT_NAME: name,
                sc.GEN_AI_AGENT_DESCRIPTION: getattr(agent_obj, "description", None),
                sc.ADK_AGENT_PARENT: parent_name,
                sc.GEN_AI_PROVIDER_NAME: provider,
                sc.GEN_AI_REQUEST_MODEL: model_str,
            }
        ),
    }
    return Opening(
        sanitize.clean(f"invoke_agent {name}"),
        dict(sanitize.attributes(attributes) or {}),
        held,
        _environment_of(provider, None) if model is not None else None,
        is_remote_agent(agent_obj),
    )


def model_opening(
    callback_context: Any, llm_request: Any, streaming: bool, latest: bool
) -> Opening:
    """A model call's span name and start attributes (ids and request parameters aside)."""
    try:  # ADK's request and context (this runs for every model call)
        model_str = llm_request.model
        agent_obj = callback_context._invocation_context.agent
        agent_name = agent_obj.name
    except AttributeError:
        model_str = getattr(llm_request, "model", None)
        agent_obj = _calling_agent(callback_context)
        agent_name = (
            getattr(agent_obj, "name", None)
            if agent_obj is not None
            else getattr(callback_context, "agent_name", None)
        )
    part, held = _model_key(agent_obj)
    model = held if held is not None else _agent_model(agent_obj)
    kind = _kind(model) if model is not None else None
    recorder = (
        inference_recorder(kind, model, streaming=streaming) if kind in RECORDED_KINDS else None
    )
    key = (model_str, agent_name, part, streaming, latest, recorder)
    return _kept(
        _model_openings,
        key,
        held,
        _model_opening,
        (agent_obj, agent_name, llm_request, streaming, recorder),
    )


def _model_opening(
    agent_obj: Any,
    agent_name: Any,
    llm_request: Any,
    streaming: bool,
    recorder: Recorder | None,
    held: Any,
) -> Opening:
    """A model call's opening. With a client instrumentation recording the inference
    (``recorder``), the span is the ADK layer around it, not a second inference: no
    OpenInference LLM kind (CHAIN, which Phoenix and Langfuse both read first), no
    operation name, the recorder named; its usage goes on as ``adk.usage.*``
    (``ledger.telemetry.layer_usage``)."""
    model_str = getattr(llm_request, "model", None)
    model = _agent_model(agent_obj)
    if model is not None and getattr(model, "model", None) != model_str:
        model = None  # a callback switched the model: trust the request
    provider = provider_name(model, model_str)
    server = model_server(model) if model is not None else None
    name = model_name(llm_request)
    attributes: Attributes = {
        sc.ADK_SPAN_KIND: _MODEL,
        sc.OPENINFERENCE_SPAN_KIND: sc.OI_LLM,
        sc.GEN_AI_OPERATION_NAME: sc.OP_GENERATE_CONTENT,
        sc.GEN_AI_REQUEST_MODEL: name,
        **_present({sc.GEN_AI_AGENT_NAME: agent_name, sc.GEN_AI_PROVIDER_NAME: provider}),
    }
    if server is not None:
        attributes[sc.SERVER_ADDRESS], attributes[sc.SERVER_PORT] = server
    if streaming:
        attributes[sc.GEN_AI_REQUEST_STREAM] = True
    operation = sc.OP_GENERATE_CONTENT
    if recorder is not None and recorder.records_metrics:
        attributes[sc.ADK_INFERENCE_METRICS_RECORDED_BY] = recorder.name
    if recorder is not None and recorder.stood_down is not None:
        attributes[sc.ADK_INFERENCE_STOOD_DOWN] = recorder.stood_down
    if recorder is not None and recorder.records_span:
        del attributes[sc.GEN_AI_OPERATION_NAME]
        attributes[sc.OPENINFERENCE_SPAN_KIND] = sc.OI_CHAIN
        attributes[sc.ADK_INFERENCE_RECORDED_BY] = recorder.name
        operation = sc.OP_CALL_LLM
    return Opening(
        sanitize.clean(f"{operation} {name}"),
        dict(sanitize.attributes(attributes) or {}),
        held,
        _environment_of(provider, server),
    )


def tool_opening(tool_obj: Any, agent_name: Any) -> Opening:
    """A tool call's span name and start attributes (its call id and run's ids aside)."""
    cls = type(tool_obj)
    try:  # an ADK tool's fields (this runs for every tool call)
        name, description = tool_obj.name, tool_obj.description
        long_running = tool_obj.is_long_running is True
    except AttributeError:
        name = getattr(tool_obj, "name", None)
        description = getattr(tool_obj, "description", None)
        long_running = bool(getattr(tool_obj, "is_long_running", False))
    return _kept(
        _tool_openings,
        (cls, name, description, long_running, agent_name),
        None,
        _tool_opening,
        (cls, name, description, long_running, agent_name),
    )


def _tool_opening(
    cls: type, name: Any, description: Any, long_running: bool, agent_name: Any, _: Any
) -> Opening:
    attributes: Attributes = {
        sc.ADK_SPAN_KIND: _TOOL,
        sc.OPENINFERENCE_SPAN_KIND: sc.OI_TOOL,
        sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
        **_present(
            {
                sc.GEN_AI_TOOL_NAME: name,
                sc.GEN_AI_TOOL_TYPE: tool_type_of(cls),
                sc.GEN_AI_TOOL_DESCRIPTION: description,
                sc.GEN_AI_AGENT_NAME: agent_name,
            }
        ),
    }
    if long_running:
        attributes[sc.ADK_TOOL_LONG_RUNNING] = True
    return Opening(
        sanitize.clean(f"execute_tool {name}"), dict(sanitize.attributes(attributes) or {})
    )


def ids(invocation_id: Any, conversation_id: Any) -> Attributes:
    """The two ids every agent and model span carries, made safe (the ids
    come from the application: a session id is the caller's). A run makes
    them once; a span with no run in sight reads its own."""
    found: Attributes = {}
    if invocation_id is not None and invocation_id != "":
        found[sc.ADK_INVOCATION_ID] = sanitize.attribute(invocation_id)
    if conversation_id is not None and conversation_id != "":
        found[sc.GEN_AI_CONVERSATION_ID] = sanitize.attribute(conversation_id)
    return found


def context_ids(callback_context: Any) -> Attributes:
    """:func:`ids` read from a callback or invocation context."""
    session = getattr(callback_context, "session", None)
    return ids(getattr(callback_context, "invocation_id", None), getattr(session, "id", None))


def invocation(invocation_context: Any, workflow: str | None = None) -> Attributes:
    """A run's attributes, made safe, ids included (see :func:`invocation_opening`)."""
    app_name = getattr(invocation_context, "app_name", None)
    root_name = getattr(getattr(invocation_context, "agent", None), "name", None)
    return {
        **invocation_opening(app_name, root_name, workflow).attributes,
        **context_ids(invocation_context),
    }


_invocation_openings: dict[tuple[Any, ...], Opening] = {}


def invocation_opening(app_name: Any, root_name: Any, workflow: str | None) -> Opening:
    """A run's span name and start attributes (ids aside); ``workflow`` names
    its root when that is a graph ``Workflow`` (an ``invoke_workflow``
    operation). A run of an agent root has no GenAI operation of its own: its
    root agent's ``invoke_agent`` span is its child, and repeating that here
    would count the agent twice."""
    key = (app_name, root_name, workflow)
    return _kept(_invocation_openings, key, None, _invocation_opening, key)


def _invocation_opening(app_name: Any, root_name: Any, workflow: str | None, _: Any) -> Opening:
    attributes: Attributes = {
        sc.ADK_SPAN_KIND: _INVOCATION,
        sc.OPENINFERENCE_SPAN_KIND: sc.OI_CHAIN,
    }
    _put(attributes, sc.ADK_APP_NAME, app_name)
    if workflow is not None:
        attributes[sc.GEN_AI_OPERATION_NAME] = sc.OP_INVOKE_WORKFLOW
        attributes[sc.GEN_AI_WORKFLOW_NAME] = workflow
    else:
        _put(attributes, sc.GEN_AI_AGENT_NAME, root_name)
    return Opening(
        sanitize.clean(f"invocation {app_name or 'adk'}"),
        dict(sanitize.attributes(attributes) or {}),
    )


def workflow_name(root: Any) -> str | None:
    """The name of ``root`` if it is an ADK graph ``Workflow`` (ADK 2.x), else
    ``None``: ``SequentialAgent`` and the other workflow *agents* are agents,
    reported as ``invoke_agent``, as the conventions ask for ADK."""
    if root is None or not _descends_from(type(root), "Workflow"):
        return None
    name = getattr(root, "name", None)
    return name if isinstance(name, str) and name else None


def agent(
    agent_obj: Any, callback_context: Any, parent_name: str | None, latest: bool = False
) -> Attributes:
    """An agent span's start attributes, made safe, ids included."""
    return {
        **agent_opening(agent_obj, parent_name, latest).attributes,
        **context_ids(callback_context),
    }


def model_name(llm_request: Any) -> str:
    return str(getattr(llm_request, "model", None) or "unknown")


def model_request(callback_context: Any, llm_request: Any, latest: bool = False) -> Attributes:
    """A model call's start attributes, made safe, ids and request parameters included."""
    streaming = streams(getattr(callback_context, "run_config", None))
    attributes = {
        **model_opening(callback_context, llm_request, streaming, latest).attributes,
        **context_ids(callback_context),
    }
    config = getattr(llm_request, "config", None)
    if config is not None:
        request_parameters(attributes, config, latest)
    return attributes


# GenerateContentConfig field -> request attribute, with the type the conventions give it.
REQUEST_PARAMETERS: tuple[tuple[str, str, type], ...] = (
    ("temperature", sc.GEN_AI_REQUEST_TEMPERATURE, float),
    ("max_output_tokens", sc.GEN_AI_REQUEST_MAX_TOKENS, int),
    ("top_p", sc.GEN_AI_REQUEST_TOP_P, float),
    ("top_k", sc.GEN_AI_REQUEST_TOP_K, float),
    ("seed", sc.GEN_AI_REQUEST_SEED, int),
    ("presence_penalty", sc.GEN_AI_REQUEST_PRESENCE_PENALTY, float),
    ("frequency_penalty", sc.GEN_AI_REQUEST_FREQUENCY_PENALTY, float),
    ("candidate_count", sc.GEN_AI_REQUEST_CHOICE_COUNT, int),
)
# response_mime_type -> gen_ai.output.type (the registry's values).
_OUTPUT_TYPES = {"application/json": "json", "text/plain": "text", "text/x.enum": "text"}


_CONFIG_FIELDS = (
    *(name for name, _, _ in REQUEST_PARAMETERS),
    "stop_sequences",
    "response_mime_type",
)


def request_parameters(attributes: Attributes, config: Any, latest: bool) -> None:
    """The request parameters an agent's ``generate_content_config`` set."""
    try:  # the config model's values, read as a dict (this runs for every model call)
        values = config.__dict__
        read = [values[name] for name in _CONFIG_FIELDS]
    except (AttributeError, KeyError, TypeError):
        read = [getattr(config, name, None) for name in _CONFIG_FIELDS]
    for (_, key, kind), value in zip(REQUEST_PARAMETERS, read, strict=False):
        if value is not None and (value.__class__ is int or value.__class__ is float):
            attributes[key] = kind(value)
    if latest and sc.GEN_AI_REQUEST_TOP_K in attributes:
        # The current conventions made top_k an int (it was a double).
        attributes[sc.GEN_AI_REQUEST_TOP_K] = int(attributes[sc.GEN_AI_REQUEST_TOP_K])  # type: ignore[arg-type]
    stops, mime = read[-2], read[-1]
    if stops:
        attributes[sc.GEN_AI_REQUEST_STOP_SEQUENCES] = tuple(sanitize.text(s) for s in stops)
    if mime:
        _put(attributes, sc.GEN_AI_OUTPUT_TYPE, _OUTPUT_TYPES.get(str(mime)))


def streams(run_config: Any) -> bool:
    """Whether a run's model calls stream (``StreamingMode.SSE``)."""
    mode = getattr(run_config, "streaming_mode", None)
    return mode is not None and getattr(mode, "value", mode) == "sse"


def model_response(llm_response: Any, latest: bool = False) -> Attributes:
    """A model call's final response attributes: response model, finish
    reason, token usage. Read directly from ADK's response (this runs for
    every model call); an object of another shape is read defensively."""
    try:
        return _response(llm_response, latest)
    except AttributeError:
        return _response_read_defensively(llm_response, latest)


def _response(llm_response: Any, latest: bool) -> Attributes:
    attributes: Attributes = {}
    version = llm_response.model_version
    if version is not None and version != "":
        attributes[sc.GEN_AI_RESPONSE_MODEL] = version
    finish_reason = llm_response.finish_reason
    if finish_reason is not None:
        try:
            reason = finish_reason.value
        except AttributeError:
            reason = finish_reason
        attributes[sc.GEN_AI_RESPONSE_FINISH_REASONS] = (str(reason).lower(),)
    usage = llm_response.usage_metadata
    if usage is None:
        return attributes
    # As ADK counts them (see _response_read_defensively).
    prompt, tool_prompt = usage.prompt_token_count, usage.tool_use_prompt_token_count
    candidates, thoughts = usage.candidates_token_count, usage.thoughts_token_count
    if prompt is not None or tool_prompt is not None:
        attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] = (prompt or 0) + (tool_prompt or 0)
    if candidates is not None or thoughts is not None:
        attributes[sc.GEN_AI_USAGE_OUTPUT_TOKENS] = (candidates or 0) + (thoughts or 0)
    cached = usage.cached_content_token_count
    if cached is not None:
        attributes[sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = cached
    # Not a field of the usage model: set beside its fields (see _optional_field).
    written = usage.__dict__.get("cache_creation_input_tokens")
    if written is None:
        extra = usage.__pydantic_extra__
        written = extra.get("cache_creation_input_tokens") if extra else None
    if written is not None:
        attributes[
            sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS
            if latest
            else sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS
        ] = written
    if thoughts is not None:
        attributes[sc.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] = thoughts
    return attributes


def _response_read_defensively(llm_response: Any, latest: bool) -> Attributes:
    attributes: Attributes = {}
    _put(attributes, sc.GEN_AI_RESPONSE_MODEL, getattr(llm_response, "model_version", None))
    finish_reason = getattr(llm_response, "finish_reason", None)
    if finish_reason is not None:
        reason = getattr(finish_reason, "value", finish_reason)
        attributes[sc.GEN_AI_RESPONSE_FINISH_REASONS] = (str(reason).lower(),)
    usage = getattr(llm_response, "usage_metadata", None)
    if usage is not None:
        # As ADK counts them: input includes server-side tool-use prompt
        # tokens, output includes reasoning ("thoughts") tokens; cache reads
        # and reasoning are subsets of those two.
        prompt = getattr(usage, "prompt_token_count", None)
        tool_prompt = getattr(usage, "tool_use_prompt_token_count", None)
        candidates = getattr(usage, "candidates_token_count", None)
        thoughts = getattr(usage, "thoughts_token_count", None)
        # Renamed cache_write in the current conventions (see pipeline/stability.py).
        cache_write = (
            sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS
            if latest
            else sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS
        )
        attributes.update(
            _present(
                {
                    sc.GEN_AI_USAGE_INPUT_TOKENS: _sum(prompt, tool_prompt),
                    sc.GEN_AI_USAGE_OUTPUT_TOKENS: _sum(candidates, thoughts),
                    sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: getattr(
                        usage, "cached_content_token_count", None
                    ),
                    cache_write: _optional_field(usage, "cache_creation_input_tokens"),
                    sc.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: thoughts,
                }
            )
        )
    return attributes


def _optional_field(model: Any, name: str) -> Any:
    """``getattr(model, name, None)`` for a value only some responses carry
    (Anthropic's cache writes, which ADK sets outside the usage model's
    fields), without the exception pydantic raises inside ``getattr`` for
    every response that lacks it."""
    fields = getattr(type(model), "model_fields", None)
    if isinstance(fields, dict) and name not in fields:
        values = getattr(model, "__dict__", None)
        if isinstance(values, dict) and name in values:
            return values[name]
        extra = getattr(model, "__pydantic_extra__", None)
        return extra.get(name) if extra else None
    return getattr(model, name, None)


def _sum(a: int | None, b: int | None) -> int | None:
    if a is None and b is None:
        return None
    return (a or 0) + (b or 0)


def tool(tool_obj: Any, tool_context: Any) -> Attributes:
    """A tool call's start attributes, made safe, its call id and run's id included."""
    attributes = tool_opening(tool_obj, getattr(tool_context, "agent_name", None)).attributes.copy()
    put_tool_ids(
        attributes,
        getattr(tool_context, "function_call_id", None),
        getattr(tool_context, "invocation_id", None),
    )
    return attributes


def put_tool_ids(attributes: Attributes, call_id: Any, invocation_id: Any) -> None:
    """A tool call's id and its run's, made safe, into ``attributes``."""
    if call_id.__class__ is str:
        if call_id:
            attributes[sc.GEN_AI_TOOL_CALL_ID] = sanitize.clean(call_id)
    elif call_id is not None:
        attributes[sc.GEN_AI_TOOL_CALL_ID] = sanitize.attribute(call_id)
    if invocation_id is not None and invocation_id != "":
        attributes[sc.ADK_INVOCATION_ID] = sanitize.attribute(invocation_id)


def mcp_tool_error(tool_obj: Any, result: Any) -> str | None:
    """The error text of an MCP tool result marked ``isError`` (``is_error``
    in mcp 2.x dumps), else ``None``; other tools' results are never read."""
    if not isinstance(result, dict) or not _descends_from(type(tool_obj), "McpTool"):
        return None
    if not (result.get("isError") or result.get("is_error")):
        return None
    texts = [
        text
        for item in result.get("content") or ()
        if isinstance(item, dict) and isinstance(text := item.get("text"), str)
    ]
    return " ".join(texts) or "MCP tool returned an error"


# -- gen_ai.tool.type ---------------------------------------------------------

# Nearest class in the tool's MRO wins. The registry's types: ``function``
# (code run in-process with model-chosen arguments), ``extension`` (a call to
# an external API), ``datastore`` (retrieval); AgentTool runs a whole agent,
# which none of them describes, hence the custom ``agent``.
_TOOL_TYPES = {
    "AgentTool": sc.TOOL_TYPE_AGENT,
    "BaseRetrievalTool": sc.TOOL_TYPE_DATASTORE,
    "VertexAiSearchTool": sc.TOOL_TYPE_DATASTORE,
    "DiscoveryEngineSearchTool": sc.TOOL_TYPE_DATASTORE,
    "LoadMemoryTool": sc.TOOL_TYPE_DATASTORE,
    "PreloadMemoryTool": sc.TOOL_TYPE_DATASTORE,
    "RestApiTool": sc.TOOL_TYPE_EXTENSION,
    "McpTool": sc.TOOL_TYPE_EXTENSION,
    "GoogleApiTool": sc.TOOL_TYPE_EXTENSION,
    "GoogleTool": sc.TOOL_TYPE_EXTENSION,
    "IntegrationConnectorTool": sc.TOOL_TYPE_EXTENSION,
    "FunctionTool": sc.TOOL_TYPE_FUNCTION,
}
_tool_type_cache: dict[type, str] = {}


def tool_type(tool_obj: Any) -> str:
    """``gen_ai.tool.type`` for an ADK tool (``function`` when nothing closer fits)."""
    return tool_type_of(type(tool_obj))


def tool_type_of(cls: type) -> str:
    found = _tool_type_cache.get(cls)
    if found is None:
        found = next(
            (_TOOL_TYPES[k.__name__] for k in cls.__mro__ if k.__name__ in _TOOL_TYPES),
            sc.TOOL_TYPE_FUNCTION,
        )
        _tool_type_cache[cls] = found
    return found


# -- gen_ai.provider.name -----------------------------------------------------

# LiteLLM provider prefixes with a registry name; other prefixes pass through.
_LITELLM_PROVIDERS = {
    "openai": "openai",
    "azure": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "anthropic": sc.PROVIDER_ANTHROPIC,
    "bedrock": "aws.bedrock",
    "vertex_ai": sc.PROVIDER_VERTEX_AI,
    "gemini": sc.PROVIDER_GEMINI,
    "cohere": "cohere",
    "cohere_chat": "cohere",
    "mistral": "mistral_ai",
    "groq": "groq",
    "deepseek": "deepseek",
    "xai": "x_ai",
    "perplexity": "perplexity",
    "watsonx": "ibm.watsonx.ai",
    "moonshot": "moonshot_ai",
}
_GEMINI_NAME = re.compile(r"^(models/)?gem(ini|ma)-", re.IGNORECASE)
_provider_kind_cache: dict[type, str] = {}


_use_enterprise = settings.reader(settings.GOOGLE_GENAI_USE_ENTERPRISE)
_use_vertexai = settings.reader(settings.GOOGLE_GENAI_USE_VERTEXAI)


def _env_true(read: Callable[[], str | None]) -> bool | None:
    value = read()
    if value is None:
        return None
    return value.strip().lower() in ("1", "true", "yes", "on")


def _google_provider() -> str:
    """Gemini API or Vertex AI, the way google-genai picks its backend."""
    enterprise = _env_true(_use_enterprise)
    vertex = enterprise if enterprise is not None else _env_true(_use_vertexai)
    return sc.PROVIDER_VERTEX_AI if vertex else sc.PROVIDER_GEMINI


def _prefix_provider(model_str: str) -> str | None:
    prefix, sep, _ = model_str.partition("/")
    if not sep or not prefix:
        return None
    prefix = prefix.lower()
    return _LITELLM_PROVIDERS.get(prefix, prefix)


def _named_provider(model_str: str) -> str | None:
    """The provider a model string names by a registry provider prefix
    (``openai/gpt-4o``), else ``None``: for a model class adk-otel does not
    know, which may serve any name from anywhere, only an explicit prefix
    says something (``my-org/finetune`` names an owner, not a provider)."""
    prefix, sep, _ = model_str.partition("/")
    return _LITELLM_PROVIDERS.get(prefix.lower()) if sep else None


def _kind(model_obj: Any) -> str:
    cls = type(model_obj)
    kind = _provider_kind_cache.get(cls)
    if kind is None:
        names = {k.__name__ for k in cls.__mro__}
        if "ApigeeLlm" in names:
            kind = "apigee"
        elif "Gemini" in names:
            kind = "google"
        elif "AnthropicLlm" in names or "Claude" in names:
            kind = "anthropic"
        elif "LiteLlm" in names:
            kind = "litellm"
        else:
            kind = "unknown"
        _provider_kind_cache[cls] = kind
    return kind


def provider_name(model_obj: Any, model_str: str | None) -> str | None:
    """``gen_ai.provider.name`` from the model object, else the model string.

    Gemini classes: ``gcp.vertex_ai`` or ``gcp.gemini`` by the google-genai
    backend variables; Anthropic classes: ``anthropic``; LiteLLM: its
    provider prefix; any other class (a custom ``BaseLlm``): a registry
    provider prefix only. ``None`` (attribute omitted) when unknown.
    """
    model_str = model_str or ""
    kind = _kind(model_obj) if model_obj is not None else "string"
    if kind == "google":
        return _google_provider()
    if kind == "anthropic":
        return sc.PROVIDER_ANTHROPIC
    if kind == "litellm":
        return _prefix_provider(model_str)
    if kind == "apigee":
        model_str = model_str.removeprefix("apigee/")
    elif kind == "unknown":
        return _named_provider(model_str)
    # Only a model name to go on.
    if _GEMINI_NAME.match(model_str) or model_str.startswith("projects/"):
        return _google_provider()
    if model_str.lower().startswith("claude"):
        return sc.PROVIDER_ANTHROPIC
    return _prefix_provider(model_str)


# -- server.address / server.port ------------------------------------------------

# id(model object) -> (weak reference to it, its endpoint): computed once per
# model object (a model's client keeps the base URL it was built with), and
# dropped when the object goes.
_server_cache: dict[int, tuple[Any, endpoint.Endpoint | None]] = {}


def model_server(model_obj: Any) -> endpoint.Endpoint | None:
    """``(server.address, server.port)`` the model object sends its requests
    to, when its class is a known one and the endpoint can be read; cached."""
    key = id(model_obj)
    found = _server_cache.get(key)
    if found is not None and found[0]() is model_obj:
        return found[1]
    try:
        server = endpoint.from_url(_base_url(model_obj))
    except Exception:
        server = None  # an odd model object costs the attribute, nothing else
    try:
        ref = weakref.ref(model_obj, _forget(key))
    except TypeError:
        return server  # not weakly referenceable: computed per call
    _server_cache[key] = (ref, server)
    return server


def _forget(key: int) -> Any:
    return lambda _: _server_cache.pop(key, None)


def _base_url(model_obj: Any) -> Any:
    """The base URL of a model object's API client, from public fields and the
    environment the client reads (the client itself is built lazily by ADK,
    after the model span starts)."""
    kind = _kind(model_obj)
    if kind == "google":
        return _gemini_base_url(model_obj)
    if kind == "anthropic":
        if _descends_from(type(model_obj), "Claude"):
            return None  # Anthropic on Vertex AI: region endpoints not derived
        client = getattr(model_obj, "client", None)  # ADK >= 2.13: a client of your own
        return getattr(client, "base_url", None) if client is not None else endpoint.anthropic_url()
    if kind == "litellm":
        # LiteLlm keeps its keyword arguments in a private attribute (no public
        # one exists, ADK 2.5 to 2.13): only an explicit api_base is reported.
        arguments = getattr(model_obj, "_additional_args", None)
        return arguments.get("api_base") if isinstance(arguments, dict) else None
    return None


def _gemini_base_url(model_obj: Any) -> Any:
    client = getattr(model_obj, "client", None)  # ADK >= 2.13: a client of your own
    if client is not None:
        # google-genai exposes a client's options only behind its private
        # _api_client (read defensively: gone means no attribute).
        options = getattr(getattr(client, "_api_client", None), "get_read_only_http_options", None)
        found = options() if callable(options) else None
        return found.get("base_url") if isinstance(found, dict) else None
    if getattr(model_obj, "base_url", None):
        return model_obj.base_url
    kwargs = getattr(model_obj, "client_kwargs", None)
    kwargs = kwargs if isinstance(kwargs, dict) else {}
    options = kwargs.get("http_options")
    url = (
        options.get("base_url") if isinstance(options, dict) else getattr(options, "base_url", None)
    )
    if url:
        return url
    model_str = getattr(model_obj, "model", None)
    chosen = kwargs.get("enterprise", kwargs.get("vertexai"))
    if chosen is not None:
        vertex = bool(chosen)
    else:
        vertex = (isinstance(model_str, str) and model_str.startswith("projects/")) or (
            _google_provider() == sc.PROVIDER_VERTEX_AI
        )
    location = kwargs.get("location")
    return endpoint.gemini_url(
        vertex=vertex, location=location if isinstance(location, str) else None
    )


# id(agent) -> (weak reference to it, its ``model`` field when resolved, the
# resolved model object): an agent naming its model by string resolves it
# through ADK's model registry on every read (a new model object each time on
# ADK 2.5, a keyed cache look-up on 2.13; what that costs a model call:
# benchmarks/README.md, "An agent's model, named by string"), so the resolution
# is kept per agent and redone when the field changes. Dropped when the agent goes.
_resolved_models: dict[int, tuple[Any, str, Any]] = {}


def _agent_model(agent_obj: Any) -> Any:
    """The agent's resolved model object (LlmAgent), else ``None``."""
    if agent_obj is None:
        return None
    field = getattr(agent_obj, "model", None)
    if field.__class__ is not str or not field:
        # A model object (ADK returns it as it is) or one inherited: read as ADK resolves it.
        return _resolve_model(agent_obj)
    key = id(agent_obj)
    found = _resolved_models.get(key)
    if found is not None and found[0]() is agent_obj and found[1] == field:
        return found[2]
    model = _resolve_model(agent_obj)
    try:
        ref = weakref.ref(agent_obj, lambda _: _resolved_models.pop(key, None))
    except TypeError:
        return model  # not weakly referenceable: resolved per call
    _resolved_models[key] = (ref, field, model)
    return model


def _resolve_model(agent_obj: Any) -> Any:
    try:
        return getattr(agent_obj, "canonical_model", None)
    except Exception:
        return None  # an unresolvable model name: ADK reports that itself


def _calling_agent(callback_context: Any) -> Any:
    # CallbackContext exposes only the agent's name; the agent object sits on
    # the invocation context behind it (the same in ADK 2.5 through 2.13).
    return getattr(getattr(callback_context, "_invocation_context", None), "agent", None)


# -- content (read only when capture is on) ------------------------------------


def request_contents(llm_request: Any) -> list[Any]:
    return list(getattr(llm_request, "contents", None) or ())


def request_system_instruction(llm_request: Any) -> Any:
    return getattr(getattr(llm_request, "config", None), "system_instruction", None)


def response_content(llm_response: Any) -> Any:
    return getattr(llm_response, "content", None)


def finish_reason(llm_response: Any) -> str | None:
    reason = getattr(llm_response, "finish_reason", None)
    if reason is None:
        return None
    return str(getattr(reason, "value", reason)).lower()


def user_content(invocation_context: Any) -> Any:
    """The run's user message, after any plugin rewrote it in on_user_message."""
    return getattr(invocation_context, "user_content", None)


def final_response(event: Any) -> Any:
    """The event's content if it is an agent's final response, else ``None``."""
    if getattr(event, "author", "user") == "user" or getattr(event, "partial", False):
        return None
    content = getattr(event, "content", None)
    if content is None or not getattr(content, "parts", None):
        return None
    is_final = getattr(event, "is_final_response", None)
    return content if callable(is_final) and is_final() else None


def user_messages(invocation_context: Any) -> list[dict[str, Any]] | None:
    message = user_content(invocation_context)
    return content.messages([message]) if message is not None else None


_TEMP_PREFIX = "temp:"
"""ADK's prefix for state that lives one invocation and is never stored."""


def session_state(invocation_context: Any) -> dict[str, Any] | None:
    """The session's state as a run starts (the new message's state delta
    applied): what replaying the run needs. ``temp:`` keys are left out (ADK
    never stores them); None when nothing is left."""
    state = getattr(getattr(invocation_context, "session", None), "state", None)
    if not isinstance(state, Mapping) or not state:
        return None
    kept = {
        key: value
        for key, value in state.items()
        if isinstance(key, str) and not key.startswith(_TEMP_PREFIX)
    }
    return kept or None


def final_output_messages(event: Any) -> list[dict[str, Any]] | None:
    message = final_response(event)
    if message is None:
        return None
    return content.output_message(message, finish_reason(event))


def function_call_ids(event: Any) -> list[tuple[str, str]]:
    """``(name, id)`` of each function call in an event's content, in order
    (ADK has assigned its ids by the time the event is yielded)."""
    found = []
    for part in getattr(getattr(event, "content", None), "parts", None) or ():
        call = getattr(part, "function_call", None)
        if call is not None:
            name, call_id = getattr(call, "name", None), getattr(call, "id", None)
            if isinstance(name, str) and isinstance(call_id, str):
                found.append((name, call_id))
    return found


def function_response_ids(event: Any) -> list[str]:
    """The ids of the function responses an event carries (a tool's result)."""
    try:  # ADK's event, read directly (this runs for events while a tool span waits)
        content = event.content
        parts = content.parts if content is not None else None
        return [
            part.function_response.id
            for part in parts or ()
            if part.function_response is not None and part.function_response.id.__class__ is str
        ]
    except AttributeError:
        return _function_response_ids(event)


def _function_response_ids(event: Any) -> list[str]:
    found = []
    for part in getattr(getattr(event, "content", None), "parts", None) or ():
        response = getattr(part, "function_response", None)
        call_id = getattr(response, "id", None) if response is not None else None
        if isinstance(call_id, str):
            found.append(call_id)
    return found


def model_input_messages(llm_request: Any) -> list[dict[str, Any]]:
    return content.messages(request_contents(llm_request))


def model_system_instructions(llm_request: Any) -> list[dict[str, Any]]:
    return content.system_instructions(request_system_instruction(llm_request))


def model_tool_definitions(llm_request: Any) -> list[dict[str, Any]]:
    return content.tool_definitions(getattr(getattr(llm_request, "config", None), "tools", None))


def model_output_messages(llm_response: Any) -> list[dict[str, Any]] | None:
    message = response_content(llm_response)
    if message is None:
        return None
    return content.output_message(message, finish_reason(llm_response))


# -- across services (A2A) ------------------------------------------------------

A2A_METADATA_KEY = "a2a_metadata"
"""Where ADK's A2A executor puts the request metadata it received, in the
served run's ``run_config.custom_metadata`` (ADK 2.5 through 2.13)."""


def incoming_trace_carrier(invocation_context: Any) -> Any:
    """The request metadata a served A2A run arrived with, or ``None``."""
    run_config = getattr(invocation_context, "run_config", None)
    custom = getattr(run_config, "custom_metadata", None)
    return custom.get(A2A_METADATA_KEY) if isinstance(custom, dict) else None


def is_remote_agent(agent_obj: Any) -> bool:
    """Whether the agent runs in another service (``RemoteA2aAgent``)."""
    return _descends_from(type(agent_obj), "RemoteA2aAgent")


def remote_agents(root: Any) -> list[Any]:
    """Every remote agent in the tree under ``root`` (``root`` included)."""
    found: list[Any] = []
    stack, seen = [root], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if is_remote_agent(node):
            found.append(node)
        stack.extend(getattr(node, "sub_agents", None) or ())
    return found


def a2a_task(response: Any) -> tuple[str | None, str | None, str | None]:
    """``(a2a.task.id, a2a.task.state, status message text)`` of a response a
    remote agent received: a ``(task, update)`` pair, a task, or a message
    (which has no state)."""
    if isinstance(response, tuple):
        response = response[0] if response else None
    status = getattr(response, "status", None)
    if status is None:
        return getattr(response, "task_id", None) or None, None, None
    message = getattr(status, "message", None)
    parts = getattr(message, "parts", None) or ()
    text = " ".join(t for p in parts if isinstance(t := _part_text(p), str) and t)
    state = task_state_name(getattr(status, "state", None))
    return getattr(response, "id", None) or None, state, text or None


def _part_text(part: Any) -> Any:
    # a2a-sdk 1.x: Part.text; 0.3: Part(root=TextPart(text=...)).
    return getattr(part, "text", None) or getattr(getattr(part, "root", None), "text", None)


def task_state_name(state: Any) -> str | None:
    """An A2A task state as the protocol spells it (``failed``, ``input-required``),
    from a2a-sdk 1.x's protobuf enum numbers or 0.3's string enum."""
    if isinstance(state, int) and not isinstance(state, bool):
        try:
            from a2a.types import TaskState

            name: Any = TaskState.Name(state)
        except Exception:
            return None
    else:
        name = getattr(state, "value", state)
    if not isinstance(name, str):
        return None
    name = name.lower().removeprefix("task_state_").replace("_", "-")
    return None if name in ("", "unspecified") else name
