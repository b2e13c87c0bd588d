"""Attribute names and values adk-otel writes, in one place.

GenAI semantic-convention names (``gen_ai.*``) where the conventions have one;
``adk.*`` for what only ADK knows. Tests, the pytest plugin and the CLI read
spans through these names, so renaming one here renames it everywhere.
"""

from __future__ import annotations

from enum import StrEnum

from . import settings

INSTRUMENTATION_SCOPE = "adk_otel"
"""Instrumentation scope of every span adk-otel creates."""

ADK_SCOPE = "gcp.vertex.agent"
"""Instrumentation scope of ADK's own spans and metrics."""

A2A_SDK_SCOPE = "a2a-python-sdk"
"""Instrumentation scope of the A2A SDK's internal spans."""

# adk-otel's own vocabulary
ADK_SPAN_KIND = "adk.span.kind"
ADK_OUTCOME = "adk.outcome"
ADK_CLOSE_REASON = "adk.close_reason"
ADK_APP_NAME = "adk.app.name"
ADK_INVOCATION_ID = "adk.invocation.id"
ADK_USER_ID = "adk.user.id"
USER_ID = "user.id"  # the general convention; where Phoenix, Langfuse and MLflow read the user
ADK_NODE_NAME = "adk.node.name"
ADK_NODE_PATH = "adk.node.path"
"""Where a workflow node run sits in its run, as ADK writes it (``flow@1/inner@1/check@2``):
each step a node name and its run number under its parent."""
ADK_NODE_KIND = "adk.node.kind"
"""function, join, workflow, tool, agent, parallel_worker; ``node`` when unknown."""
ADK_LOOP_ITERATION = "adk.loop.iteration"
"""Which pass of its ``LoopAgent`` an agent span (and everything under it) belongs to, from 1."""
ADK_PARALLEL_BRANCH = "adk.parallel.branch"
"""Which branch of its ``ParallelAgent`` (the branch agent's name) an agent span belongs to."""
ADK_INTERRUPT_IDS = "adk.interrupt.ids"
ADK_LINK = "adk.link"
"""On a span link: why the spans are linked (``resumes``: the run resuming a paused one)."""
"""The interrupts (function call ids) a paused run waits on."""
ADK_NODE_ROUTE = "adk.node.route"
"""The route a node chose for its outgoing edges (a conditional edge's key)."""
ADK_NODE_ATTEMPT = "adk.node.attempt"
"""1 for a node run's first attempt, 2 for its first retry (``RetryConfig``), ..."""
ADK_AGENT_PARENT = "adk.agent.parent"
ADK_AGENT_TYPE = "adk.agent.type"
ADK_TOOL_LONG_RUNNING = "adk.tool.long_running"
ADK_MODEL_STREAMING = "adk.model.streaming"
ADK_MODEL_CHUNKS = "adk.model.chunks"
ADK_INFERENCE_RECORDED_BY = "adk.inference.recorded_by"
"""On a model span: the client instrumentation whose child span is this call's inference
(``opentelemetry-instrumentation-google-genai``, ...); the model span then carries its usage
as ``adk.usage.*`` and is no inference of its own (docs/coexistence.md)."""
ADK_INFERENCE_METRICS_RECORDED_BY = "adk.inference.metrics_recorded_by"
"""On a model span: the client instrumentation that records this call's model-call metrics
(``gen_ai.client.token.usage``, ``gen_ai.client.operation.duration``); adk-otel then records
neither."""
ADK_INFERENCE_STOOD_DOWN = "adk.inference.stood_down"
"""On a model span: a second client instrumentation asked to record nothing of this call (by
its own suppression key in the call's context), because another one below ADK records it
already (a Traceloop instrumentation beside the anthropic SDK's own tracing or another
instrumentation of the same client method)."""
ADK_LIVE = "adk.live"
LIVE_MODEL_REQUEST_EVENT = "adk.live.model_request"
"""Span event on the agent span for each model request of a live session."""
ADK_MODEL_CALL_COUNT = "adk.model_call.count"
"""Model calls made under an agent or invocation span, AgentTool runs included."""
ADK_TOOL_CALL_COUNT = "adk.tool_call.count"
"""Tool calls made under an agent or invocation span, AgentTool runs included."""
ADK_USAGE_INPUT_TOKENS = "adk.usage.input_tokens"
ADK_USAGE_OUTPUT_TOKENS = "adk.usage.output_tokens"
ADK_USAGE_CACHE_READ_INPUT_TOKENS = "adk.usage.cache_read.input_tokens"
ADK_USAGE_CACHE_CREATION_INPUT_TOKENS = "adk.usage.cache_creation.input_tokens"
ADK_USAGE_CACHE_WRITE_INPUT_TOKENS = "adk.usage.cache_write.input_tokens"
ADK_USAGE_REASONING_OUTPUT_TOKENS = "adk.usage.reasoning.output_tokens"
"""Token totals on agent and invocation spans (every model call under them).
Not ``gen_ai.usage.*``: backends that sum usage over all spans (Langfuse,
Phoenix) would count each call again at every level above it."""
ADK_SESSION_STATE = "adk.session.state"
"""Content capture only, on the invocation span: the session's state as the
run starts, JSON (what an eval case's ``session_input.state`` replays)."""
ADK_CONTENT_EVENT = "adk.content"
"""Span event carrying an invocation's or tool call's content in EVENT modes."""
CONTENT_CAPTURE_ENV = settings.CAPTURE_CONTENT.env[0]
"""The setting that turns content capture on (the variable other GenAI instrumentations read)."""
CONTENT_MAX_LENGTH_ENV = settings.CONTENT_MAX_LENGTH.env[0]
CONTENT_TRUNCATION_MARKER = "...[truncated]"
"""How a captured value cut to the maximum length ends (it is then no longer valid JSON)."""

