"""Every span name and attribute key toolpath emits or reads, in one place (docs/spec.md §2).

``gen_ai.*`` names follow the OpenTelemetry GenAI semantic conventions (development status); ``toolpath.*``
names are our own and incubating: they may change before 1.0.
"""

from typing import Final

# --- gen_ai.* (OpenTelemetry GenAI semantic conventions) ---------------------------------------------------
TOOLPATH_SCOPE: Final = "toolpath"
"""Instrumentation scope of toolpath's own spans."""
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
"""The operation: ``invoke_agent``, ``execute_tool``, ``chat``…"""
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_AGENT_DESCRIPTION: Final = "gen_ai.agent.description"
"""What the agent is for, as its agent span says; a rebuilt turn keeps its agent's."""
# gen_ai.evaluation.result events (online evaluation results)
GEN_AI_EVALUATION_NAME: Final = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"
GEN_AI_EVALUATION_TARGET: Final = "gen_ai.evaluation.target"
"""What the result is about: ``turn`` (one invocation) or ``session`` (pydantic-evals' key, beyond OTel's)."""
GEN_AI_EVALUATION_EVALUATOR_NAME: Final = "gen_ai.evaluation.evaluator_name"
"""The online evaluator that scored it (its ``online.toml`` name; toolpath's key, beside pydantic-evals')."""
GEN_AI_EVALUATION_EVALUATOR_VERSION: Final = "gen_ai.evaluation.evaluator_version"
"""That evaluator's version, as its user declared it (pydantic-evals' key)."""
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
"""The session a turn belongs to."""
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
"""JSON list of ``{"role", "parts": [{"type": "text", "content"}]}`` messages."""
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
GEN_AI_TOOL_DESCRIPTION: Final = "gen_ai.tool.description"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
"""JSON object of the arguments the tool received."""
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
"""JSON of what the tool returned."""
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
"""Input tokens served from a provider's cache (read for ADK's efficiency figures)."""
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_USAGE_COST_TOTAL: Final = "gen_ai.usage.cost.total"
"""What a call cost, as its instrumentation reported it (gen_ai.usage.cost.*); the UI shows a reported cost before
one it computes from token counts and the user's price table."""
GEN_AI_USAGE_COST_INPUT: Final = "gen_ai.usage.cost.input"
GEN_AI_USAGE_COST_OUTPUT: Final = "gen_ai.usage.cost.output"
ERROR_TYPE: Final = "error.type"
SESSION_ID: Final = "session.id"
"""Session id used by OpenInference and others; read as a fallback for the conversation id."""
SERVICE_NAME: Final = "service.name"

GEN_AI_WORKFLOW_NAME: Final = "gen_ai.workflow.name"

# MCP (OpenTelemetry semantic conventions for the Model Context Protocol, development status)
MCP_METHOD_NAME: Final = "mcp.method.name"
"""The JSON-RPC method of an MCP request: ``tools/call``, ``tools/list``…"""
MCP_SESSION_ID: Final = "mcp.session.id"
MCP_PROTOCOL_VERSION: Final = "mcp.protocol.version"
JSONRPC_REQUEST_ID: Final = "jsonrpc.request.id"
NETWORK_TRANSPORT: Final = "network.transport"
MCP_TOOLS_CALL: Final = "tools/call"
MCP_TOOLS_LIST: Final = "tools/list"
MCP_TOOL_ERROR: Final = "tool_error"
"""``error.type`` of a tool call whose result says ``isError``."""
MCP_META_KEYS: Final = ("traceparent", "tracestate", "baggage")
"""The trace-context keys carried, unprefixed, in a request's ``params._meta``."""
MCP_SERVER_NAME: Final = "toolpath.mcp.server"
"""Our own: the name of the MCP server a ``tools/call`` span went to (or was served by), when known."""
# A2A (read from peers)
A2A_METHOD_NAME: Final = "a2a.method.name"
A2A_TASK_ID: Final = "a2a.task.id"

