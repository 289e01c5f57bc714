"""ADK 2.x's LLM-backed user simulator (``LlmBackedUserSimulator``), asking its model through toolpath's judge client.

The first user message is the scenario's ``starting_prompt``; after each agent turn the model is asked for the
next one, given the ``conversation_plan`` and the conversation so far (ADK's ``_summarize_conversation``: each
text as ``author: text``, tool calls and results only with ``include_function_calls``). The conversation ends when
the reply holds the stop signal ``</finished>`` (any case), or when ``max_allowed_invocations`` messages were sent
(the starting prompt counts; ``-1``: no limit). A reply with no text is an error of the case, as in ADK.

Every model call goes through a :class:`~toolpath.judges.client.Judge` (its retries, budget and cache):
the request is keyed by the model, its generation config, the prompt — which holds the conversation so far — and
the run, so a re-run with an agent that answers the same replays the same user turns from the store's cache
(``--fresh`` asks again). Each call is traced as a ``chat`` span of its own trace (never under the agent's),
in the conversation's session.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from toolpath.errors import ConfigError, InternalSignal
from toolpath.evaluation.evalsets.adk_models import STOP_SIGNAL, LlmBackedUserSimulatorConfig
from toolpath.evaluation.evalsets.simulation.prompts import render_instructions
from toolpath.judges.client import EMPTY_REPLY, Ask, Judge, JudgeReply, JudgeRequest
from toolpath.model import ToolCall
from toolpath.tracer import spans


class SimulatorStatus(StrEnum):
    """Why the user simulator gave a message or not: ADK's ``user_simulator.Status``, its values."""

    SUCCESS = "success"
    TURN_LIMIT_REACHED = "turn_limit_reached"
    STOP_SIGNAL_DETECTED = "stop_signal_detected"
    NO_MESSAGE_GENERATED = "no_message_generated"
    """ADK's; toolpath fails the case instead (:class:`SimulatorError`)."""


SUCCESS, STOP_SIGNAL_DETECTED, TURN_LIMIT_REACHED = (
    SimulatorStatus.SUCCESS,
    SimulatorStatus.STOP_SIGNAL_DETECTED,
    SimulatorStatus.TURN_LIMIT_REACHED,
)
"""ADK's ``Status`` of ``get_next_user_message``."""
CACHE_NAMESPACE = "usersim"
"""The simulated user's entries in the store's judge cache (``judge_cache`` keys ``usersim:…``)."""


class SimulatorError(InternalSignal):
    """The simulator's model gave no message (ADK raises ``RuntimeError``): the case's run fails with it."""


@dataclass(frozen=True)
class Scenario:
    """ADK's ``ConversationScenario``."""

    starting_prompt: str
    conversation_plan: str

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Scenario:
        return cls(str(data["starting_prompt"]), str(data["conversation_plan"]))


@dataclass
class Exchange:
    """One turn as the simulator reads it: the user's text and what the agent did and said."""

    prompt: str
    agent: str
    response: str | None
    intermediate_responses: Sequence[tuple[str, str]] = ()
    tool_calls: Sequence[ToolCall] = ()


@dataclass
class NextUserMessage:
    status: SimulatorStatus
    text: str | None = None


def conversation_history(exchanges: Sequence[Exchange], include_function_calls: bool = False) -> str:
    """The conversation as ADK's simulator sees it: ``user: …`` and ``<agent>: …`` lines, blank-line separated."""
    lines: list[str] = []
    for turn in exchanges:
        lines.append(f"user: {turn.prompt}")
        lines.extend(f"{author}: {text}" for author, text in turn.intermediate_responses if text)
        if include_function_calls:
            for call in turn.tool_calls:
                lines.append(f"{turn.agent} called tool '{call.name}' with args: {call.args}")
                lines.append(f"Tool '{call.name}' returned: {call.result}")
        if turn.response:
            lines.append(f"{turn.agent}: {turn.response}")
    return "\n\n".join(lines)


@dataclass
class UserSimulator:
    """One simulated user for one run of one scenario (ADK: one simulator per eval case)."""

    config: LlmBackedUserSimulatorConfig
    scenario: Scenario
    judge: Judge
    session_id: str | None = None
    run: int = 0
    """Which run of the case this is: runs of one scenario are cached apart, so ``--runs`` shows their spread."""
    sent: int = field(default=0, init=False)

    def next_message(self, exchanges: Sequence[Exchange]) -> NextUserMessage:
        limit = self.config.max_allowed_invocations
        if 0 <= limit <= self.sent:
            return NextUserMessage(TURN_LIMIT_REACHED)
        text: str | None
        if self.sent == 0:
            text, error = self.scenario.starting_prompt, None
        else:
            text, error = self._ask(exchanges)
        self.sent += 1
        if text and STOP_SIGNAL.lower() in text.lower():
            return NextUserMessage(STOP_SIGNAL_DETECTED)
        if text:
            return NextUserMessage(SUCCESS, text)
        raise SimulatorError(f"the user simulator ({self.config.model}) gave no message: {error}")

    def request(self, exchanges: Sequence[Exchange]) -> JudgeRequest:
        prompt = render_instructions(
            self.scenario.conversation_plan,
            conversation_history(exchanges, self.config.include_function_calls),
            STOP_SIGNAL,
            self.config.custom_instructions,
        )
        generation = self.config.model_configuration.model_dump(mode="json", exclude_none=True)
        return JudgeRequest(
            prompt,
            self.config.model,
            sample=self.run,
            json_output=False,
            config=json.dumps(generation, sort_keys=True),
            namespace=CACHE_NAMESPACE,
        )

    def _ask(self, exchanges: Sequence[Exchange]) -> tuple[str | None, str | None]:
        request = self.request(exchanges)
        span = spans.simulated_user_call(request.model, self.session_id, self.sent + 1, request.prompt)

        async def work(ask: Ask) -> JudgeReply:
            return await ask(request)

        reply: JudgeReply = self.judge.run(work)
        error = reply.error or (None if reply.text else EMPTY_REPLY)
        spans.end_simulated_user_call(span, reply.text, error, reply.input_tokens, reply.output_tokens, reply.cached)
        return reply.text, error


def simulator_config(config: Any) -> LlmBackedUserSimulatorConfig:
    """The LLM-backed simulator's config: ADK's defaults for ``None``; the audio simulator is refused."""
    if config is None:
        return LlmBackedUserSimulatorConfig()
    if not isinstance(config, LlmBackedUserSimulatorConfig):
        kind = getattr(config, "type", type(config).__name__)
        raise ConfigError(f"user_simulator_config: type {kind!r} is not supported (toolpath simulates 'llm_backed')")
    return config