# GenAI semantic conventions
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_AGENT_DESCRIPTION = "gen_ai.agent.description"
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_REQUEST_TEMPERATURE = "gen_ai.request.temperature"
GEN_AI_REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
GEN_AI_REQUEST_TOP_P = "gen_ai.request.top_p"
GEN_AI_REQUEST_TOP_K = "gen_ai.request.top_k"
GEN_AI_REQUEST_STOP_SEQUENCES = "gen_ai.request.stop_sequences"
GEN_AI_REQUEST_SEED = "gen_ai.request.seed"
GEN_AI_REQUEST_PRESENCE_PENALTY = "gen_ai.request.presence_penalty"
GEN_AI_REQUEST_FREQUENCY_PENALTY = "gen_ai.request.frequency_penalty"
GEN_AI_REQUEST_CHOICE_COUNT = "gen_ai.request.choice.count"
GEN_AI_REQUEST_STREAM = "gen_ai.request.stream"
GEN_AI_OUTPUT_TYPE = "gen_ai.output.type"
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE = "gen_ai.tool.type"
GEN_AI_TOOL_DESCRIPTION = "gen_ai.tool.description"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS = "gen_ai.usage.cache_write.input_tokens"
"""The current conventions' name for cache writes (was ``cache_creation``):
written instead of it only under ``OTEL_SEMCONV_STABILITY_OPT_IN`` (pipeline/stability.py)."""
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS = "gen_ai.usage.reasoning.output_tokens"
GEN_AI_TOKEN_TYPE = "gen_ai.token.type"
GEN_AI_TOKEN_MODALITY = "gen_ai.token.modality"
TOKEN_MODALITY_UNKNOWN = "unknown"
GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
GEN_AI_TOOL_DEFINITIONS = "gen_ai.tool.definitions"
GEN_AI_WORKFLOW_NAME = "gen_ai.workflow.name"
GEN_AI_INFERENCE_DETAILS_EVENT = "gen_ai.client.inference.operation.details"
# The evaluation result event (GenAI conventions), and how adk-otel labels
# ADK's eval runs and results (docs/evaluations.md).
GEN_AI_EVALUATION_RESULT_EVENT = "gen_ai.evaluation.result"
GEN_AI_EVALUATION_NAME = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"
ADK_EVAL_SET_ID = "adk.eval.set.id"
ADK_EVAL_CASE_ID = "adk.eval.case.id"
ADK_EVAL_INVOCATION_INDEX = "adk.eval.invocation.index"
ADK_EVAL_SCOPE = "adk.eval.scope"
"""``invocation`` (one invocation's result) or ``case`` (the case's, over all its invocations)."""
ADK_EVAL_THRESHOLD = "adk.eval.threshold"
ADK_EVAL_STATUS = "adk.eval.status"
"""ADK's ``EvalStatus``: ``passed``, ``failed``, ``not_evaluated``, ``informational``."""
ERROR_TYPE = "error.type"

