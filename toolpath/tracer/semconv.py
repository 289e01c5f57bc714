"""Every span name and attribute key toolpath emits or reads, in one place (SPEC §2).

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
# gen_ai.evaluation.result events (online evaluation results)
GEN_AI_EVALUATION_NAME: Final = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"
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
ERROR_TYPE: Final = "error.type"
SESSION_ID: Final = "session.id"
"""Session id used by OpenInference and others; read as a fallback for the conversation id."""
SERVICE_NAME: Final = "service.name"

GEN_AI_WORKFLOW_NAME: Final = "gen_ai.workflow.name"

# Read from peers (collector input, SPEC §3)
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
OPENINFERENCE_SPAN_KIND: Final = "openinference.span.kind"
OI_TOOL_NAME: Final = "tool.name"
OI_AGENT_NAME: Final = "agent.name"
OI_INPUT_VALUE: Final = "input.value"
OI_INPUT_MIME_TYPE: Final = "input.mime_type"
OI_OUTPUT_VALUE: Final = "output.value"
OI_TOOL_CALLS_PREFIX: Final = "llm.output_messages.0.message.tool_calls."
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
"""JSON list of ``{"tool_name", "tool_input"}`` an agent function *returned* (Vertex custom-function shape).
The collector uses it only when no tool span was recorded under the agent span."""
TOOLPATH_TRUNCATED: Final = "toolpath.truncated"
"""Keys of attributes whose value was cut to the configured length."""

TRUNCATION_MARKER: Final = "…[truncated {dropped} chars]"


def agent_span_name(agent: str) -> str:
    return f"{OP_INVOKE_AGENT} {agent}"


def tool_span_name(tool: str) -> str:
    return f"{OP_EXECUTE_TOOL} {tool}"
