"""A multi-agent ADK app driven by scripted models (no network): a coordinator that asks an ``AgentTool``
(``order_lookup``, which calls ``find_order``) and transfers refunds to a sub-agent (``billing_agent``, which calls
``refund``). Every model response reports its token usage, so ADK counts it as a model call.

- :func:`build_coordinator`: the root agent (fresh scripted models each time).
- :func:`multi_evalset`: an ADK eval set (as a dict) of two cases, one per sub-agent.
"""

from __future__ import annotations

from typing import Any

from google.adk.agents import LlmAgent
from google.adk.tools.agent_tool import AgentTool

from tests.helpers.adk_agent import ScriptedModel, answer, call, calls, counting_model

WHERE = "Where is order 7?"
REFUND = "Refund order 7, please."
TOKENS = {"coordinator": (10, 1), "order_lookup": (5, 2), "billing_agent": (7, 3)}
"""(prompt, answer) tokens each agent's model reports per call."""


def find_order(order: int) -> dict[str, Any]:
    """Where an order is."""
    return {"order": order, "status": "shipped"}


def refund(order: int) -> dict[str, Any]:
    """Refund an order."""
    return {"order": order, "refunded": True}


def _model(agent: str, turns: dict[str, list[Any]]) -> ScriptedModel:
    return counting_model(agent, TOKENS[agent], turns)


def build_coordinator() -> LlmAgent:
    lookup = LlmAgent(
        name="order_lookup",
        description="Finds where an order is.",
        model=_model("order_lookup", {"order 7": [calls(call("find_order", order=7)), answer("Order 7 shipped.")]}),
        tools=[find_order],
    )
    billing = LlmAgent(
        name="billing_agent",
        description="Handles refunds.",
        model=_model("billing_agent", {REFUND: [calls(call("refund", order=7)), answer("Order 7 is refunded.")]}),
        tools=[refund],
    )
    return LlmAgent(
        name="coordinator",
        model=_model(
            "coordinator",
            {
                WHERE: [calls(call("order_lookup", request="order 7")), answer("It has shipped.")],
                REFUND: [calls(call("transfer_to_agent", agent_name="billing_agent"))],
            },
        ),
        tools=[AgentTool(agent=lookup)],
        sub_agents=[billing],
    )


def _turn(prompt: str, response: str, tool_uses: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "user_content": {"role": "user", "parts": [{"text": prompt}]},
        "final_response": {"role": "model", "parts": [{"text": response}]},
        "intermediate_data": {"tool_uses": tool_uses, "intermediate_responses": []},
    }


def multi_evalset() -> dict[str, Any]:
    return {
        "eval_set_id": "multi",
        "eval_cases": [
            {
                "eval_id": "where",
                "conversation": [
                    _turn(WHERE, "It has shipped.", [{"name": "order_lookup", "args": {"request": "order 7"}}])
                ],
                "session_input": {"app_name": "app", "user_id": "u", "state": {}},
            },
            {
                "eval_id": "refund",
                "conversation": [
                    _turn(
                        REFUND,
                        "Order 7 is refunded.",
                        [
                            {"name": "transfer_to_agent", "args": {"agent_name": "billing_agent"}},
                            {"name": "refund", "args": {"order": 7}},
                        ],
                    )
                ],
                "session_input": {"app_name": "app", "user_id": "u", "state": {}},
            },
        ],
    }