ROLLUP_USAGE = {
    GEN_AI_USAGE_INPUT_TOKENS: ADK_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS: ADK_USAGE_OUTPUT_TOKENS,
    GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: ADK_USAGE_CACHE_READ_INPUT_TOKENS,
    GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: ADK_USAGE_CACHE_CREATION_INPUT_TOKENS,
    GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS: ADK_USAGE_CACHE_WRITE_INPUT_TOKENS,
    GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: ADK_USAGE_REASONING_OUTPUT_TOKENS,
}
"""A model call's usage attribute -> the name of its total on the spans above."""

# Across services (A2A semantic conventions)
A2A_TASK_ID = "a2a.task.id"
A2A_TASK_STATE = "a2a.task.state"
A2A_FAILED_STATES = frozenset({"failed", "rejected"})
"""Remote task states that make the calling agent's span an error."""
A2A_TASK_FAILED = "a2a_task_failed"
"""``adk.close_reason`` and ``error.type`` of a remote agent whose task failed."""
ADK_REMOTE_ERROR_ID = "adk.remote.error_id"
"""On a remote agent's span: the id under which the serving side logged the
failure it sent back without its message (ADK >= 2.15's A2A executor)."""
MCP_TOOL_ERROR = "tool_error"
"""``error.type`` of an MCP tool call whose result has ``isError`` (MCP conventions)."""

# Failure classification (reading/failures.py; docs/failures.md)
ADK_ERROR_CATEGORY = "adk.error.category"
ADK_ERROR_RETRYABLE = "adk.error.retryable"
ADK_ERROR_RETRY_AFTER = "adk.error.retry_after"
ADK_ERROR_COUNT = "adk.error.count"
"""On agent and invocation spans: ERROR spans below it (soft ones included)."""
ADK_ERROR_CATEGORIES = "adk.error.categories"
"""On agent and invocation spans: the distinct categories below it, sorted."""
HTTP_RESPONSE_STATUS_CODE = "http.response.status_code"
ADK_TRANSFER_TARGET = "adk.transfer.target"
"""The agent a ``transfer_to_agent`` source handed off to."""
CLOSE_REASON_TRANSFERRED = "transferred"
METRIC_FAILURE_COUNT = "adk.failure.count"

OP_INVOKE_AGENT = "invoke_agent"
OP_INVOKE_WORKFLOW = "invoke_workflow"
OP_EXECUTE_TOOL = "execute_tool"
OP_GENERATE_CONTENT = "generate_content"
OP_CALL_LLM = "call_llm"
"""The model span's name prefix when a client instrumentation records the inference."""

# How LLM-observability viewers classify a span. Arize Phoenix and Langfuse
# read this OpenInference attribute before gen_ai.operation.name (which has no
# value for a run of an agent root, and which neither maps for invoke_workflow);
# without it Phoenix shows a run as UNKNOWN, or as an LLM call once it carries
# captured messages. See docs/collector.md.
OPENINFERENCE_SPAN_KIND = "openinference.span.kind"
OI_CHAIN = "CHAIN"
OI_AGENT = "AGENT"
OI_LLM = "LLM"
OI_TOOL = "TOOL"
# The span form of evaluation results (``evaluate {case}``): Phoenix shows it
# as an evaluator, MLflow as an EVALUATOR span (both UNKNOWN without it).
OI_EVALUATOR = "EVALUATOR"
# What Phoenix's trace list shows as a run's Input and Output (and MLflow reads
# when it ingests OpenInference spans): written beside the GenAI attributes, under
# content capture on spans only. docs/telemetry.md#content-capture.
OI_INPUT_VALUE = "input.value"
OI_INPUT_MIME_TYPE = "input.mime_type"
OI_OUTPUT_VALUE = "output.value"
OI_OUTPUT_MIME_TYPE = "output.mime_type"