# Read from peers (collector input, docs/spec.md §3)
ADK_SCOPE: Final = "gcp.vertex.agent"
ADK_TOOL_CALL_ARGS: Final = "gcp.vertex.agent.tool_call_args"
ADK_TOOL_RESPONSE: Final = "gcp.vertex.agent.tool_response"
ADK_LLM_REQUEST: Final = "gcp.vertex.agent.llm_request"
ADK_LLM_RESPONSE: Final = "gcp.vertex.agent.llm_response"
ADK_MERGED_TOOLS: Final = "(merged tools)"
PYDANTIC_AI_TOOL_ARGUMENTS: Final = "tool_arguments"
"""pydantic-ai's instrumentation format 2: a tool span's arguments (later formats use ``gen_ai.tool.call.*``)."""
PYDANTIC_AI_TOOL_RESPONSE: Final = "tool_response"
TRACELOOP_SPAN_KIND: Final = "traceloop.span.kind"
TRACELOOP_ENTITY_NAME: Final = "traceloop.entity.name"
TRACELOOP_ENTITY_INPUT: Final = "traceloop.entity.input"
TRACELOOP_ENTITY_OUTPUT: Final = "traceloop.entity.output"
OPENINFERENCE_SPAN_KIND: Final = "openinference.span.kind"
OI_TOOL_NAME: Final = "tool.name"
OI_AGENT_NAME: Final = "agent.name"
OI_INPUT_VALUE: Final = "input.value"
OI_INPUT_MIME_TYPE: Final = "input.mime_type"
OI_OUTPUT_VALUE: Final = "output.value"
OI_TOOL_CALLS_PREFIX: Final = "llm.output_messages.0.message.tool_calls."
OI_TOKEN_COUNT_PROMPT: Final = "llm.token_count.prompt"
OI_TOKEN_COUNT_COMPLETION: Final = "llm.token_count.completion"
ADK_CALL_LLM: Final = "call_llm"
"""ADK 1.x's model-call span name (ADK 1.x also emits a ``generate_content`` span for the same call)."""
OI_OUTPUT_MESSAGES_PREFIX: Final = "llm.output_messages."
"""``llm.output_messages.{m}.message.tool_calls.{n}.tool_call.{id,function.name,function.arguments}``."""
OI_INPUT_MESSAGES_PREFIX: Final = "llm.input_messages."
"""``llm.input_messages.{m}.message.{role,content}``."""

OP_INVOKE_AGENT: Final = "invoke_agent"
OP_INVOKE_WORKFLOW: Final = "invoke_workflow"
OP_EXECUTE_TOOL: Final = "execute_tool"
OP_CHAT: Final = "chat"
OP_GENERATE_CONTENT: Final = "generate_content"
OP_TEXT_COMPLETION: Final = "text_completion"
TOOL_TYPE_FUNCTION: Final = "function"