# gen_ai.provider.name values (GenAI registry); LiteLLM prefixes outside it pass through.
PROVIDER_GEMINI = "gcp.gemini"
PROVIDER_VERTEX_AI = "gcp.vertex_ai"
PROVIDER_ANTHROPIC = "anthropic"

# gen_ai.tool.type values: the registry's three, plus ``agent`` for AgentTool,
# which none of them describes (the registry allows custom values).
TOOL_TYPE_FUNCTION = "function"
TOOL_TYPE_EXTENSION = "extension"
TOOL_TYPE_DATASTORE = "datastore"
TOOL_TYPE_AGENT = "agent"

# Metrics: GenAI semantic-convention instruments, plus one adk-otel counter.
METRIC_CLIENT_OPERATION_DURATION = "gen_ai.client.operation.duration"
METRIC_CLIENT_TOKEN_USAGE = "gen_ai.client.token.usage"
METRIC_INVOKE_AGENT_DURATION = "gen_ai.invoke_agent.duration"
METRIC_EXECUTE_TOOL_DURATION = "gen_ai.execute_tool.duration"
METRIC_CLIENT_TIME_TO_FIRST_CHUNK = "gen_ai.client.operation.time_to_first_chunk"
METRIC_CLIENT_TIME_PER_OUTPUT_CHUNK = "gen_ai.client.operation.time_per_output_chunk"
METRIC_INVOCATION_COUNT = "adk.invocation.count"
# The current conventions' names, recorded instead of the model-call ones above
# only under OTEL_SEMCONV_STABILITY_OPT_IN (pipeline/stability.py).
METRIC_CLIENT_INFERENCE_DURATION = "gen_ai.client.inference.duration"
METRIC_CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK = "gen_ai.client.inference.time_to_first_chunk"
METRIC_CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK = "gen_ai.client.inference.time_per_output_chunk"
METRIC_USAGE_INPUT_TOKENS = "gen_ai.client.inference.usage.input_tokens"
METRIC_USAGE_OUTPUT_TOKENS = "gen_ai.client.inference.usage.output_tokens"
METRIC_USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.client.inference.usage.cache_read.input_tokens"
METRIC_USAGE_CACHE_WRITE_INPUT_TOKENS = "gen_ai.client.inference.usage.cache_write.input_tokens"
METRIC_USAGE_REASONING_OUTPUT_TOKENS = "gen_ai.client.inference.usage.reasoning.output_tokens"
METRIC_OPERATION_INPUT_TOKENS = "gen_ai.client.inference.operation.input_tokens"
METRIC_OPERATION_OUTPUT_TOKENS = "gen_ai.client.inference.operation.output_tokens"


class SpanKind(StrEnum):
    """Which ADK layer a span stands for (the value of ``adk.span.kind``)."""

    INVOCATION = "invocation"
    AGENT = "agent"
    MODEL = "model"
    TOOL = "tool"
    NODE = "node"
    """A workflow node run (``invoke_node``) or a nested workflow (``invoke_workflow``)."""


class Outcome(StrEnum):
    """How an operation ended (the value of ``adk.outcome``).

    ``cancelled``, ``incomplete`` and ``paused`` leave the span status UNSET:
    they are outcomes, not errors.
    """

    OK = "ok"
    ERROR = "error"
    CANCELLED = "cancelled"
    INCOMPLETE = "incomplete"
    PAUSED = "paused"
    """A run that stopped to wait for input: a request for human input, a
    long-running tool's result (``adk.interrupt.ids``). The run that resumes
    it links to it."""


RUN_KEY_ALIASES = {
    "outcome": ADK_OUTCOME,
    "app": ADK_APP_NAME,
    "user": USER_ID,
    "session": GEN_AI_CONVERSATION_ID,
    "category": ADK_ERROR_CATEGORY,
    "error": ERROR_TYPE,
    "service": "service.name",
    "version": "service.version",
}
"""The short keys every reading command's ``--where`` takes, each for an
attribute of a run's invocation span (else its resource): ``outcome=error``
is ``adk.outcome=error`` wherever runs are selected."""