# --- toolpath.* (incubating) -------------------------------------------------------------------------------
TOOLPATH_PREDICTED_TRAJECTORY: Final = "toolpath.agent.predicted_trajectory"
"""JSON list of the tool calls an agent reported: ``{"tool_name", "tool_input"}`` (Vertex custom-function shape)
or ``{"name", "args", "id", "result", "error"}`` (ADK form). Without ``toolpath.agent.trajectory_source`` the
collector uses it where no tool span was recorded, and to fill in the arguments of tool spans that carry none."""
TOOLPATH_TRAJECTORY_SOURCE: Final = "toolpath.agent.trajectory_source"
"""Where the agent span's ``toolpath.agent.predicted_trajectory`` came from. ``events``: the framework's own event
stream (ADK events: every call with its arguments and id), complete by construction, so the collector takes it
as the trajectory and uses the tool spans under the agent span only for timings. Absent: what the agent returned,
used only where tool spans say nothing."""
TRAJECTORY_SOURCE_EVENTS: Final = "events"
TOOLPATH_INTERMEDIATE_RESPONSES: Final = "toolpath.agent.intermediate_responses"
"""JSON list of ``[author, text]``: what the agent (and its sub-agents) said before the final response."""
TOOLPATH_ANSWERED_BY: Final = "toolpath.agent.answered_by"
"""The agent that gave the final response (the author of ADK's final event: a sub-agent a turn was transferred to,
say), when the agent span knows it; else the collector reads it from the run's model spans."""
TOOLPATH_MODEL_USAGE: Final = "toolpath.agent.model_usage"
"""JSON list, one item per model call of the turn as ADK's efficiency figures count them (read from ADK's events:
an answer ADK leaves out of the invocation, such as an empty text, is none): the call's ``usage_metadata``, or
``null`` when it reported none. ADK's figures read the calls and tokens from it rather than from the model
spans."""
TOOLPATH_RESPONSE_NOT_TEXT: Final = "toolpath.agent.response_not_text"
"""On an agent span, and on the invocation rebuilt from it: why the run has no response although the agent returned
one, which has no text to record (``the agent returned 15 bytes, not text``). The collector then takes no model
call's text for the response either, and the response metrics give this reason instead of a score."""
TOOLPATH_CONTENT_MISSING: Final = "toolpath.content_missing"
"""Invocation attribute: ``true`` when tool spans of the run recorded no arguments at all (the instrumentation's
content capture was off; for ADK 2.x see ``ADK_CONTENT_ENV``)."""
TOOLPATH_ARGUMENTS_UNKNOWN: Final = "toolpath.arguments_unknown"
"""Invocation attribute: how many stored tool calls have unknown arguments (stored as ``{}``): content-less tool
spans no other record of the run could fill in. Absent when every call's arguments are known."""
ADK_CONTENT_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The environment variable that makes ADK 2.x record arguments and results on its spans (``SPAN_ONLY`` or
``SPAN_AND_EVENT``); unset, ADK's ``execute_tool`` spans carry none."""
TOOLPATH_SIMULATED_USER: Final = "toolpath.simulated_user"
"""``true`` on an agent span (and on the invocation rebuilt from it) whose prompt a simulated user wrote (an ADK
``conversation_scenario``), and on the simulated user's own model-call spans, which are traces of their own."""
TOOLPATH_SIMULATED_TURN: Final = "toolpath.simulated_user.turn"
"""The 1-based turn of the simulated conversation: on the agent span of that turn, and on the simulated user's
model-call span that wrote it."""
TOOLPATH_EVALUATION: Final = "toolpath.evaluation"
"""``true`` on an agent span an evaluation ran (``toolpath eval --agent``, eval-set runs from the CLI, the UI or
``toolpath mcp``, ``toolpath replay``), and on the invocation rebuilt from it: evaluation traffic, which the UI can
hide from production's whatever the session id."""
TOOLPATH_CACHE_HIT: Final = "toolpath.cache_hit"
"""``true`` on a simulated user's model-call span whose reply came from the store's cache (no model was asked)."""
TOOLPATH_TRUNCATED: Final = "toolpath.truncated"
TOOLPATH_TOOL_CALLS_DROPPED: Final = "toolpath.tool_calls_dropped"
"""On a stored invocation: how many of its tool calls the collector's ``--max-tool-calls`` left out."""
"""Keys of attributes whose value was cut to the configured length."""

TRUNCATION_MARKER: Final = "…[truncated {dropped} chars]"
TOOLPATH_CLEANED: Final = "toolpath.cleaned"
"""What the collector changed so that a span or invocation could be stored: attribute keys, and fields such as
``name`` or ``start_time`` (NUL characters and lone surrogates replaced by U+FFFD, NaN and infinite numbers
written as strings, values nested too deeply cut, times past the store's range clamped, ids and names over their
column's length shortened)."""
TOOLPATH_REBUILD_ERROR: Final = "toolpath.rebuild_error"
"""Invocation attribute: the error that kept the collector from reading this run's spans (the invocation then
holds only what its root span says)."""
NESTING_MARKER: Final = "…[nested too deeply]"

# GenAI events sent as OTLP logs (content capture EVENT_ONLY), joined to their spans by the collector
GEN_AI_OPERATION_DETAILS_EVENT: Final = "gen_ai.client.inference.operation.details"
GEN_AI_SYSTEM_MESSAGE_EVENT: Final = "gen_ai.system.message"
GEN_AI_USER_MESSAGE_EVENT: Final = "gen_ai.user.message"
GEN_AI_ASSISTANT_MESSAGE_EVENT: Final = "gen_ai.assistant.message"
GEN_AI_TOOL_MESSAGE_EVENT: Final = "gen_ai.tool.message"
GEN_AI_CHOICE_EVENT: Final = "gen_ai.choice"
EVENT_NAME: Final = "event.name"
"""A log record's event name, as older SDKs put it among its attributes."""
TOOLPATH_LOG_EVENT: Final = "toolpath.log_event"
"""On the record the collector keeps of a GenAI log event (a span under the span it belongs to): the event's name."""
TOOLPATH_LOG_EVENT_BODY: Final = "toolpath.log_event.body"
"""That record's event body, as JSON."""


def agent_span_name(agent: str) -> str:
    return f"{OP_INVOKE_AGENT} {agent}"


def tool_span_name(tool: str) -> str:
    return f"{OP_EXECUTE_TOOL} {tool}"
